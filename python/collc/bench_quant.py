"""python -m collc.bench_quant: AllReduce + residual add + RMSNorm + quantization for the next GEMM,
collc's one fused kernel against the unfused step engines run, one process per GPU:

    torchrun --nproc_per_node=2 -m collc.bench_quant --csv TABLE.csv --markdown TABLE_MARKDOWN
    COLLC_SHARE_GPU=1 torchrun --nproc_per_node=2 -m collc.bench_quant --smoke   # one GPU

Paths (collc._quant_table.PATHS), each timed as graphs of --calls back-to-back calls replayed
--iters times, the median of --rounds rounds, the slowest rank's:
  fused       comm.fused_add_rms_norm_quant (quant "fp8", static scale; "fp8_per_token" and
              "nvfp4", swizzled block scales with --global-scale, where the installed collc
              offers them);
  nccl        dist.all_reduce (NCCL, in place) + residual add + rms_norm + quantization in torch:
              the baseline every ratio is to;
  collc_ar    collc's all_reduce + the same torch epilogue;
  collc_norm  collc's fused_add_rms_norm (no quantization) + torch's quantization: the share of
              the quantization's own fusion;
  symm        torch symmetric memory's one_shot_all_reduce (a copy into its buffer, then the
              all-reduce) + the same epilogue, where this torch has it.
Every path's first call is checked against one float64 reference before it is timed: the
residual sum exactly (the inputs are small multiples of 1/4), the FP8 codes within one code of the
float64 value rounded (the torch epilogue rounds the norm to the input type first; the fused
kernel rounds only once), and the fused codes within one code of each unfused path's; NVFP4's
block scales within one E4M3 code of float64's, each element within one E2M1 code of its float64
value over the scale the path wrote, and the swizzled padding zero. The torch quantization of
NVFP4 is collc._nvfp4's in float32 (blocks, scales, packing and the swizzle in torch ops). The timed
graphs run on zeros, so in-place all-reduces replayed many times stay finite (no path's work
depends on the values). Ranks that share a GPU (COLLC_SHARE_GPU=1) run over a gloo group: NCCL
refuses two ranks on one GPU, so its path and torch's symmetric memory are not run, and the
timings are not speeds (rank 0 says so, loudly).
"""

import os
import statistics
import sys

import torch
import torch.distributed as dist

from . import _nvfp4
from ._errors import Error
from ._quant_table import BASELINE, SHARED_WARNING, Results, chosen_quants, csv_text, markdown, \
    parse_args

E4M3_MAX = 448.0
EPS = 1e-6
_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
# The quantizations this benchmark can check, and so time.
_CHECKED_QUANTS = ("fp8", "fp8_per_token", "nvfp4")


def _rms_norm():
    """torch's rms_norm (one fused kernel in recent torch), else its formula in float32."""
    fn = getattr(torch.nn.functional, "rms_norm", None)
    if fn is not None:
        def fused(r, weight):
            return fn(r, (weight.numel(),), weight, EPS)
        return fused, "torch.nn.functional.rms_norm"

    def formula(r, weight):
        f = r.float()
        return (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + EPS) * weight.float()).to(r.dtype)
    return formula, "rms_norm's formula in float32 (this torch has no rms_norm)"


RMS_NORM, RMS_NORM_NAME = _rms_norm()


def quantize_static(normed, scale):
    """vLLM's static FP8: e4m3(x / scale), saturating (torch's cast alone does not saturate)."""
    return (normed.float() / scale).clamp_(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn), scale


def quantize_per_token(normed):
    """Dynamic per-token FP8: each row's scale amax / 448, then e4m3(x / scale)."""
    f = normed.float()
    scales = (f.abs().amax(dim=-1, keepdim=True) / E4M3_MAX).clamp_(min=1e-12)
    return (f / scales).clamp_(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn), scales


def quantize_nvfp4(normed, global_scale):
    """NVFP4 with swizzled block scales, as the fused op returns it, in float32 torch ops:
    (packed [rows, hidden / 2] as uint8, whose bytes are the fused op's float4_e2m1fn_x2 ones
    (torch.compile's code generators lack that type), float8_e4m3fn scales
    [round_up(rows, 128), round_up(hidden / 16, 4)])."""
    codes, scale_bits = _nvfp4.quantize(normed.float(), global_scale)
    return _nvfp4.pack(codes), _nvfp4.swizzle(scale_bits).view(torch.float8_e4m3fn)


def make_epilogue(quant, compiled):
    """(reduced, residual, weight, scale) -> (q, scales, residual_out), and the quantization alone
    (normed, scale) -> (q, scales), in torch ops (or through torch.compile)."""
    def quantize(normed, scale):
        if quant == "fp8":
            return quantize_static(normed, scale)
        if quant == "nvfp4":
            return quantize_nvfp4(normed, scale)
        return quantize_per_token(normed)

    def epilogue(reduced, residual, weight, scale):
        residual_out = reduced.view_as(residual) + residual
        q, scales = quantize(RMS_NORM(residual_out.view(-1, weight.numel()), weight), scale)
        return q, scales, residual_out

    if compiled:
        # One compiled graph per shape: past dynamo's default limit it would fall back to eager.
        for limit in ("cache_size_limit", "recompile_limit"):
            if hasattr(torch._dynamo.config, limit):
                setattr(torch._dynamo.config, limit, 256)
        return (torch.compile(epilogue, fullgraph=True, dynamic=False),
                torch.compile(quantize, fullgraph=True, dynamic=False))
    return epilogue, quantize


def small_values(rank, count, dtype, salt):
    """Multiples of 1/4 in [-2, 2]: their sums over 8 ranks plus a residual are exact in 16 bits."""
    j = torch.arange(count, device="cuda", dtype=torch.int64)
    return (((j * 7 + salt * 13 + rank * 5) % 17 - 8).to(torch.float32) / 4).to(dtype)


def codes(q):
    """FP8 E4M3 bytes as integers in value order (sign-magnitude to two's complement): neighbouring
    codes differ by one, +0 and -0 are both 0."""
    bits = q.view(torch.uint8).to(torch.int32)
    magnitude = bits & 0x7F
    return torch.where(bits >= 0x80, -magnitude, magnitude)


class Reference:
    """The float64 value of one call: every rank builds every rank's input (they are cheap)."""

    def __init__(self, n, tokens, hidden, dtype):
        self.x = [small_values(r, tokens * hidden, dtype, 0) for r in range(n)]
        self.residual = [small_values(r + 3, tokens * hidden, dtype, 1) for r in range(n)]
        self.weight = (small_values(0, hidden, torch.float32, 5) / 8 + 1).to(dtype)
        total = sum(x.double() for x in self.x)

        def normed(rank):
            r = (total + self.residual[rank].double()).view(tokens, hidden)
            rms = (r.pow(2).mean(dim=1, keepdim=True) + EPS).sqrt()
            return r, r / rms * self.weight.double()
        self.normed = normed


class Check:
    """One rank's verdict on its paths' first calls; the first few failures in words."""

    def __init__(self):
        self.failures = []

    def fail(self, what):
        self.failures.append(what)

    def residual(self, path, got, want):
        if not torch.equal(got.double().view(-1), want.view(-1)):
            bad = int((got.double().view(-1) != want.view(-1)).sum())
            self.fail(f"{path}: residual_out differs from the exact sum in {bad} elements")

    def fp8_static(self, path, q, want_codes):
        if q.dtype != torch.float8_e4m3fn or q.numel() != want_codes.numel():
            self.fail(f"{path}: q is {q.dtype} of {q.numel()} elements, expected float8_e4m3fn "
                      f"of {want_codes.numel()}")
            return None
        got = codes(q).view(-1)
        far = int(((got - want_codes).abs() > 1).sum())
        if far:
            self.fail(f"{path}: {far} of {got.numel()} FP8 codes are more than one code from the "
                      "float64 value rounded")
        return got

    def fp8_per_token(self, path, q, scales, want, tokens):
        """Dequantized (q * the row's scale) within one code of the float64 value: one E4M3 step
        is at most 1/8 of the value (2^-9 of the scale below the normal range). The layout is
        per_token_layout's."""
        s = scales.double().view(tokens, 1)
        got = q.float().double().view(tokens, -1) * s
        far = (got - want).abs() > 0.126 * want.abs() + 2.0**-9 * s * 1.01
        if bool(far.any()):
            self.fail(f"{path}: {int(far.sum())} of {q.numel()} dequantized values are more than "
                      "one code from the float64 value")


    def nvfp4(self, path, q, scales, normed, tokens, global_scale):
        """Swizzled scales within one E4M3 code of float64's (their padding zero), and each
        element within one E2M1 code of its float64 value times GS over the scale the path wrote.
        Returns (element ordinals, scale bits) for the comparison between paths. The layout is
        nvfp4_layout's."""
        normed = normed.cpu()
        hidden = normed.shape[1]
        bits, padding = _nvfp4.unswizzle(scales.view(torch.uint8).cpu(), tokens,
                                         hidden // _nvfp4.BLOCK)
        if bool(padding.any()):
            self.fail(f"{path}: {int((padding != 0).sum())} bytes of the swizzled scales' padding "
                      "are not 0")
        want = _nvfp4.e4m3_bits(global_scale * _nvfp4.block_amax(normed) / _nvfp4.E2M1_MAX)
        # E4M3 bits of non-negative values are in value order, but NaN (0x7f) follows 448.
        far = int((((bits.to(torch.int32) - want.to(torch.int32)).abs() > 1)
                   | (bits & 0x7F == 0x7F)).sum())
        if far:
            self.fail(f"{path}: {far} of {bits.numel()} NVFP4 block scales are more than one code "
                      "from the float64 value rounded")
        got = _nvfp4.e2m1_ordinals(_nvfp4.unpack(q.view(torch.uint8).cpu()))
        factor = _nvfp4.factors(_nvfp4.e4m3_values(bits), global_scale)
        element = normed.view(tokens, -1, _nvfp4.BLOCK) * factor.unsqueeze(-1)
        want = _nvfp4.e2m1_ordinals(_nvfp4.e2m1_codes(element)).view(tokens, hidden)
        far = int(((got - want).abs() > 1).sum())
        if far:
            self.fail(f"{path}: {far} of {got.numel()} NVFP4 elements are more than one code from "
                      "the float64 value rounded")
        return got, bits


def nvfp4_layout(q, scales, tokens, hidden):
    """Why an NVFP4 result is not in the layout this benchmark checks (two E2M1 values a byte,
    [tokens, hidden / 2]; swizzled float8_e4m3fn scales), or None."""
    if not (isinstance(q, torch.Tensor) and isinstance(scales, torch.Tensor)):
        return "its result is not (q, scales, residual_out) tensors"
    want_scales = _nvfp4.swizzled_shape(tokens, hidden // _nvfp4.BLOCK)
    if (q.element_size() != 1 or tuple(q.shape) != (tokens, hidden // 2)
            or scales.dtype != torch.float8_e4m3fn or tuple(scales.shape) != want_scales):
        return (f"it returned {q.dtype} of {tuple(q.shape)} with {scales.dtype} scales of "
                f"{tuple(scales.shape)}, not packed E2M1 of {(tokens, hidden // 2)} with "
                f"float8_e4m3fn scales of {want_scales}, the layout this benchmark checks")
    return None


def per_token_layout(q, scales, elements, tokens):
    """Why a per-token result is not in the layout this benchmark checks (float8_e4m3fn values
    of the input's size, one float32 scale per row), or None."""
    if not (isinstance(q, torch.Tensor) and isinstance(scales, torch.Tensor)):
        return "its result is not (q, scales, residual_out) tensors"
    if q.dtype != torch.float8_e4m3fn or q.numel() != elements or scales.numel() != tokens:
        return (f"it returned {q.dtype} of {q.numel()} elements with {scales.numel()} scales, "
                f"not float8_e4m3fn of {elements} with one scale per row ({tokens}), the layout "
                "this benchmark checks")
    return None


def _agree(ok, device):
    """Whether every rank's `ok` holds."""
    flag = torch.tensor([1 if ok else 0], dtype=torch.int32, device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item())


def _slowest(us, device):
    t = torch.tensor([us], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def time_step(step, inputs, args):
    """us per call, from graphs of len(inputs) back-to-back calls replayed args.iters times: the
    median of args.rounds rounds on this rank."""
    step(inputs[0])  # ready outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for t in inputs:
            step(t)
    graph.replay()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rounds = []
    for _ in range(args.rounds):
        dist.barrier()
        start.record()
        for _ in range(args.iters):
            graph.replay()
        stop.record()
        torch.cuda.synchronize()
        rounds.append(start.elapsed_time(stop) * 1e3 / (args.iters * len(inputs)))
    del graph
    return statistics.median(rounds)


class Paths:
    """Each path's one call, (x, residual, weight, scale) -> (q, scales, residual_out)."""

    def __init__(self, comm, quant, args, nccl, symm):
        self.comm, self.quant, self.nccl, self.symm = comm, quant, nccl, symm
        self.epilogue, self.quantize = make_epilogue(quant, args.compile_epilogue)

    def why_not(self, path):
        if path == "nccl" and not self.nccl:
            return "NCCL refuses two ranks on one GPU (ranks share a GPU here)"
        if path == "symm" and self.symm is None:
            return ("torch symmetric memory is not available here (ranks share a GPU, or this "
                    "torch has no one-shot all-reduce)")
        return None

    def call(self, path, x, residual, weight, scale):
        if path == "fused":
            if self.quant in ("fp8", "nvfp4"):
                return self.comm.fused_add_rms_norm_quant(x, residual, weight, quant=self.quant,
                                                          scale=scale)
            return self.comm.fused_add_rms_norm_quant(x, residual, weight, quant=self.quant)
        if path == "nccl":
            dist.all_reduce(x)
            return self.epilogue(x, residual, weight, scale)
        if path == "collc_ar":
            return self.epilogue(self.comm.all_reduce(x), residual, weight, scale)
        if path == "collc_norm":
            normed, residual_out = self.comm.fused_add_rms_norm(x, residual, weight)
            q, scales = self.quantize(normed.view(-1, weight.numel()), scale)
            return q, scales, residual_out
        return self.epilogue(self.symm(x), residual, weight, scale)


class Communicators:
    """collc's AllReduce is one-shot in a Communicator of max_bytes up to 1 MiB, two-shot above
    where it declares the rank count (collc/_allreduce_spec.py), as an engine would pick by size:
    one Communicator of each, made when first needed."""

    ONESHOT = 1 << 20

    def __init__(self, ct, shared, n, largest):
        self.ct, self.shared, self.largest = ct, shared, largest
        # Instances each: the AllReduce and, per hidden size, the fused op without quantization
        # and with each of the three: more than a default heap holds.
        probe = ct._compiled("allreduce_oneshot", "float32", "sum", n, 0, 0)
        self.heap = lambda max_bytes: 32 * probe.heap_bytes(max(1, max_bytes // 4))
        self.made = {}

    def fitting(self, nbytes):
        max_bytes = self.ONESHOT if nbytes <= self.ONESHOT else max(self.largest, nbytes)
        if max_bytes not in self.made:
            self.made[max_bytes] = self.ct.Communicator(
                None, max_bytes=max_bytes, heap_bytes=self.heap(max_bytes),
                share_gpu=self.shared)
        return self.made[max_bytes]

    def close(self):
        for comm in self.made.values():
            comm.synchronize()
            comm.close()


def run_shape(paths, args, quant, hidden, tokens, dtype, rank, n, device, results):
    ref = Reference(n, tokens, hidden, dtype)
    scale = torch.tensor([args.global_scale if quant == "nvfp4" else args.scale],
                         dtype=torch.float32, device="cuda")
    weight = ref.weight
    residual_want, normed = ref.normed(rank)
    want_codes = None
    if quant == "fp8":
        v = (normed / float(scale.item())).clamp(-E4M3_MAX, E4M3_MAX)  # the float32 scale
        want_codes = codes(v.float().to(torch.float8_e4m3fn)).view(-1)
    check, fused_codes, unfused_codes = Check(), None, {}
    fused_nvfp4, unfused_nvfp4 = None, {}
    for path in args.paths:
        reason = paths.why_not(path)
        if reason:
            results.skip(quant, hidden, tokens, path, reason)
            continue
        try:
            q, scales, residual_out = paths.call(path, ref.x[rank].clone(), ref.residual[rank],
                                                 weight, scale)
            torch.cuda.synchronize()
            error = None
        except Exception as e:
            if path != "symm" and quant == "fp8":
                raise
            # What this torch or collc may lack (symmetric memory, a newer quantization's API):
            # said in the table, not fatal.
            error = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        if error is None and quant == "fp8_per_token":
            error = per_token_layout(q, scales, normed.numel(), tokens)
        if error is None and quant == "nvfp4":
            error = nvfp4_layout(q, scales, tokens, hidden)
        if not _agree(error is None, device):
            results.skip(quant, hidden, tokens, path, error or "failed on another rank")
            continue
        check.residual(path, residual_out, residual_want)
        if quant == "fp8":
            got = check.fp8_static(path, q, want_codes)
            if path == "fused":
                fused_codes = got
            elif got is not None:
                unfused_codes[path] = got
        elif quant == "nvfp4":
            got = check.nvfp4(path, q, scales, normed, tokens, float(scale.item()))
            if path == "fused":
                fused_nvfp4 = got
            else:
                unfused_nvfp4[path] = got
        else:
            check.fp8_per_token(path, q, scales, normed, tokens)
        if not _agree(not check.failures, device):
            raise Error(f"rank {rank}, {quant} hidden {hidden} tokens {tokens}: " +
                        ("; ".join(check.failures) or "wrong on another rank"))
        inputs = [torch.zeros_like(ref.x[rank]) for _ in range(args.calls)]
        zeros = torch.zeros_like(ref.residual[rank])
        us = time_step(lambda t: paths.call(path, t, zeros, weight, scale), inputs, args)
        results.put(quant, hidden, tokens, path, _slowest(us, device))
    if fused_codes is not None:
        for path, got in unfused_codes.items():
            far = int(((got - fused_codes).abs() > 1).sum())
            if far:
                check.fail(f"fused and {path}: {far} FP8 codes differ by more than one")
    if fused_nvfp4 is not None:
        for path, (codes_, bits) in unfused_nvfp4.items():
            scales_far = int(((bits.to(torch.int32) - fused_nvfp4[1].to(torch.int32)).abs()
                              > 1).sum())
            # Elements compare where both paths chose the same block scale.
            same = (bits == fused_nvfp4[1]).repeat_interleave(_nvfp4.BLOCK, dim=1)
            far = int((((codes_ - fused_nvfp4[0]).abs() > 1) & same).sum())
            if scales_far or far:
                check.fail(f"fused and {path}: {scales_far} NVFP4 block scales and {far} elements "
                           "(of blocks with the same scale) differ by more than one code")
    if not _agree(not check.failures, device):
        raise Error(f"rank {rank}: " + ("; ".join(check.failures) or "wrong on another rank"))


def _notes(args, n, shared, missing):
    gpu = torch.cuda.get_device_name()
    notes = [f"{n} ranks, {torch.cuda.device_count()} visible GPU(s) ({gpu}), torch "
             f"{torch.__version__}, {args.dtype}; graphs of {args.calls} calls x {args.iters} "
             f"replays, median of {args.rounds} rounds, the slowest rank; µs per call",
             f"torch epilogue: {'torch.compile' if args.compile_epilogue else 'eager torch ops'}, "
             f"{RMS_NORM_NAME}; static scale {args.scale}, NVFP4 global scale "
             f"{args.global_scale}; timed on zeros (checked first on "
             "values)"]
    notes += [f"quant={q}: not run: {why}" for q, why in missing.items()]
    if shared:
        notes.insert(0, "**" + SHARED_WARNING + "**")
    return notes


def _loud(rank, shared):
    if rank == 0 and shared:
        bar = "!" * 100
        print(f"{bar}\n!!! {SHARED_WARNING}\n{bar}", flush=True)


def main(argv=None):
    args = parse_args(argv)
    rank, n = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", rank))
    if n < 2:
        print("run it with 2 or more ranks: torchrun --nproc_per_node=2 -m collc.bench_quant",
              file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("no GPU: torch sees no CUDA device", file=sys.stderr)
        return 2
    shared = os.environ.get("COLLC_SHARE_GPU") == "1" and torch.cuda.device_count() < n
    torch.cuda.set_device(local % torch.cuda.device_count())
    dist.init_process_group("gloo" if shared else "nccl")
    device = "cpu" if shared else "cuda"
    _loud(rank, shared)
    import collc.torch as ct
    from .bench import _symmetric_memory
    offered = tuple(getattr(ct, "_QUANTS", ("fp8",)))
    quants, missing = chosen_quants(args.quant, offered)
    for q in [q for q in quants if q not in _CHECKED_QUANTS]:
        quants.remove(q)
        missing[q] = ("offered by collc, but this benchmark has no reference for its output yet, "
                      "so it is not timed")
    dtype = _DTYPES[args.dtype]
    elem = torch.tensor([], dtype=dtype).element_size()
    comms = Communicators(ct, shared, n, max(args.tokens) * max(args.hidden) * elem)
    symm = None
    if not shared and "symm" in args.paths:
        symm = _symmetric_memory()
        if not _agree(symm is not None, device):
            symm = None
    results = Results()
    for quant in quants:
        for hidden in args.hidden:
            for tokens in args.tokens:
                comm = comms.fitting(tokens * hidden * elem)
                paths = Paths(comm, quant, args, nccl=not shared, symm=symm)
                run_shape(paths, args, quant, hidden, tokens, dtype, rank, n, device, results)
                if rank == 0:
                    done = {p: results.us.get((quant, hidden, tokens, p)) for p in args.paths}
                    print(f"# {quant} hidden {hidden} tokens {tokens}: " + ", ".join(
                        f"{p} {us:.2f} us" for p, us in done.items() if us is not None),
                        flush=True)
    comms.close()
    if rank == 0:
        title = (f"AllReduce + add + RMSNorm + quantization, {n} ranks" +
                 (" sharing one GPU (smoke test: not speeds)" if shared else ""))
        table = markdown(results, args.paths, title, _notes(args, n, shared, missing))
        print(table, flush=True)
        meta = {"ranks": n, "gpus": torch.cuda.device_count(), "dtype": args.dtype,
                "shared_gpu": int(shared), "epilogue": "compiled" if args.compile_epilogue
                else "eager"}
        if args.csv:
            with open(args.csv, "w") as f:
                f.write(csv_text(results, args.paths, meta))
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(table)
        if BASELINE not in {k[3] for k in results.us}:
            print(f"# no {BASELINE} baseline measured: no ratios", flush=True)
    _loud(rank, shared)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
