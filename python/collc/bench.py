"""python -m collc.bench: collc.torch's ops against torch.distributed (NCCL) and torch's symmetric
memory, one process per rank, in CUDA graphs, with nccl-tests' conventions:

    torchrun --nproc_per_node=2 -m collc.bench -b 1K -e 64M -f 2 --op all_reduce
    torchrun --nproc_per_node=2 -m collc.bench --host-overhead

Sizes (-b/-e/-f) are bytes as nccl-tests counts them (the whole output of an all-gather, the whole
input of a reduce-scatter or all-to-all). Each row times graphs of --calls back-to-back calls,
replayed --iters times, after one call checked against the exact result; algbw = size / time,
busbw = algbw times nccl-tests' factor for the op (2(n-1)/n for all-reduce, (n-1)/n for
all-gather, reduce-scatter and all-to-all, 1 for broadcast). NCCL's rows need a GPU per rank;
with COLLC_SHARE_GPU=1 (ranks sharing a GPU, for correctness only) only collc runs and its times
mean nothing.

--host-overhead measures what an eager call costs the host (no GPU wait): comm.all_reduce on the
process's path (collc.torch.host_path: the C++ kernels, "native", or "python"; with the C++ path,
the Python path's functions too, side by side), through torch's dispatcher, and in the checking
mode (whose difference is the check's cost per call), against dist.all_reduce (NCCL; where ranks
share a GPU, in a group of rank 0 alone), on a small tensor; then the parts of a call, each
timed alone (collc_launch through ctypes, the output's allocation, the stream lookup, the
checks). Rank 0 prints.
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

from ._errors import Error

_DTYPES = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float16": torch.float16,
           "f16": torch.float16, "float32": torch.float32, "f32": torch.float32}
_SHORT = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}
_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")


def parse_size(text):
    """'64M' -> 67108864 (K, M, G: powers of 1024)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def sizes(begin, end, factor):
    out, size = [], begin
    while size <= end:
        out.append(size)
        size *= factor
    return out


def bus_factor(op, n):
    return {"all_reduce": 2 * (n - 1) / n, "broadcast": 1.0}.get(op, (n - 1) / n)


def per_rank_count(op, size, elem, n):
    """Elements each rank passes for a row of `size` bytes (nccl-tests' size)."""
    if op == "all_gather":
        return max(1, size // elem // n)
    if op in ("reduce_scatter", "all_to_all"):
        return max(1, size // elem // n) * n
    return max(1, size // elem)


class Backends:
    """The ways one call is made: collc, NCCL (torch.distributed) and torch's symmetric memory."""

    def __init__(self, args, nranks, group_backend):
        self.nranks = nranks
        self.nccl = group_backend == "nccl" and not args.no_nccl
        self.symm = None
        if self.nccl and not args.no_symm:
            self.symm = _symmetric_memory()

    def call(self, backend, op, comm, x):
        if backend == "collc":
            return getattr(comm, op)(x)
        if backend == "nccl":
            if op == "all_reduce":
                dist.all_reduce(x)
                return x
            if op == "all_gather":
                out = x.new_empty((self.nranks * x.numel(),))
                dist.all_gather_into_tensor(out, x)
                return out
            if op == "reduce_scatter":
                out = x.new_empty((x.numel() // self.nranks,))
                dist.reduce_scatter_tensor(out, x)
                return out
            if op == "broadcast":
                dist.broadcast(x, src=0)
                return x
            out = torch.empty_like(x)
            dist.all_to_all_single(out, x)
            return out
        return self.symm(x)


def _symmetric_memory():
    """torch's symmetric-memory one-shot all-reduce as a function of a tensor, or None where this
    torch has none (its API has moved between releases)."""
    try:
        import torch.distributed._symmetric_memory as symm_mem
        name = dist.group.WORLD.group_name
        if hasattr(symm_mem, "enable_symm_mem_for_group"):
            symm_mem.enable_symm_mem_for_group(name)
        buffers = {}

        def all_reduce(x):
            key = (x.numel(), x.dtype)
            if key not in buffers:
                buffer = symm_mem.empty(x.numel(), dtype=x.dtype, device=x.device)
                symm_mem.rendezvous(buffer, name)
                buffers[key] = buffer
            buffers[key].copy_(x)
            return torch.ops.symm_mem.one_shot_all_reduce(buffers[key], "sum", name)

        return all_reduce
    except Exception as error:  # not in this build of torch
        print(f"# torch symmetric memory: not available ({type(error).__name__}: {error})",
              file=sys.stderr)
        return None


def integers(count, dtype, rank, salt=0):
    j = torch.arange(count, device="cuda", dtype=torch.int64)
    return ((j * 3 + rank * 5 + salt) % 9 - 4).to(dtype)


def expected(op, count, dtype, n, rank):
    inputs = [integers(count, torch.float64, r) for r in range(n)]
    if op == "all_reduce":
        return sum(inputs)
    if op == "all_gather":
        return torch.cat(inputs)
    part = count // n
    if op == "reduce_scatter":
        return sum(inputs)[rank * part:(rank + 1) * part]
    if op == "broadcast":
        return inputs[0]
    return torch.cat([t[rank * part:(rank + 1) * part] for t in inputs])


def time_row(backends, backend, op, comm, x, calls, iters):
    """us per call, from graphs of `calls` back-to-back calls replayed `iters` times."""
    inputs = [x.clone() for _ in range(calls)]
    backends.call(backend, op, comm, inputs[0])  # ready outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for t in inputs:
            backends.call(backend, op, comm, t)
    graph.replay()
    torch.cuda.synchronize()
    dist.barrier()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        graph.replay()
    stop.record()
    torch.cuda.synchronize()
    del graph
    return start.elapsed_time(stop) * 1e3 / (iters * calls)


def run_sizes(args, comm, backends, rank, n):
    dtype = _DTYPES[args.dtype]
    elem = torch.tensor([], dtype=dtype).element_size()
    names = ["collc"] + (["nccl"] if backends.nccl else []) + (
        ["symm"] if backends.symm and args.op == "all_reduce" else [])
    if rank == 0:
        print(f"# {args.op} {_SHORT[dtype]} sum, {n} ranks, graphs of {args.calls} calls x "
              f"{args.iters} replays; us per call" +
              ("; ranks share a GPU: times mean nothing" if args.shared else ""))
        print(f"#{'size':>11} {'count':>12} {'type':>5} " +
              " ".join(f"{b + ' us':>10} {'algbw':>7} {'busbw':>7}" for b in names))
    for size in sizes(parse_size(args.b), parse_size(args.e), args.f):
        count = per_rank_count(args.op, size, elem, n)
        row = []
        for backend in names:
            x = integers(count, dtype, rank)
            got = backends.call(backend, args.op, comm, x.clone())
            torch.cuda.synchronize()
            if not torch.equal(got.double(), expected(args.op, count, dtype, n, rank)):
                raise Error(f"{backend} {args.op} of {count} elements is wrong on rank {rank}")
            us = time_row(backends, backend, args.op, comm, x, args.calls, args.iters)
            algbw = size / us / 1e3
            row.append(f"{us:>10.2f} {algbw:>7.2f} {algbw * bus_factor(args.op, n):>7.2f}")
        if rank == 0:
            print(f"{size:>12} {count:>12} {_SHORT[dtype]:>5} " + " ".join(row), flush=True)


def _median_us(args, call):
    """Median host microseconds per call over args.rounds rounds of args.host_calls calls, every
    rank in step (a barrier before each round: the calls are collective)."""
    for _ in range(10):
        call()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(args.rounds):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.host_calls):
            call()
        rounds.append((time.perf_counter() - start) / args.host_calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(rounds)


def _host_parts(comm, x):
    """The parts of one eager call, each timed alone: what the Python path spends its time on
    (its checks, the output's allocation, the stream lookup, the compile check) and the launch
    itself through ctypes (collc_launch with its arguments ready: the C side's cost plus ctypes')."""
    import collc.torch as ct
    instance = comm._instance("allreduce", "bfloat16", "sum")
    out = torch.empty_like(x)
    stream = comm._current_stream(comm.device)
    launch, handle, rank = comm._launch_function, instance._handle, comm.rank
    inp, outp, count = x.data_ptr(), out.data_ptr(), x.numel()
    return {
        "collc_launch through ctypes": lambda: launch(handle, rank, inp, outp, None, 0, count,
                                                      stream),
        "torch.empty_like(x)": lambda: torch.empty_like(x),
        "the current stream (Python)": lambda: comm._current_stream(comm.device),
        "the refusal checks (Python)": lambda: comm._refusal(x, "allreduce"),
        "the compile check (Python, _eager)": ct._eager,
    }


def host_overhead(args, comm, checking, backends, rank):
    """Median host microseconds per eager call over rounds of back-to-back calls: comm.all_reduce
    on this process's path (collc.torch.host_path), the Python path's functions beside it where
    the C++ path runs, through torch's dispatcher, the checking mode, NCCL; then the parts."""
    import collc.torch as ct
    x = integers(1024, torch.bfloat16, rank)
    path = ct.host_path
    ways = {f"comm.all_reduce(x) [{path}]": lambda: comm.all_reduce(x),
            f"comm.all_reduce(x, out=x) [{path}]": lambda: comm.all_reduce(x, out=x)}
    if path == "native":
        # The Python path's kernels, called as its eager methods call them: one process, the
        # same instance, stream and tensor, so the two rows differ only in the path.
        ways["all_reduce [python]"] = lambda: ct._all_reduce_impl(comm, x, "sum")
        ways["all_reduce, in place [python]"] = lambda: ct._all_reduce_inplace_impl(comm, x, "sum")
    ways["torch.ops.collc.all_reduce"] = lambda: torch.ops.collc.all_reduce(x, comm.handle, "sum")
    ways["comm.all_reduce, checking mode"] = lambda: checking.all_reduce(x)
    if backends.nccl:
        ways["dist.all_reduce(x)"] = lambda: dist.all_reduce(x)
    elif args.shared:
        # Ranks that share a GPU have no NCCL group (NCCL refuses two ranks on one GPU): NCCL's
        # host cost is measured in a group of rank 0 alone. Every rank runs the same rounds (their
        # barriers), the others with nothing to call.
        solo = dist.new_group([0], backend="nccl")
        ways["dist.all_reduce(x), NCCL group of 1"] = (
            (lambda: dist.all_reduce(x, group=solo)) if rank == 0 else (lambda: None))
    results = {name: _median_us(args, call) for name, call in ways.items()}
    parts = {name: _median_us(args, call) for name, call in _host_parts(comm, x).items()}
    if rank == 0:
        reason = f" ({ct.native_reason})" if ct.native_reason else ""
        print(f"# host cost per eager call (median of {args.rounds} rounds of {args.host_calls} "
              f"calls, 1024 bf16 elements, no GPU wait); this process runs the {path} path{reason}")
        for name, us in results.items():
            print(f"{name:<40} {us:8.2f} us")
        base = results[f"comm.all_reduce(x) [{path}]"]
        print(f"{'checking mode costs':<40} {results['comm.all_reduce, checking mode'] - base:8.2f}"
              f" us per call")
        print("# the parts of a call, each alone")
        for name, us in parts.items():
            print(f"{name:<40} {us:8.2f} us")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m collc.bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("-b", default="1K", help="smallest size in bytes (1K, 4M, ...)")
    parser.add_argument("-e", default="64M", help="largest size in bytes")
    parser.add_argument("-f", type=int, default=2, help="factor between sizes")
    parser.add_argument("--op", choices=_OPS, default="all_reduce")
    parser.add_argument("--dtype", choices=sorted(_DTYPES), default="bfloat16")
    parser.add_argument("--calls", type=int, default=20, help="calls captured per graph")
    parser.add_argument("--iters", type=int, default=20, help="replays timed per row")
    parser.add_argument("--no-nccl", action="store_true")
    parser.add_argument("--no-symm", action="store_true")
    parser.add_argument("--host-overhead", action="store_true")
    parser.add_argument("--host-calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    if args.f < 2 or parse_size(args.b) < 1 or parse_size(args.e) < parse_size(args.b):
        parser.error("need 1 <= -b <= -e and -f >= 2")

    rank, n = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", rank))
    args.shared = os.environ.get("COLLC_SHARE_GPU") == "1" and torch.cuda.device_count() < n
    if n < 2:
        parser.error("run it with 2 or more ranks: torchrun --nproc_per_node=2 -m collc.bench")
    torch.cuda.set_device(local % torch.cuda.device_count())
    group_backend = "gloo" if args.shared else "nccl"
    dist.init_process_group(group_backend)
    import collc.torch as ct
    largest = max(parse_size(args.e), 1 << 20)
    # The largest instance: a direct all-gather's scratch holds every rank's part, in copies.
    comm = ct.Communicator(None, max_bytes=largest, share_gpu=args.shared,
                           heap_bytes=max(1 << 30, (4 * n + 4) * largest))
    backends = Backends(args, n, group_backend)
    if args.host_overhead:
        checking = ct.Communicator(None, max_bytes=1 << 20, share_gpu=args.shared,
                                   check_calls=True)
        host_overhead(args, comm, checking, backends, rank)
        checking.synchronize()
        checking.close()
    else:
        run_sizes(args, comm, backends, rank, n)
    comm.synchronize()
    comm.close()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
