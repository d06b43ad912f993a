"""Which stdlib AllReduce a communicator runs, from its largest call and its rank count, and the
largest call a communicator takes by default."""

from ._compiled import spec_ranks

# Up to this many bytes per call, one-shot: its one flight beats two-shot's two.
ONESHOT_LIMIT = 1 << 20

# The largest call by default up to DEFAULT_WIDE_CALLS_RANKS ranks (the two-shot takes it).
TWOSHOT_DEFAULT_MAX_BYTES = 8 << 20

# The most ranks at which the default is TWOSHOT_DEFAULT_MAX_BYTES; past them ONESHOT_LIMIT. The
# default heap holds eight one-shot instances at max_bytes, each with a slot per rank: 3 GiB a
# rank at 24 ranks and 8 MiB, 8 GiB at 64.
DEFAULT_WIDE_CALLS_RANKS = 24


def _twoshot_declares(nranks):
    low, high = spec_ranks("allreduce_twoshot")
    return low <= nranks <= high


def allreduce_spec(max_bytes, nranks):
    """One-shot up to ONESHOT_LIMIT bytes per call; above it two-shot, where the two-shot declares
    `nranks` (it declares every count, 2..72), else one-shot: never a spec the rank count is not
    proved for."""
    if max_bytes <= ONESHOT_LIMIT:
        return "allreduce_oneshot"
    return "allreduce_twoshot" if _twoshot_declares(nranks) else "allreduce_oneshot"


def default_max_bytes(nranks):
    """A communicator's max_bytes where the caller gives none: 8 MiB up to 24 ranks (where the
    two-shot declares `nranks`), else the one-shot's range, ONESHOT_LIMIT. The default heap holds
    eight one-shot instances at max_bytes, and a one-shot's scratch grows with nranks: at 8 MiB
    it would hold 8 GiB a rank at 64 ranks, 9 GiB at 72. So past 24 ranks larger calls are left
    to NCCL (should_use is false) unless the caller passes max_bytes (the two-shot takes them)."""
    if nranks <= DEFAULT_WIDE_CALLS_RANKS and _twoshot_declares(nranks):
        return TWOSHOT_DEFAULT_MAX_BYTES
    return ONESHOT_LIMIT
