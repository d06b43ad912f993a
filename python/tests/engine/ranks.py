"""The engine's path, one rank per process: collc.torch over a gloo group, as an inference engine
calls it, every result checked. Run it under torchrun (or spawn.py, which the fault scenarios
need: torchrun stops every rank when one dies):

    COLLC_SHARE_GPU=1 torchrun --nproc_per_node=2 python/tests/engine/ranks.py all

COLLC_SHARE_GPU=1 puts every rank on GPU 0 (LOCAL_RANK modulo the visible GPUs) and makes the
Communicators with share_gpu=True: correctness only, each flag exchange waits for a time slice.
Each rank prints "PASS name: what was checked", "FAIL name: why" or "SKIP name: why" and exits 1
if anything failed.

--reduced (for 3 and more ranks, to keep the GPU time short: every rank count JITs its own kernels)
runs max and min for float32 only, 200 graph replays, and leaves `compile` out of `all`.

Scenarios (`all` runs every one but `kill` and `wide`):
  ops        every op, dtype, count (1, 7, 4097, 65541, 1M+3) and operator, in place too, against
             gloo on CPU copies (float64 for the fused op); AllReduce through both a two-shot and
             a one-shot communicator, alive at once
  graphs     1,000 replays (200 --reduced) of one CUDA graph of collc ops, fresh inputs each
             time, all checked
  compile    torch.compile(fullgraph=True) of a block that calls the ops: same result as eager
  counts     counts that change from call to call
  streams    calls issued on two streams, the same op on both, without synchronizing
  recreate   a Communicator closed and made again, three times
  mismatch   the checking mode: calls whose count, operator or dtype differ between ranks
  bootstrap  Communicators whose settings differ between ranks
  quant      fused_add_rms_norm_quant, FP8 with a static scale and per-token FP8 (a zero row
             among them: the scale's floor), eagerly for every dtype and 1, 7 and 32 rows, then
             100 replays of a CUDA graph of each, fresh inputs each time, against float64 rounded
             to E4M3 (within one code where float rounding may differ); per-token scales within
             a relative 1e-5 of float64's (per-token for bfloat16 only with --reduced). Then
             NVFP4 in both scale layouts (swizzled, linear), eagerly for every dtype at 1, 7,
             32 and 130 rows, and 7 and 128 rows of 1040 (bfloat16), then 100 graph replays of
             each layout: every block scale and element bit for bit against float64
             (collc._nvfp4), except where the float64 argument lies within the kernel's float
             error of a rounding boundary (either side accepted, counted); the swizzled padding 0
             (NVFP4 for bfloat16 only with --reduced; SKIP where the stdlib has no NVFP4 spec)
  refusals   every refusal (type, layout, alignment, size, split, op, root, the fused op's
             buffers, NVFP4's rows, global scale and scale_layout, a closed communicator) raises
             collc.Error with the Python path's words
  kill       the last rank kills itself in the middle of calls; the others must raise
  wide       for many ranks (16 and more; any count from 2): a Communicator of default settings
             (its max_bytes, 1 MiB past the two-shot's ranks, and should_use of 1M+3 float32
             checked; one AllReduce); then one of max_bytes=4 MiB: AllReduce sum of bfloat16 and
             float32 at 1, 4097 and 1M+3 elements, the largest in place too, against gloo on CPU
             copies; each asserts and prints the spec its AllReduce runs (above 1 MiB: the
             two-shot where it declares the rank count, else the one-shot); then a CUDA graph of
             3 calls replayed 5 times with fresh inputs, checked: 24 calls, since each flag
             exchange of time-sliced ranks waits for every rank's time slice (scripts/gpu-check
             engine-wide runs it at 16 ranks)

COLLC_HOST_PATH=python or =native picks the path of the ops (docs/python.md); each rank prints
the path it runs, and --expect-host-path fails a run that runs another.
"""

import argparse
import os
import random
import signal
import sys
import time

import torch
import torch.distributed as dist

import collc
import collc.torch as ct
from collc import _nvfp4 as nvfp4

OPS = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
COUNTS = (1, 7, 4097, 65541, 1_000_003)
BIG = 4 << 20      # bytes per call: the largest count in float32
SMALL = 1 << 20    # one-shot AllReduce up to here
HIDDEN = 4096      # Llama-3-8B's hidden size, the fused op's row
# fused_add_rms_norm_quant's quantized outputs, each checked: the FP8 ones alike, then NVFP4.
FP8_QUANTS = ("fp8", "fp8_per_token")


class Ranks:
    def __init__(self):
        self.rank = int(os.environ["RANK"])
        self.nranks = int(os.environ["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_RANK", self.rank))
        self.share = os.environ.get("COLLC_SHARE_GPU") == "1"
        gpus = torch.cuda.device_count()
        self.device = local % gpus if self.share else local
        torch.cuda.set_device(self.device)
        dist.init_process_group("gloo", rank=self.rank, world_size=self.nranks)
        self.failed = False
        self.reduced = False

    def say(self, verdict, name, text):
        print(f"[rank {self.rank}] {verdict} {name}: {text}", flush=True)
        self.failed |= verdict == "FAIL"

    def comm(self, max_bytes=SMALL, **options):
        # Room for every op, type and operator a scenario uses (the default holds eight).
        options.setdefault("heap_bytes", 512 << 20)
        return ct.Communicator(None, max_bytes=max_bytes, share_gpu=self.share, **options)


def values(rank, count, dtype, salt):
    """Rank `rank`'s input: small integers, so that sums over 8 ranks are exact in every dtype."""
    j = torch.arange(count, device="cuda", dtype=torch.int64)
    return ((j * 7 + salt * 13 + rank * 5) % 17 - 8).to(dtype)


class Tally:
    """Counts checked calls and keeps the first few mismatches."""

    def __init__(self):
        self.calls = 0
        self.wrong = []

    def same(self, what, got, want):
        self.calls += 1
        got = got.detach().cpu().double()
        want = want.detach().cpu().double()
        if got.shape != want.shape:
            self.wrong.append(f"{what}: shape {tuple(got.shape)}, expected {tuple(want.shape)}")
        elif not torch.equal(got, want):
            bad = (got != want).nonzero()[0].item()
            self.wrong.append(f"{what}: element {bad} is {got[bad].item()}, expected "
                              f"{want[bad].item()} ({int((got != want).sum())} wrong)")

    def close(self, what, got, want, rtol, atol):
        self.calls += 1
        got = got.detach().cpu().double()
        err = (got - want).abs() - (atol + rtol * want.abs())
        if err.max() > 0:
            bad = int(err.argmax())
            self.wrong.append(f"{what}: element {bad} is {got.view(-1)[bad].item()}, expected "
                              f"{want.view(-1)[bad].item()}")

    def report(self, ranks, name, extra=""):
        if self.wrong:
            ranks.say("FAIL", name, f"{len(self.wrong)} of {self.calls} calls wrong; first: "
                      + "; ".join(self.wrong[:3]))
        else:
            ranks.say("PASS", name, f"{self.calls} calls checked{extra}")


def gloo_all_reduce(x, op):
    want = x.detach().cpu().float()
    dist.all_reduce(want, op=OPS[op])
    return want


def gloo_all_gather(x):
    mine = x.detach().cpu().float()
    parts = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, mine)
    return parts


def scenario_ops(ranks):
    n, r = ranks.nranks, ranks.rank
    operators = (lambda dtype: OPS if not ranks.reduced or dtype == torch.float32 else ("sum",))
    tally = Tally()
    start = time.monotonic()
    big = ranks.comm(BIG, heap_bytes=4 << 30)
    small = ranks.comm(SMALL)  # alive beside `big`: two Communicators
    for dtype in DTYPES:
        for count in COUNTS:
            salt = count % 97
            x = values(r, count, dtype, salt)
            tag = f"{str(dtype)[6:]} n={count}"
            for op in operators(dtype):
                want = gloo_all_reduce(x, op)
                tally.same(f"all_reduce {op} {tag}", big.all_reduce(x, op=op), want)
                inplace = x.clone()
                big.all_reduce(inplace, op=op, out=inplace)
                tally.same(f"all_reduce {op} in place {tag}", inplace, want)
                if count * x.element_size() <= SMALL:
                    tally.same(f"one-shot all_reduce {op} {tag}", small.all_reduce(x, op=op), want)
            tally.same(f"all_gather {tag}", big.all_gather(x), torch.cat(gloo_all_gather(x)))
            wide = values(r, count * n, dtype, salt + 1)
            for op in operators(dtype):
                want = gloo_all_reduce(wide, op)[r * count:(r + 1) * count]
                tally.same(f"reduce_scatter {op} {tag}", big.reduce_scatter(wide, op=op), want)
            roots = (0, n - 1) if dtype == torch.float32 else (n - 1,)
            for root in roots:
                want = x.detach().cpu().float()
                dist.broadcast(want, src=root)
                tally.same(f"broadcast root {root} {tag}", big.broadcast(x, root=root), want)
            for op in operators(dtype):
                want = x.detach().cpu().float()
                dist.reduce(want, dst=n - 1, op=OPS[op])
                got = big.reduce(x, root=n - 1, op=op)
                if r == n - 1:
                    tally.same(f"reduce {op} root {n - 1} {tag}", got, want)
            parts = gloo_all_gather(wide)
            want = torch.cat([p[r * count:(r + 1) * count] for p in parts])
            tally.same(f"all_to_all {tag}", big.all_to_all(wide), want)
        for rows in (1, 7, 32):
            x = values(r, rows * HIDDEN, dtype, rows)
            residual = values(r + 3, rows * HIDDEN, dtype, rows + 1)
            weight = (values(0, HIDDEN, torch.float32, 5) / 8 + 1).to(dtype)
            out, residual_out = big.fused_add_rms_norm(x, residual, weight)
            total = x.detach().cpu().double()
            dist.all_reduce(total)
            want_residual = (total + residual.cpu().double()).view(rows, HIDDEN)
            rms = (want_residual.pow(2).mean(dim=1, keepdim=True) + 1e-6).sqrt()
            want_out = want_residual / rms * weight.cpu().double()
            tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
            tag = f"{str(dtype)[6:]} {rows} rows of {HIDDEN}"
            tally.same(f"fused_add_rms_norm residual {tag}", residual_out,
                       want_residual.reshape(-1))
            tally.close(f"fused_add_rms_norm out {tag}", out, want_out.reshape(-1), tol, tol)
    big.synchronize()
    small.synchronize()
    big.close()
    small.close()
    tally.report(ranks, "ops", f" against gloo/float64, {time.monotonic() - start:.1f} s")


def scenario_graphs(ranks, replays=1000):
    n, r = ranks.nranks, ranks.rank
    comm = ranks.comm(SMALL)
    count = 4097
    x16 = values(r, count, torch.bfloat16, 0)
    x32 = values(r, count, torch.float32, 0)
    comm.all_reduce(x16)  # first calls outside the capture: they make the kernels ready
    comm.all_gather(x32)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        summed = comm.all_reduce(x16)
        gathered = comm.all_gather(x32)
    tally = Tally()
    start = time.monotonic()
    for i in range(replays):
        x16.copy_(values(r, count, torch.bfloat16, i))
        x32.copy_(values(r, count, torch.float32, i + 1))
        graph.replay()
        want_sum = sum(values(q, count, torch.float64, i) for q in range(n))
        want_gather = torch.cat([values(q, count, torch.float64, i + 1) for q in range(n)])
        tally.calls += 2
        if not torch.equal(summed.double(), want_sum):
            tally.wrong.append(f"replay {i}: all_reduce wrong")
        if not torch.equal(gathered.double(), want_gather):
            tally.wrong.append(f"replay {i}: all_gather wrong")
    comm.synchronize()
    seconds = time.monotonic() - start
    del graph
    comm.close()
    tally.report(ranks, "graphs", f" in {replays} replays, {seconds:.1f} s "
                 f"({seconds / replays * 1e3:.2f} ms per replay of 2 calls)")


def scenario_compile(ranks):
    r = ranks.rank
    comm = ranks.comm(SMALL)
    rows = 4
    x = values(r, rows * HIDDEN, torch.bfloat16, 3)
    residual = values(r, rows * HIDDEN, torch.bfloat16, 4)
    weight = torch.ones(HIDDEN, device="cuda", dtype=torch.bfloat16)

    def block(x, residual, weight):
        h = comm.all_reduce(x * 2)
        out, res = comm.fused_add_rms_norm(h, residual, weight)
        return comm.all_gather(res) + 1, out

    eager = block(x, residual, weight)
    try:
        compiled = torch.compile(block, fullgraph=True)
        traced = compiled(x, residual, weight)
    except Exception as error:  # a graph break raises with fullgraph=True
        ranks.say("FAIL", "compile", f"torch.compile(fullgraph=True) failed: {error!r}"[:2000])
        comm.close()
        return
    tally = Tally()
    tally.same("all_gather(residual) + 1", traced[0], eager[0])
    tally.same("fused out", traced[1], eager[1])
    comm.synchronize()
    comm.close()
    tally.report(ranks, "compile", " (fullgraph=True: no graph break; equal to eager)")


def scenario_counts(ranks, calls=60):
    r, n = ranks.rank, ranks.nranks
    comm = ranks.comm(SMALL)
    pick = random.Random(31)  # the same sequence on every rank
    tally = Tally()
    for i in range(calls):
        count = pick.randint(1, 70000)
        kind = pick.choice(("all_reduce", "all_gather", "reduce_scatter", "broadcast"))
        dtype = pick.choice(DTYPES)
        x = values(r, count, dtype, i)
        if kind == "all_reduce":
            tally.same(f"#{i} all_reduce n={count}", comm.all_reduce(x), gloo_all_reduce(x, "sum"))
        elif kind == "all_gather":
            tally.same(f"#{i} all_gather n={count}", comm.all_gather(x),
                       torch.cat(gloo_all_gather(x)))
        elif kind == "reduce_scatter":
            wide = values(r, count * n, dtype, i)
            want = gloo_all_reduce(wide, "sum")[r * count:(r + 1) * count]
            tally.same(f"#{i} reduce_scatter n={count}", comm.reduce_scatter(wide), want)
        else:
            want = x.detach().cpu().float()
            dist.broadcast(want, src=0)
            tally.same(f"#{i} broadcast n={count}", comm.broadcast(x, root=0), want)
    comm.synchronize()
    comm.close()
    tally.report(ranks, "counts", " with a new count each call")


def scenario_streams(ranks, calls=24):
    r, n = ranks.rank, ranks.nranks
    comm = ranks.comm(SMALL)
    count = 65541
    inputs = [values(r, count, torch.bfloat16, i) for i in range(calls)]
    comm.all_reduce(inputs[0])
    comm.all_gather(inputs[0])
    torch.cuda.synchronize()
    streams = (torch.cuda.Stream(), torch.cuda.Stream())
    outputs = []
    # The same op (one kernel, one set of flags) alternately on two streams, and another op
    # between, with nothing synchronized: the rule orders them.
    for i in range(calls):
        with torch.cuda.stream(streams[i % 2]):
            if i % 3 == 2:
                outputs.append(("all_gather", comm.all_gather(inputs[i])))
            else:
                outputs.append(("all_reduce", comm.all_reduce(inputs[i])))
    torch.cuda.synchronize()
    comm.synchronize()
    tally = Tally()
    for i, (kind, got) in enumerate(outputs):
        if kind == "all_reduce":
            want = sum(values(q, count, torch.float64, i) for q in range(n))
        else:
            want = torch.cat([values(q, count, torch.float64, i) for q in range(n)])
        tally.same(f"#{i} {kind} on stream {i % 2}", got, want)
    comm.close()
    tally.report(ranks, "streams", " issued alternately on two streams")


def scenario_recreate(ranks, rounds=3):
    r, n = ranks.rank, ranks.nranks
    tally = Tally()
    for k in range(rounds):
        comm = ranks.comm(SMALL)
        x = values(r, 4097, torch.float32, k)
        tally.same(f"round {k}", comm.all_reduce(x),
                   sum(values(q, 4097, torch.float64, k) for q in range(n)))
        comm.synchronize()
        comm.close()
    tally.report(ranks, "recreate", f" in {rounds} Communicators made and closed in turn")


def expect_error(ranks, name, action, *needles):
    """Runs action(); passes when it raises collc.Error whose message holds every needle."""
    try:
        action()
    except collc.Error as error:
        message = str(error)
        missing = [n for n in needles if n not in message]
        if missing:
            ranks.say("FAIL", name, f"the error does not say {missing}: {message}")
        else:
            ranks.say("PASS", name, message.replace("\n", " | ")[:600])
        return
    ranks.say("FAIL", name, "no error")


def scenario_mismatch(ranks):
    r, n = ranks.rank, ranks.nranks
    comm = ranks.comm(SMALL, check_calls=True)
    x32 = values(r, 4097, torch.float32, 1)
    x16 = values(r, 4097, torch.bfloat16, 1)
    for op in ("sum", "max"):  # every rank makes the same kernels ready first
        comm.all_reduce(x32, op=op)
    comm.all_reduce(x16)
    torch.cuda.synchronize()
    count = 4097 if r == 0 else 4096
    expect_error(ranks, "mismatch count", lambda: comm.all_reduce(x32[:count]),
                 "rank 0: allreduce f32 sum, 4097 elements",
                 "rank 1: allreduce f32 sum, 4096 elements")
    op = "sum" if r == 0 else "max"
    expect_error(ranks, "mismatch op", lambda: comm.all_reduce(x32, op=op),
                 "rank 0: allreduce f32 sum, 4097", "rank 1: allreduce f32 max, 4097")
    mine = x16 if r == 0 else x32
    expect_error(ranks, "mismatch dtype", lambda: comm.all_reduce(mine),
                 "rank 0: allreduce bf16 sum", "rank 1: allreduce f32 sum")
    # Nothing ran: the ranks are still in step, and a matching call is right.
    tally = Tally()
    tally.same("after the refusals", comm.all_reduce(x32),
               sum(values(q, 4097, torch.float64, 1) for q in range(n)))
    comm.synchronize()
    comm.close()
    tally.report(ranks, "mismatch then a matching call")


def scenario_bootstrap(ranks):
    r, n = ranks.rank, ranks.nranks
    expect_error(ranks, "bootstrap heap",
                 lambda: ranks.comm(SMALL, heap_bytes=(64 if r == 0 else 128) << 20),
                 "asks for a heap of 134217728 bytes, rank 0 for 67108864")
    expect_error(ranks, "bootstrap check_calls",
                 lambda: ranks.comm(SMALL, check_calls=r == 0),
                 "rank 1 passed", "rank 0", "COLLC_WORLD_CHECK_CALLS", "same flags")
    expect_error(ranks, "bootstrap max_bytes",
                 lambda: ranks.comm(SMALL if r == 0 else 2 * SMALL),
                 "max_bytes must be the same on every rank", f"rank 0 passed {SMALL}",
                 f"rank 1 passed {2 * SMALL}")
    if ranks.share:
        expect_error(ranks, "bootstrap share_gpu",
                     lambda: ct.Communicator(None, max_bytes=SMALL, share_gpu=r == 0),
                     "COLLC_WORLD_SHARE_GPU", "same flags")
    comm = ranks.comm(SMALL)  # the group is still usable
    tally = Tally()
    x = values(r, 7, torch.float16, 2)
    tally.same("a good Communicator after them", comm.all_reduce(x),
               sum(values(q, 7, torch.float64, 2) for q in range(n)))
    comm.synchronize()
    comm.close()
    tally.report(ranks, "bootstrap then a good Communicator")


def scenario_kill(ranks, calls=40, kill_after=10):
    r, n = ranks.rank, ranks.nranks
    victim = n - 1
    comm = ranks.comm(SMALL)
    x = values(r, 65541, torch.bfloat16, 0)
    comm.all_reduce(x)
    comm.synchronize()
    dist.barrier()
    for i in range(calls):
        comm.all_reduce(x)
        if r == victim and i == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        comm.synchronize()
    except collc.Error as error:
        seconds = time.monotonic() - start
        message = str(error).replace("\n", " | ")
        named = f"rank {victim}" in message and "exited" in message
        verdict = "PASS" if named and seconds < 15 else "FAIL"
        ranks.say(verdict, "kill", f"collc.Error after {seconds:.1f} s: {message[:800]}")
        comm.close()  # the world is broken: no waiting for the dead rank
        return
    ranks.say("FAIL", "kill", f"no error {time.monotonic() - start:.1f} s after rank {victim} died")


def scenario_refusals(ranks):
    """Each refusal is collc.Error with the same words on either path; nothing is launched."""
    comm = ranks.comm(4096)
    x = values(ranks.rank, 64, torch.bfloat16, 0)
    big = torch.zeros(4096, dtype=torch.float32, device="cuda")
    global_scale = torch.ones(1, dtype=torch.float32, device="cuda")
    cases = [
        ("dtype", lambda: comm.all_reduce(x.to(torch.int32)),
         ("for allreduce", "dtype torch.int32; collc takes float32")),
        ("device", lambda: comm.all_reduce(x.cpu()), ("a tensor on cpu;", "runs on cuda:")),
        ("layout", lambda: comm.all_reduce(x.view(8, 8).t()), ("a non-contiguous tensor",)),
        ("alignment", lambda: comm.all_reduce(x[1:]), ("not 16-byte aligned",)),
        ("size", lambda: comm.all_reduce(big), ("16384 bytes per call", "at most 4096")),
        ("split", lambda: comm.reduce_scatter(x[:ranks.nranks * 2 + 1]),
         ("do not split into",)),
        ("op", lambda: comm.all_reduce(x, op="prod"), ("unknown op 'prod'",)),
        ("op in place", lambda: comm.all_reduce(x, op="prod", out=x), ("unknown op 'prod'",)),
        ("root", lambda: comm.broadcast(x, root=ranks.nranks), ("root", "a rank of 0..")),
        ("fused weight", lambda: comm.fused_add_rms_norm(x, x.clone(), x[:16].float()),
         ("weight must be a contiguous torch.bfloat16 tensor",)),
        ("fused rows", lambda: comm.fused_add_rms_norm(x, x.clone(), x[:48].clone()),
         ("whole rows of weight.numel() = 48",)),
        ("fused eps", lambda: comm.fused_add_rms_norm(x, x.clone(), x[:16].clone(), eps=1e-5),
         ("eps = 1e-6 only",)),
        ("nvfp4 rows", lambda: comm.fused_add_rms_norm_quant(
            x, x.clone(), x[:8].clone(), quant="nvfp4", scale=global_scale),
         ("weight.numel() = 8 is not a multiple of 16",)),
        ("nvfp4 global scale", lambda: comm.fused_add_rms_norm_quant(
            x, x.clone(), x[:16].clone(), quant="nvfp4", scale=global_scale.half()),
         ("scale (the global scale) must be a float32 tensor of one element on cuda:",)),
        ("nvfp4 layout for fp8", lambda: comm.fused_add_rms_norm_quant(
            x, x.clone(), x[:16].clone(), quant="fp8", scale=global_scale,
            scale_layout="linear"),
         ("scale_layout= is NVFP4's",)),
    ]
    for name, action, needles in cases:
        expect_error(ranks, f"refusals {name}", action, *needles)
    comm.close()
    expect_error(ranks, "refusals closed", lambda: comm.all_reduce(x),
                 "this communicator was closed")


E4M3_MAX = 448.0
FP8_NEAR = 1e-4  # the kernel's float norm and division, relative, with a wide margin


def want_normed(x, residual, weight, rows, hidden=HIDDEN):
    """float64 reference of the fused op: (residual_out, rmsnorm(residual_out) * weight) as
    [rows, hidden]."""
    total = x.detach().cpu().double()
    dist.all_reduce(total)
    residual_out = (total + residual.cpu().double()).view(rows, hidden)
    rms = (residual_out.pow(2).mean(dim=1, keepdim=True) + 1e-6).sqrt()
    return residual_out.reshape(-1), residual_out / rms * weight.cpu().double()


def want_fp8(x, residual, weight, scale, rows):
    """float64 reference of the quantized op: (residual_out, rmsnorm(residual_out) * weight /
    scale clamped to E4M3's range), before the rounding to E4M3."""
    residual_out, normed = want_normed(x, residual, weight, rows)
    y = normed / float(scale.item())
    return residual_out, y.clamp(-E4M3_MAX, E4M3_MAX).reshape(-1)


# Per-token FP8's smallest scale (stdlib/allreduce_rmsnorm_fp8_per_token.coll): a zero row's.
PER_TOKEN_MIN_SCALE = 1.0 / (E4M3_MAX * 512)
PER_TOKEN_SCALE_RTOL = 1e-5


def check_fp8_per_token(tally, what, q, scales, x, residual, weight, rows):
    """Per-token FP8 against float64: scales [rows, 1] float32 within a relative
    PER_TOKEN_SCALE_RTOL of max(amax / 448, the floor), and q within one code of the float64 row
    divided by the scale the kernel wrote. Returns the float64 residual_out."""
    residual_out, normed = want_normed(x, residual, weight, rows)
    want_scales = (normed.abs().amax(dim=1, keepdim=True) / E4M3_MAX).clamp(min=PER_TOKEN_MIN_SCALE)
    if scales.dtype != torch.float32 or tuple(scales.shape) != (rows, 1):
        tally.calls += 1
        tally.wrong.append(f"{what}: scales {scales.dtype} {tuple(scales.shape)}, expected "
                           f"torch.float32 {(rows, 1)}")
        return residual_out
    tally.close(f"{what} scales", scales, want_scales, PER_TOKEN_SCALE_RTOL, 0.0)
    y = normed / scales.detach().cpu().double()
    check_fp8(tally, what, q, y.clamp(-E4M3_MAX, E4M3_MAX).reshape(-1))
    return residual_out


def check_fp8(tally, what, q, want):
    """q (float8_e4m3fn) against the float64 value: within one code everywhere, and the same code
    except where the value lies within the kernel's float error (FP8_NEAR, relative) of a rounding
    boundary. Small-integer inputs put whole classes of elements exactly on a tie (per-token
    scales make values 448 * k / amax), so a share of exact codes would not be a check."""
    if q.dtype != torch.float8_e4m3fn:
        tally.calls += 1
        tally.wrong.append(f"{what}: dtype {q.dtype}, expected torch.float8_e4m3fn")
        return
    tally.close(what, q.float(), want, 0.126, 2.0**-9)

    def e4m3(v):
        return v.clamp(-E4M3_MAX, E4M3_MAX).float().to(torch.float8_e4m3fn).double()

    got = q.cpu().float().double()
    near = e4m3(want * (1 - FP8_NEAR)) != e4m3(want * (1 + FP8_NEAR))
    differ = (got != e4m3(want)) & ~near
    if bool(differ.any()):
        tally.wrong.append(f"{what}: {int(differ.sum())} of {differ.numel()} codes differ from the "
                           "float64 value rounded, away from a rounding boundary")


def quant_call(comm, quant, x, residual, weight, scale):
    if quant == "fp8":
        return comm.fused_add_rms_norm_quant(x, residual, weight, quant="fp8", scale=scale)
    return comm.fused_add_rms_norm_quant(x, residual, weight, quant=quant)


def check_quant(tally, what, quant, outputs, x, residual, weight, scale, rows):
    q, scales, residual_out = outputs
    if quant == "fp8":
        want_residual, want_q = want_fp8(x, residual, weight, scale, rows)
        check_fp8(tally, what, q, want_q)
        if scales is not scale:
            tally.wrong.append(f"{what}: the scale returned is not the one given")
    else:
        want_residual = check_fp8_per_token(tally, what, q, scales, x, residual, weight, rows)
    tally.same(f"{what} residual", residual_out, want_residual)


# NVFP4's global scale: blocks whose amax is over 448 * 6 / 600 = 4.48 take the largest scale,
# and their elements over 4.48 * 5 / 6 saturate.
NVFP4_GLOBAL_SCALE = 600.0
NVFP4_NEAR = 1e-4  # the kernel's float norm, scale and product, relative, with a wide margin
NVFP4_LAYOUTS = ("swizzled", "linear")


class Nvfp4Tally(Tally):
    """A Tally that also counts the blocks and elements compared and those near a boundary."""

    def __init__(self):
        super().__init__()
        self.agreement = nvfp4.Agreement()

    def nvfp4(self, what, layout, outputs, x, residual, weight, rows, hidden):
        """fused_add_rms_norm_quant(quant="nvfp4") against float64 (collc._nvfp4.compare): the
        packed values [rows, hidden / 2] and block scales in `layout` (the swizzled padding 0),
        and residual_out exactly."""
        q, scales, residual_out = outputs
        want_residual, normed = want_normed(x, residual, weight, rows, hidden)
        self.same(f"{what} residual", residual_out, want_residual)
        self.calls += 1
        blocks = hidden // nvfp4.BLOCK
        scale_shape = (nvfp4.swizzled_shape(rows, blocks) if layout == "swizzled"
                       else (rows, blocks))
        if (q.dtype != ct._FP4_DTYPE or tuple(q.shape) != (rows, hidden // 2)
                or scales.dtype != torch.float8_e4m3fn or tuple(scales.shape) != scale_shape):
            self.wrong.append(f"{what}: q {q.dtype} {tuple(q.shape)}, scales {scales.dtype} "
                              f"{tuple(scales.shape)}; expected {ct._FP4_DTYPE} "
                              f"{(rows, hidden // 2)}, torch.float8_e4m3fn {scale_shape}")
            return
        bits = scales.detach().view(torch.uint8).cpu()
        if layout == "swizzled":
            bits, padding = nvfp4.unswizzle(bits, rows, blocks)
            if bool(padding.any()):
                self.wrong.append(f"{what}: {int((padding != 0).sum())} bytes of the swizzled "
                                  "scales' padding are not 0")
        codes = nvfp4.unpack(q.detach().view(torch.uint8).cpu())
        before = len(self.agreement.wrong)
        nvfp4.compare(normed, NVFP4_GLOBAL_SCALE, codes, bits, NVFP4_NEAR, self.agreement, what)
        self.wrong += self.agreement.wrong[before:]


def nvfp4_call(comm, layout, x, residual, weight, scale):
    return comm.fused_add_rms_norm_quant(x, residual, weight, quant="nvfp4", scale=scale,
                                         scale_layout=layout)


def quant_nvfp4(ranks, replays):
    """quant="nvfp4" in both layouts: eagerly for every dtype (bfloat16 only with --reduced) at
    1, 7, 32 and 130 rows (two tiles of swizzled rows) of HIDDEN, and 7 and 128 rows of 1040 (65
    blocks: swizzled columns padded, which the kernel zeroes; padding rows the op zeroes), a zero
    row among them; then `replays` replays of a CUDA graph of each layout, fresh inputs each
    time. Returns the tally, or None where the stdlib has no NVFP4 spec (said as SKIP)."""
    r = ranks.rank
    comm = ranks.comm(BIG)
    scale = torch.tensor([NVFP4_GLOBAL_SCALE], device="cuda", dtype=torch.float32)
    tally = Nvfp4Tally()
    cases = [(dtype, hidden, rows)
             for dtype in (DTYPES if not ranks.reduced else (torch.bfloat16,))
             for hidden, rows in ((HIDDEN, 1), (HIDDEN, 7), (HIDDEN, 32), (HIDDEN, 130))]
    cases += [(torch.bfloat16, 1040, 7), (torch.bfloat16, 1040, 128)]
    for layout in NVFP4_LAYOUTS:
        for dtype, hidden, rows in cases:
            weight = (values(0, hidden, torch.float32, 5) / 8 + 1).to(dtype)
            x = values(r, rows * hidden, dtype, rows)
            residual = values(r + 3, rows * hidden, dtype, rows + 1)
            if rows > 1:  # a zero row on every rank: its blocks' scale is 0
                x.view(rows, hidden)[1].zero_()
                residual.view(rows, hidden)[1].zero_()
            try:
                outputs = nvfp4_call(comm, layout, x, residual, weight, scale)
            except collc.Error as error:
                if "which this collc library does not have" not in str(error):
                    raise
                ranks.say("SKIP", "quant nvfp4", str(error))
                comm.close()
                return None
            tally.nvfp4(f"quant nvfp4 {layout} {str(dtype)[6:]} {rows} rows of {hidden}",
                        layout, outputs, x, residual, weight, rows, hidden)
        rows, dtype = 4, torch.bfloat16
        x = values(r, rows * HIDDEN, dtype, 0)
        residual = values(r + 3, rows * HIDDEN, dtype, 1)
        weight = torch.ones(HIDDEN, device="cuda", dtype=dtype)
        nvfp4_call(comm, layout, x, residual, weight, scale)  # ready outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outputs = nvfp4_call(comm, layout, x, residual, weight, scale)
        for i in range(replays):
            x.copy_(values(r, rows * HIDDEN, dtype, i))
            residual.copy_(values(r + 3, rows * HIDDEN, dtype, i + 1))
            graph.replay()
            torch.cuda.synchronize()
            tally.nvfp4(f"quant nvfp4 {layout} graph replay {i}", layout, outputs, x, residual,
                        weight, rows, HIDDEN)
        comm.synchronize()
        del graph
    comm.close()
    return tally


def scenario_quant(ranks, replays=100):
    r = ranks.rank
    comm = ranks.comm(BIG)
    scale = torch.tensor([0.004], device="cuda", dtype=torch.float32)  # some values saturate
    tally = Tally()
    start = time.monotonic()
    for quant in FP8_QUANTS:
        # --reduced JITs per-token FP8 for bfloat16 alone: each variant compiles per rank count.
        for dtype in DTYPES if quant == "fp8" or not ranks.reduced else (torch.bfloat16,):
            weight = (values(0, HIDDEN, torch.float32, 5) / 8 + 1).to(dtype)
            for rows in (1, 7, 32):
                x = values(r, rows * HIDDEN, dtype, rows)
                residual = values(r + 3, rows * HIDDEN, dtype, rows + 1)
                if rows > 1:  # a zero row on every rank: per-token FP8's smallest scale
                    x.view(rows, HIDDEN)[1].zero_()
                    residual.view(rows, HIDDEN)[1].zero_()
                outputs = quant_call(comm, quant, x, residual, weight, scale)
                check_quant(tally, f"quant {quant} {str(dtype)[6:]} {rows} rows of {HIDDEN}",
                            quant, outputs, x, residual, weight, scale, rows)
        rows, dtype = 4, torch.bfloat16
        x = values(r, rows * HIDDEN, dtype, 0)
        residual = values(r + 3, rows * HIDDEN, dtype, 1)
        weight = torch.ones(HIDDEN, device="cuda", dtype=dtype)
        quant_call(comm, quant, x, residual, weight, scale)  # ready outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outputs = quant_call(comm, quant, x, residual, weight, scale)
        for i in range(replays):
            x.copy_(values(r, rows * HIDDEN, dtype, i))
            residual.copy_(values(r + 3, rows * HIDDEN, dtype, i + 1))
            graph.replay()
            torch.cuda.synchronize()
            check_quant(tally, f"quant {quant} graph replay {i}", quant, outputs, x, residual,
                        weight, scale, rows)
        comm.synchronize()
        del graph
    comm.close()
    tally.report(ranks, "quant", f" ({', '.join(FP8_QUANTS)}) against float64, {replays} of "
                 f"them graph replays each, {time.monotonic() - start:.1f} s")
    start = time.monotonic()
    nvfp4_tally = quant_nvfp4(ranks, replays)
    if nvfp4_tally is not None:
        a = nvfp4_tally.agreement
        nvfp4_tally.report(
            ranks, "quant nvfp4", f" ({', '.join(NVFP4_LAYOUTS)} scales) against float64, "
            f"{replays} of them graph replays each layout; {a.blocks} block scales and "
            f"{a.elements} elements compared, {a.blocks_near} scales and {a.elements_near} "
            f"elements within the float error of a rounding boundary (either side accepted), "
            f"{time.monotonic() - start:.1f} s")


WIDE_COUNTS = (1, 4097, 1_000_003)  # the last above collc's one-shot limit in both types
WIDE_MAX_BYTES = 4 << 20  # holds 1M+3 float32; the default heap at 16 ranks is then about 1 GiB


def exact_values(rank, count, dtype, salt, nranks):
    """Integers in [-m, m] with m = 8 up to 32 ranks and smaller past them, so that the sum over
    `nranks` ranks stays within 256, exact in bfloat16; the j // 101 term breaks the period of
    2m + 1 elements, so a misplaced chunk does not read alike."""
    m = max(1, min(8, 256 // nranks))
    j = torch.arange(count, device="cuda", dtype=torch.int64)
    return ((j * 7 + j // 101 + salt * 13 + rank * 5) % (2 * m + 1) - m).to(dtype)


def wide_spec_check(ranks, name, comm, dtype, largest):
    """Asserts (FAIL otherwise) and prints the spec of the communicator's AllReduce of `dtype`,
    the instance its calls ran through: up to collc's one-shot limit the one-shot; above it the
    two-shot where collc.spec_ranks says it declares the group's rank count, else the one-shot."""
    from collc._allreduce_spec import ONESHOT_LIMIT, allreduce_spec
    n = ranks.nranks
    low, high = collc.spec_ranks("allreduce_twoshot")
    above = comm.max_bytes > ONESHOT_LIMIT
    want = "allreduce_twoshot" if above and low <= n <= high else "allreduce_oneshot"
    # The Communicator has no public word for it: the instance it made holds the compiled spec.
    instance = comm._instances.get(("allreduce", ct._DTYPES[dtype], "sum", 0, 0))
    ran = instance.compiled.spec if instance is not None else None
    chosen = allreduce_spec(comm.max_bytes, n)
    size = torch.tensor([], dtype=dtype).element_size()
    text = (f"max_bytes {comm.max_bytes}, calls of {str(dtype)[6:]} up to {largest} elements "
            f"({largest * size} bytes) at {n} ranks ran {ran} (kernel "
            f"{instance.compiled.kernel_name if instance else None}); the two-shot declares ranks "
            f"{low}..{high}, so {want} was expected; allreduce_spec(max_bytes, nranks) = {chosen}")
    ranks.say("PASS" if ran == want == chosen else "FAIL", name, text)


def wide_default(ranks):
    """A Communicator of every default setting: max_bytes 8 MiB where the two-shot declares the
    rank count, else the one-shot's 1 MiB, and should_use() true of a call of 1M+3 float32 exactly
    where it fits; one AllReduce checked against gloo, and the spec it ran."""
    n, r = ranks.nranks, ranks.rank
    low, high = collc.spec_ranks("allreduce_twoshot")
    want_max = (8 << 20) if low <= n <= high else (1 << 20)
    comm = ct.Communicator(None, share_gpu=ranks.share)
    large = torch.empty(WIDE_COUNTS[-1], device="cuda", dtype=torch.float32)
    takes = comm.should_use(large)
    right = comm.max_bytes == want_max and takes == (large.numel() * 4 <= want_max)
    ranks.say("PASS" if right else "FAIL", "wide default",
              f"max_bytes {comm.max_bytes} (expected {want_max}) at {n} ranks; should_use of "
              f"{large.numel()} float32 elements: {takes}; heap {comm.heap_bytes} bytes per rank")
    tally = Tally()
    x = exact_values(r, 4097, torch.bfloat16, 3, n)
    tally.same("default all_reduce sum bfloat16 n=4097", comm.all_reduce(x),
               gloo_all_reduce(x, "sum"))
    wide_spec_check(ranks, "wide default spec", comm, torch.bfloat16, 4097)
    comm.synchronize()
    comm.close()
    return tally


def scenario_wide(ranks, replays=5):
    n, r = ranks.nranks, ranks.rank
    start = time.monotonic()
    tally = wide_default(ranks)
    # Default settings but max_bytes, which takes 1M+3 float32: past the two-shot's ranks the
    # one-shot runs above 1 MiB. The heap is the Communicator's own choice.
    comm = ct.Communicator(None, max_bytes=WIDE_MAX_BYTES, share_gpu=ranks.share)
    for dtype in (torch.bfloat16, torch.float32):
        for count in WIDE_COUNTS:
            x = exact_values(r, count, dtype, count % 97, n)
            tag = f"{str(dtype)[6:]} n={count}"
            want = gloo_all_reduce(x, "sum")
            tally.same(f"all_reduce sum {tag}", comm.all_reduce(x), want)
            if count == WIDE_COUNTS[-1]:
                comm.all_reduce(x, out=x)
                tally.same(f"all_reduce sum in place {tag}", x, want)
    wide_spec_check(ranks, "wide spec", comm, torch.float32, WIDE_COUNTS[-1])
    eager = time.monotonic() - start
    # A graph of three calls (every instance ready from the calls above), fresh inputs each replay.
    shapes = ((torch.bfloat16, 4097), (torch.float32, WIDE_COUNTS[-1]), (torch.float32, 1))
    inputs = [exact_values(r, count, dtype, 0, n) for dtype, count in shapes]
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = [comm.all_reduce(x) for x in inputs]
    start = time.monotonic()
    for i in range(replays):
        for x, (dtype, count) in zip(inputs, shapes):
            x.copy_(exact_values(r, count, dtype, i + 1, n))
        graph.replay()
        for k, (dtype, count) in enumerate(shapes):
            want = sum(exact_values(q, count, torch.float64, i + 1, n) for q in range(n))
            tally.same(f"graph replay {i} all_reduce {str(dtype)[6:]} n={count}", outputs[k], want)
    comm.synchronize()
    replayed = time.monotonic() - start
    del graph
    comm.close()
    tally.report(ranks, "wide", f" at {n} ranks against gloo/float64 (heap {comm.heap_bytes} bytes "
                 f"per rank): eager {eager:.1f} s, {replays} replays of {len(shapes)} calls "
                 f"{replayed:.1f} s")


def scenario_graphs_for(ranks):
    scenario_graphs(ranks, replays=200 if ranks.reduced else 1000)


SCENARIOS = {"ops": scenario_ops, "graphs": scenario_graphs_for, "compile": scenario_compile,
             "counts": scenario_counts, "streams": scenario_streams,
             "recreate": scenario_recreate, "mismatch": scenario_mismatch,
             "bootstrap": scenario_bootstrap, "refusals": scenario_refusals,
             "quant": scenario_quant,
             "kill": scenario_kill, "wide": scenario_wide}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="+", choices=sorted(SCENARIOS) + ["all"])
    parser.add_argument("--reduced", action="store_true",
                        help="max and min for float32 only; no compile in all")
    parser.add_argument("--expect-host-path", choices=("native", "python"),
                        help="fail unless the ops run on this path")
    args = parser.parse_args()
    left_out = ("kill", "wide", "compile") if args.reduced else ("kill", "wide")
    names = ([s for s in SCENARIOS if s not in left_out] if "all" in args.scenarios
             else args.scenarios)
    ranks = Ranks()
    ranks.reduced = args.reduced
    if ranks.nranks < 2:
        ranks.say("SKIP", "engine", "needs 2 or more ranks")
        return 0
    path = ct.host_path + (f" ({ct.native_reason})" if ct.native_reason else "")
    ranks.say("FAIL" if args.expect_host_path not in (None, ct.host_path) else "PASS",
              "host-path", f"the ops run on the {path} path")
    for name in names:
        start = time.monotonic()
        try:
            SCENARIOS[name](ranks)
        except Exception as error:  # one scenario's failure must not hide the others'
            ranks.say("FAIL", name, f"{type(error).__name__}: {error}".replace("\n", " | ")[:2000])
            if isinstance(error, collc.Error) and "watchdog" in str(error):
                break  # the ranks are out of step: later scenarios would only wait
        print(f"[rank {ranks.rank}] time {name}: {time.monotonic() - start:.1f} s", flush=True)
    if dist.is_initialized():
        dist.destroy_process_group()
    return 1 if ranks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
