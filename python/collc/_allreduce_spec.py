"""Which stdlib AllReduce a communicator runs, from its largest call and its rank count."""

from ._compiled import spec_ranks

# Up to this many bytes per call, one-shot: its one flight beats two-shot's two.
ONESHOT_LIMIT = 1 << 20


def allreduce_spec(max_bytes, nranks):
    """One-shot up to ONESHOT_LIMIT bytes per call; above it two-shot, where the two-shot declares
    `nranks` (it stops at 15 ranks, see its spec), else one-shot: never a spec the rank count is
    not proved for."""
    if max_bytes <= ONESHOT_LIMIT:
        return "allreduce_oneshot"
    low, high = spec_ranks("allreduce_twoshot")
    return "allreduce_twoshot" if low <= nranks <= high else "allreduce_oneshot"
