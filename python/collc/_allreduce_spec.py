"""Which stdlib AllReduce a communicator runs, from its largest call and its rank count, and the
largest call a communicator takes by default."""

from ._compiled import spec_ranks

# Up to this many bytes per call, one-shot: its one flight beats two-shot's two.
ONESHOT_LIMIT = 1 << 20

# The largest call by default where the two-shot declares the rank count.
TWOSHOT_DEFAULT_MAX_BYTES = 8 << 20


def _twoshot_declares(nranks):
    low, high = spec_ranks("allreduce_twoshot")
    return low <= nranks <= high


def allreduce_spec(max_bytes, nranks):
    """One-shot up to ONESHOT_LIMIT bytes per call; above it two-shot, where the two-shot declares
    `nranks` (it stops at 24 ranks, see its spec), else one-shot: never a spec the rank count is
    not proved for."""
    if max_bytes <= ONESHOT_LIMIT:
        return "allreduce_oneshot"
    return "allreduce_twoshot" if _twoshot_declares(nranks) else "allreduce_oneshot"


def default_max_bytes(nranks):
    """A communicator's max_bytes where the caller gives none: 8 MiB where the two-shot declares
    `nranks`, else the one-shot's range, ONESHOT_LIMIT. Past it the one-shot would send
    (nranks - 1) times the call's bytes from every rank, where the two-shot sends about twice
    them, and its scratch, as the default heap's, grows the same way (eight one-shot instances of
    8 MiB hold 9 GiB a rank at 72 ranks); so larger calls are left to NCCL (should_use is false)."""
    return TWOSHOT_DEFAULT_MAX_BYTES if _twoshot_declares(nranks) else ONESHOT_LIMIT
