"""collc on PyTorch tensors: a Communicator over a torch.distributed group (one process per GPU,
bootstrapped through the group: no rendezvous server), and the ops as torch custom ops
(torch.ops.collc.*) with fake implementations, so CUDA graphs capture them and
torch.compile(fullgraph=True) traces through them.

    import torch.distributed as dist, collc.torch as ct
    dist.init_process_group("nccl")
    comm = ct.Communicator(dist.group.WORLD)  # max_bytes: 8 MiB, 1 MiB past 24 ranks
    y = comm.all_reduce(x)

docs/python.md is the reference.
"""

import ctypes
import itertools
import weakref

import torch
import torch.distributed as dist

from . import _torch_native
from . import compile as _compile_spec
from ._allreduce_spec import allreduce_spec, default_max_bytes
from ._errors import Error
from ._world import Instance, World

_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
_OPS = ("sum", "max", "min")
# The stdlib spec each op runs. AllReduce: allreduce_spec (one-shot up to 1 MiB per call, else
# two-shot where it declares the group's rank count).
_SPECS = {"allgather": "allgather_direct", "reducescatter": "reducescatter_direct",
          "broadcast": "broadcast_direct", "reduce": "reduce_direct",
          "alltoall": "alltoall_direct", "rmsnorm": "allreduce_rmsnorm",
          "rmsnorm_fp8": "allreduce_rmsnorm_fp8",
          "rmsnorm_fp8_per_token": "allreduce_rmsnorm_fp8_per_token",
          "rmsnorm_nvfp4_swizzled": "allreduce_rmsnorm_nvfp4",
          "rmsnorm_nvfp4_linear": "allreduce_rmsnorm_nvfp4_linear"}
# The quantized outputs fused_add_rms_norm_quant makes (dsl/README.md, Quantized outputs and
# Per-token scales).
_QUANTS = ("fp8", "fp8_per_token", "nvfp4")
# NVFP4's block scales: the 128x4-swizzled layout the block-scaled GEMMs read, or row-major.
_SCALE_LAYOUTS = ("swizzled", "linear")
# The per-token spec's aux buffers are residual, residual_out, weight, scale: the scale's index.
_PER_TOKEN_SCALE_AUX = 3
# The NVFP4 specs' are residual, residual_out, weight, block_scale, global_scale.
_NVFP4_BLOCK_SCALE_AUX = 3
# NVFP4 packs two E2M1 values a byte: torch's type for such a byte where this torch has it.
_FP4_DTYPE = getattr(torch, "float4_e2m1fn_x2", torch.uint8)
# Instances a default heap holds at max_bytes (each op, type and operator used takes one).
_DEFAULT_INSTANCES = 8

_communicators = weakref.WeakValueDictionary()
_ids = itertools.count(1)


def _communicator(handle):
    comm = _communicators.get(handle)
    if comm is None:
        raise Error(f"no live collc communicator {handle}")
    return comm


# cudaStreamLegacy: torch's default stream is the legacy one, whose handle is 0, but 0 asks collc
# for its world's own stream; the legacy stream's handle for the launch is this.
_LEGACY_STREAM = 1


# Compiled variants, kept for the process: a Communicator made again (or a second one) takes
# them from here instead of compiling and proving each spec anew. Instances copy what they need.
_compiled_variants = {}


def _compiled(spec, dtype, op, nranks, root, row_length):
    key = (spec, dtype, op, nranks, root, row_length)
    compiled = _compiled_variants.get(key)
    if compiled is None:
        compiled = _compile_spec(spec, dtype=dtype, op=op, nranks=nranks, root=root,
                                 row_length=row_length)
        _compiled_variants[key] = compiled
    return compiled


def _raw_stream_function():
    """The current stream as an int for collc's C API, without making a torch.cuda.Stream object
    per call (the private binding torch's own compiled code uses), or through the public API."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is None:
        def raw(device):
            return torch.cuda.current_stream(device).cuda_stream
    return lambda device: raw(device) or _LEGACY_STREAM


def _eager():
    """True outside torch.compile's tracing: the ops may then skip torch's dispatcher."""
    compiler = getattr(torch, "compiler", None)
    return not (compiler is not None and compiler.is_compiling())


class Communicator:
    """collc over the processes of a torch.distributed group, one GPU each (this process's current
    CUDA device). Collective to create and to close, like the group's own calls.

    share_gpu=True lets ranks of the group share a GPU, for correctness only: the processes'
    contexts are time-sliced, so each flag exchange between them waits for a time slice (about
    2.3 ms on an H200). check_calls=True is the checking mode: every call first compares its op,
    type, operator, root and count with every rank's (a host exchange per call) and raises
    collc.Error on every rank, naming each rank's call, where they differ.

    Calls on one Communicator run one at a time, in the order this process issues them, whatever
    streams they are issued on: a call on another stream than the previous call's first makes
    its stream wait for the previous one. Every rank must issue the same calls in the same order.

    max_bytes is the largest call (per rank) collc takes; by default 8 MiB up to 24 ranks and
    1 MiB past them (collc._allreduce_spec.default_max_bytes says why).
    """

    def __init__(self, group=None, max_bytes=None, heap_bytes=None, share_gpu=False,
                 check_calls=False):
        if not dist.is_initialized():
            raise Error("torch.distributed is not initialized: call dist.init_process_group first")
        if max_bytes is not None and (not isinstance(max_bytes, int) or max_bytes <= 0):
            raise Error(f"max_bytes must be a positive integer, not {max_bytes!r}")
        self.group = group
        self.rank = dist.get_rank(group)
        self.nranks = dist.get_world_size(group)
        if max_bytes is None:
            max_bytes = default_max_bytes(self.nranks)
        self.device = torch.cuda.current_device()
        self.max_bytes = max_bytes
        self.share_gpu = share_gpu
        self.check_calls = check_calls
        if heap_bytes is None:
            probe = _compiled("allreduce_oneshot", "float32", "sum", self.nranks, 0, 0)
            heap_bytes = _DEFAULT_INSTANCES * probe.heap_bytes(max(1, max_bytes // 4))

        def allgather(data):
            gathered = [None] * self.nranks
            dist.all_gather_object(gathered, data, group=group)
            return gathered

        # max_bytes picks the AllReduce's spec: ranks that disagree would run different kernels.
        every_max_bytes = allgather(max_bytes)
        if any(value != max_bytes for value in every_max_bytes):
            raise Error("max_bytes must be the same on every rank: " +
                        ", ".join(f"rank {q} passed {value}"
                                  for q, value in enumerate(every_max_bytes)))
        self.world = World.process(self.rank, self.nranks, self.device, allgather, heap_bytes,
                                   share_gpu=share_gpu, check_calls=check_calls)
        self.heap_bytes = self.world.heap_bytes
        self._instances = {}
        from . import _capi
        self._launch_function = _capi.runtime.collc_launch
        self._status_check = _capi.check
        self._current_stream = _raw_stream_function()
        self._last_stream = None  # the stream of the previous call (see _order)
        self.handle = next(_ids)
        _communicators[self.handle] = self
        # The path of this process's calls: "native" (the C++ kernels) or "python".
        self.host_path = host_path
        if _native is not None:
            _native.collc_torch_ops_register(self.handle, self.rank, self.nranks, self.device,
                                             self.max_bytes)
            weakref.finalize(self, _native.collc_torch_ops_forget, self.handle)

    # ---- which tensors collc takes
    def should_use(self, t, kind="allreduce"):
        """Whether collc takes `t` for `kind` (else use NCCL): a contiguous CUDA tensor of this
        communicator's GPU, float32/float16/bfloat16, 16-byte aligned, within max_bytes."""
        return self._refusal(t, kind) is None

    def _refusal(self, t, kind):
        if not isinstance(t, torch.Tensor):
            return f"not a tensor: {type(t).__name__}"
        if not t.is_cuda or t.get_device() != self.device:
            return f"a tensor on {t.device}; this communicator runs on cuda:{self.device}"
        if t.dtype not in _DTYPES:
            return f"dtype {t.dtype}; collc takes float32, float16 and bfloat16"
        if not t.is_contiguous():
            return "a non-contiguous tensor"
        if t.data_ptr() % 16:
            return "a tensor whose data is not 16-byte aligned"
        per_rank = t.numel() // self.nranks if kind in ("reducescatter", "alltoall") else t.numel()
        if per_rank * t.element_size() > self.max_bytes:
            return (f"{per_rank * t.element_size()} bytes per call; this communicator was made "
                    f"for at most {self.max_bytes} (max_bytes)")
        if kind in ("reducescatter", "alltoall") and t.numel() % self.nranks:
            return f"{t.numel()} elements do not split into {self.nranks} equal parts"
        return None

    def _check(self, t, kind):
        why = self._refusal(t, kind)
        if why:
            raise Error(f"collc cannot take this tensor for {kind}: {why} (fall back to NCCL; "
                        "should_use() tells beforehand)")

    # ---- instances, made on first use
    def _instance(self, kind, dtype, op="sum", root=0, row_length=0):
        key = (kind, dtype, op, root, row_length)
        instance = self._instances.get(key)
        if instance is not None:
            return instance
        if self.world is None:
            raise Error("this communicator was closed")
        if torch.cuda.is_current_stream_capturing():
            raise Error(f"the first {kind} call of {dtype}, op {op}, root {root} is being "
                        "captured: its first call makes its kernel ready (collectively, with "
                        "allocations), which a CUDA graph capture cannot hold; call it once "
                        "before capturing")
        elem = {"float32": 4, "float16": 2, "bfloat16": 2}[dtype]
        max_count = max(1, self.max_bytes // elem)
        if kind == "allreduce":
            spec = allreduce_spec(self.max_bytes, self.nranks)
        else:
            spec = _SPECS[kind]
        compiled = _compiled(spec, dtype, op, self.nranks, root, row_length)
        try:
            instance = Instance(self.world, compiled, max_count)
        except Error as error:
            raise Error(f"{error} (collc's heap holds {self.heap_bytes} bytes per rank: pass "
                        "a larger heap_bytes to Communicator)", error.status) from None
        self._instances[key] = instance
        return instance

    def _order(self, stream):
        """The rule for streams: calls run in issue order. A call on a stream other than the
        previous call's makes this stream wait for everything issued on that one so far (an
        event), so two calls of this communicator never run at once, and ranks that issue the same
        calls in the same order never wait on each other in a cycle. A graph capture begins a
        sequence of its own: no event links captured and uncaptured work."""
        last = self._last_stream
        self._last_stream = stream
        if last is None:
            return
        if self._capturing(last) != torch.cuda.is_current_stream_capturing():
            return
        # torch's streams come from pools that are never freed, so `last` is still a stream.
        previous = (torch.cuda.default_stream(self.device) if last == _LEGACY_STREAM
                    else torch.cuda.ExternalStream(last, device=self.device))
        event = torch.cuda.Event()
        event.record(previous)
        torch.cuda.current_stream(self.device).wait_event(event)

    def _capturing(self, stream):
        """Whether `stream` is being captured. The legacy stream never is, and is not asked: CUDA
        may refuse to look at it while another stream captures."""
        if stream == _LEGACY_STREAM:
            return False
        with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=self.device)):
            return torch.cuda.is_current_stream_capturing()

    def _launch(self, instance, inp, out, count, aux=()):
        stream = self._current_stream(self.device)
        if stream != self._last_stream:
            self._order(stream)
        if aux:
            array = (ctypes.c_void_p * len(aux))(*[a.data_ptr() for a in aux])
            status = self._launch_function(instance._handle, self.rank, inp.data_ptr(),
                                           out.data_ptr(), array, len(aux), count, stream)
        else:
            status = self._launch_function(instance._handle, self.rank, inp.data_ptr(),
                                           out.data_ptr(), None, 0, count, stream)
        if status:
            self._status_check(status)

    # ---- the collectives (on the current stream)
    def all_reduce(self, x, op="sum", out=None):
        """The reduction over ranks of x. out=x reduces in place."""
        if out is None:
            if _eager():
                return _all_reduce_eager(self, x, op)
            return torch.ops.collc.all_reduce(x, self.handle, op)
        if out is x:
            if _eager():
                _all_reduce_inplace_eager(self, x, op)
            else:
                torch.ops.collc.all_reduce_(x, self.handle, op)
            return x
        out.copy_(self.all_reduce(x, op))
        return out

    def all_gather(self, x):
        """Every rank's x, concatenated in rank order (NCCL's layout)."""
        if _eager():
            return _all_gather_eager(self, x)
        return torch.ops.collc.all_gather(x, self.handle)

    def reduce_scatter(self, x, op="sum"):
        """Rank r's part of the reduction of x over ranks: block r of nranks equal blocks."""
        if _eager():
            return _reduce_scatter_eager(self, x, op)
        return torch.ops.collc.reduce_scatter(x, self.handle, op)

    def broadcast(self, x, root=0):
        """Rank root's x on every rank."""
        if _eager():
            return _broadcast_eager(self, x, root)
        return torch.ops.collc.broadcast(x, self.handle, root)

    def reduce(self, x, root=0, op="sum"):
        """The reduction over ranks on `root`; other ranks' results are unspecified."""
        if _eager():
            return _reduce_eager(self, x, root, op)
        return torch.ops.collc.reduce(x, self.handle, root, op)

    def all_to_all(self, x):
        """Block q of rank r's x goes to block r of rank q's result."""
        if _eager():
            return _all_to_all_eager(self, x)
        return torch.ops.collc.all_to_all(x, self.handle)

    def fused_add_rms_norm(self, x, residual, weight, eps=1e-6):
        """(rmsnorm(allreduce(x) + residual) * weight, allreduce(x) + residual), per row of
        weight.numel() elements, in one kernel."""
        if _eager():
            return _fused_add_rms_norm_eager(self, x, residual, weight, eps)
        return torch.ops.collc.fused_add_rms_norm(x, residual, weight, self.handle, eps)

    def fused_add_rms_norm_quant(self, x, residual, weight, eps=1e-6, quant="fp8", scale=None,
                                 scale_layout=None):
        """fused_add_rms_norm whose normalized rows are stored quantized for the next GEMM, in
        one kernel: returns (q, scales, allreduce(x) + residual). quant="fp8": q is
        torch.float8_e4m3fn, e4m3(rmsnorm(...) * weight / scale[0]) rounded to nearest even and
        saturating at +-448, with the caller's per-tensor scale (a float32 tensor of one element
        on this GPU), which is returned as given. quant="fp8_per_token": the kernel computes each
        row's scale, max(amax / 448, 1 / (448 * 512)), and returns them as a float32 tensor of
        [rows, 1]; q is e4m3(row / its scale). It takes no scale=. quant="nvfp4": scale= is the
        global scale GS (float32, one element); each block of 16 elements of a row gets the scale
        SF = e4m3(GS * amax / 6) and its elements e2m1(x * GS / SF); q is [rows, hidden / 2]
        bytes of two E2M1 values (torch.float4_e2m1fn_x2, or uint8 where torch lacks it), scales
        torch.float8_e4m3fn, in scale_layout "swizzled" (the default: the 128x4 tiles the
        block-scaled GEMMs read, [round_up(rows, 128), round_up(hidden / 16, 4)], padding 0) or
        "linear" ([rows, hidden / 16])."""
        if quant not in _QUANTS:
            raise Error(f"quant={quant!r} is not one collc makes: {', '.join(_QUANTS)}")
        if quant == "nvfp4":
            layout = "swizzled" if scale_layout is None else scale_layout
            if layout not in _SCALE_LAYOUTS:
                raise Error(f"scale_layout={scale_layout!r} is not one collc makes: "
                            f"{', '.join(_SCALE_LAYOUTS)}")
            if scale is None:
                raise Error("quant='nvfp4' needs scale=, the global scale: a float32 tensor of "
                            "one element")
            return torch.ops.collc.fused_add_rms_norm_nvfp4(x, residual, weight, scale,
                                                            self.handle, eps, layout)
        if scale_layout is not None:
            raise Error(f"scale_layout= is NVFP4's (quant='nvfp4'); quant={quant!r} takes none")
        if quant == "fp8_per_token":
            if scale is not None:
                raise Error("quant='fp8_per_token' computes each row's scale and returns it: "
                            "pass no scale=")
            return torch.ops.collc.fused_add_rms_norm_fp8_per_token(x, residual, weight,
                                                                    self.handle, eps)
        if scale is None:
            raise Error("quant='fp8' needs scale=, a float32 tensor of one element")
        q, residual_out = torch.ops.collc.fused_add_rms_norm_fp8(x, residual, weight, scale,
                                                                self.handle, eps)
        return q, scale, residual_out

    # ---- errors and lifetime
    def synchronize(self):
        """Waits, bounded by the watchdog's timeout, for this communicator's calls (the stream of
        its last call, which the stream rule makes wait for every earlier one, and the current
        stream, where graphs of them replay), then raises
        collc.Error if any call waited too long for a peer: the error names the rank it waited
        for and any peer process that exited. After one, the communicator cannot be used again
        (its ranks are out of step): close it."""
        last = (self._last_stream if _native is None
                else _native.collc_torch_ops_last_stream(self.handle))
        streams = {self._current_stream(self.device), last or _LEGACY_STREAM}
        for instance in list(self._instances.values()):
            for stream in streams:  # the current one too: graphs replay there
                instance.synchronize(stream)

    def close(self):
        """Frees collc's memory of this communicator. Collective: every rank closes it (the
        ranks wait, bounded, for each other, so that no peer still writes into this rank's
        memory). Nothing launched through it may still run or be replayed from a graph."""
        if _native is not None:  # first: the C++ kernels forget the instances closed below
            _native.collc_torch_ops_close(self.handle)
        for instance in self._instances.values():
            instance.close()
        self._instances.clear()
        if self.world is not None:
            self.world.close()
            self.world = None
        _communicators.pop(self.handle, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- the implementations, shared by the eager path and the custom ops
def _check_op(op):
    if op not in _OPS:
        raise Error(f"unknown op {op!r}: use 'sum', 'max' or 'min'")


def _all_reduce_impl(c, x, op):
    _check_op(op)
    c._check(x, "allreduce")
    out = torch.empty_like(x)
    if x.numel():
        c._launch(c._instance("allreduce", _DTYPES[x.dtype], op), x, out, x.numel())
    return out


def _all_reduce_inplace_impl(c, x, op):
    _check_op(op)
    c._check(x, "allreduce")
    if not x.numel():
        return
    instance = c._instance("allreduce", _DTYPES[x.dtype], op)
    if instance.compiled.in_place:
        c._launch(instance, x, x, x.numel())
    else:  # the proof does not allow it: through a copy
        x.copy_(_all_reduce_impl(c, x, op))


def _all_gather_impl(c, x):
    c._check(x, "allgather")
    out = x.new_empty((c.nranks * x.numel(),))
    if x.numel():
        c._launch(c._instance("allgather", _DTYPES[x.dtype]), x, out, x.numel())
    return out


def _reduce_scatter_impl(c, x, op):
    _check_op(op)
    c._check(x, "reducescatter")
    count = x.numel() // c.nranks
    out = x.new_empty((count,))
    if count:
        c._launch(c._instance("reducescatter", _DTYPES[x.dtype], op), x, out, count)
    return out


def _check_root(c, root):
    if not isinstance(root, int) or not 0 <= root < c.nranks:
        raise Error(f"root {root!r}: a rank of 0..{c.nranks - 1}")


def _broadcast_impl(c, x, root):
    _check_root(c, root)
    c._check(x, "broadcast")
    out = torch.empty_like(x)
    if x.numel():
        c._launch(c._instance("broadcast", _DTYPES[x.dtype], root=root), x, out, x.numel())
    return out


def _reduce_impl(c, x, root, op):
    _check_op(op)
    _check_root(c, root)
    c._check(x, "reduce")
    out = torch.empty_like(x)
    if x.numel():
        c._launch(c._instance("reduce", _DTYPES[x.dtype], op, root=root), x, out, x.numel())
    return out


def _all_to_all_impl(c, x):
    c._check(x, "alltoall")
    out = torch.empty_like(x)
    count = x.numel() // c.nranks
    if count:
        c._launch(c._instance("alltoall", _DTYPES[x.dtype]), x, out, count)
    return out


def _fused_add_rms_norm_impl(c, x, residual, weight, eps):
    hidden = _check_fused_rows(c, x, residual, weight, eps)
    out = torch.empty_like(x)
    residual_out = torch.empty_like(residual)
    if x.numel():
        instance = c._instance("rmsnorm", _DTYPES[x.dtype], row_length=hidden)
        c._launch(instance, x, out, x.numel(), aux=(residual, residual_out, weight))
    return out, residual_out


def _check_fused_rows(c, x, residual, weight, eps):
    """The rows fused_add_rms_norm and its quantized form take; returns the row length."""
    c._check(x, "allreduce")
    for t, what in ((residual, "residual"), (weight, "weight")):
        if t.dtype != x.dtype or not t.is_contiguous() or t.device != x.device:
            raise Error(f"{what} must be a contiguous {x.dtype} tensor on {x.device}")
    hidden = weight.numel()
    if residual.numel() != x.numel() or hidden == 0 or x.numel() % hidden:
        raise Error(f"x and residual must hold the same whole rows of weight.numel() = {hidden} "
                    f"elements (x: {x.numel()}, residual: {residual.numel()})")
    if eps != 1e-6:
        raise Error("this version compiles rmsnorm with eps = 1e-6 only")
    return hidden


def _check_scale(scale, x, what="scale"):
    if (not isinstance(scale, torch.Tensor) or scale.dtype != torch.float32 or scale.numel() != 1
            or scale.device != x.device):
        raise Error(f"{what} must be a float32 tensor of one element on {x.device}")


def _fused_add_rms_norm_fp8_impl(c, x, residual, weight, scale, eps):
    hidden = _check_fused_rows(c, x, residual, weight, eps)
    _check_scale(scale, x)
    out = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
    residual_out = torch.empty_like(residual)
    if x.numel():
        instance = c._instance("rmsnorm_fp8", _DTYPES[x.dtype], row_length=hidden)
        c._launch(instance, x, out, x.numel(), aux=(residual, residual_out, weight, scale))
    return out, residual_out


def _fused_add_rms_norm_fp8_per_token_impl(c, x, residual, weight, eps):
    hidden = _check_fused_rows(c, x, residual, weight, eps)
    tokens = x.numel() // hidden
    out = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
    scales = torch.empty((tokens, 1), dtype=torch.float32, device=x.device)
    residual_out = torch.empty_like(residual)
    if x.numel():
        instance = c._instance("rmsnorm_fp8_per_token", _DTYPES[x.dtype], row_length=hidden)
        # The kernel writes as many scales as the spec declares: never past this tensor.
        declared = instance.compiled.aux_count(_PER_TOKEN_SCALE_AUX, x.numel())
        if declared != tokens:
            raise Error(f"the per-token spec writes {declared} scales for {tokens} rows of "
                        f"{hidden} elements")
        c._launch(instance, x, out, x.numel(), aux=(residual, residual_out, weight, scales))
    return out, scales, residual_out


def _round_up(a, b):
    return -(-a // b) * b


def _nvfp4_shapes(tokens, hidden, layout):
    """(packed values, block scales) of `tokens` rows of `hidden` elements quantized to NVFP4."""
    blocks = hidden // 16
    scales = ((_round_up(tokens, 128), _round_up(blocks, 4)) if layout == "swizzled"
              else (tokens, blocks))
    return (tokens, hidden // 2), scales


def _nvfp4_instance(c, dtype, hidden, layout):
    kind = f"rmsnorm_nvfp4_{layout}"
    try:
        return c._instance(kind, dtype, row_length=hidden)
    except Error as error:
        if "the standard library has no spec of that name" not in str(error):
            raise
        raise Error(f"quant='nvfp4' with scale_layout={layout!r} runs the stdlib spec "
                    f"{_SPECS[kind]}, which this collc library does not have", error.status) \
            from None


def _check_nvfp4_declared(compiled, layout, tokens, hidden, scale_count):
    """The kernel writes what the spec declares: never past the tensors the op made."""
    declared = (compiled.output_dtype, compiled.aux_dtypes[_NVFP4_BLOCK_SCALE_AUX:],
                compiled.aux_count(_NVFP4_BLOCK_SCALE_AUX, tokens * hidden))
    if declared != ("float4_e2m1fn_x2", ["float8_e4m3fn", "float32"], scale_count):
        raise Error(f"the stdlib spec {_SPECS['rmsnorm_nvfp4_' + layout]} declares an output of "
                    f"{declared[0]} and scales of {declared[1]}, {declared[2]} block scales for "
                    f"{tokens} rows of {hidden} elements; expected float4_e2m1fn_x2, "
                    f"[float8_e4m3fn, float32] and {scale_count}")


def _fused_add_rms_norm_nvfp4_impl(c, x, residual, weight, global_scale, eps, layout):
    if layout not in _SCALE_LAYOUTS:
        raise Error(f"scale_layout={layout!r} is not one collc makes: {', '.join(_SCALE_LAYOUTS)}")
    if isinstance(weight, torch.Tensor) and weight.numel() % 16:
        raise Error(f"quant='nvfp4' quantizes rows in blocks of 16 elements: weight.numel() = "
                    f"{weight.numel()} is not a multiple of 16")
    hidden = _check_fused_rows(c, x, residual, weight, eps)
    _check_scale(global_scale, x, "scale (the global scale)")
    tokens = x.numel() // hidden
    q_shape, scale_shape = _nvfp4_shapes(tokens, hidden, layout)
    q = torch.empty(q_shape, dtype=torch.uint8, device=x.device).view(_FP4_DTYPE)
    # The GEMM reads whole 128x4 tiles: their padding must be 0. The swizzled spec writes each
    # row's padding blocks as 0 but no padding row: those are zeroed here.
    padding_rows = layout == "swizzled" and tokens % 128 != 0
    scales = (torch.zeros if padding_rows else torch.empty)(
        scale_shape, dtype=torch.uint8, device=x.device).view(torch.float8_e4m3fn)
    residual_out = torch.empty_like(residual)
    if x.numel():
        instance = _nvfp4_instance(c, _DTYPES[x.dtype], hidden, layout)
        _check_nvfp4_declared(instance.compiled, layout, tokens, hidden, scales.numel())
        c._launch(instance, x, q, x.numel(),
                  aux=(residual, residual_out, weight, scales, global_scale))
    return q, scales, residual_out


# ---- the custom ops
_LIB = torch.library.Library("collc", "DEF")
_LIB.define("all_reduce(Tensor x, int comm, str op) -> Tensor")
_LIB.define("all_reduce_(Tensor(a!) x, int comm, str op) -> ()")
_LIB.define("all_gather(Tensor x, int comm) -> Tensor")
_LIB.define("reduce_scatter(Tensor x, int comm, str op) -> Tensor")
_LIB.define("broadcast(Tensor x, int comm, int root) -> Tensor")
_LIB.define("reduce(Tensor x, int comm, int root, str op) -> Tensor")
_LIB.define("all_to_all(Tensor x, int comm) -> Tensor")
_LIB.define("fused_add_rms_norm(Tensor x, Tensor residual, Tensor weight, int comm, float eps) "
            "-> (Tensor, Tensor)")
_LIB.define("fused_add_rms_norm_fp8(Tensor x, Tensor residual, Tensor weight, Tensor scale, "
            "int comm, float eps) -> (Tensor, Tensor)")
_LIB.define("fused_add_rms_norm_fp8_per_token(Tensor x, Tensor residual, Tensor weight, "
            "int comm, float eps) -> (Tensor, Tensor, Tensor)")
_LIB.define("fused_add_rms_norm_nvfp4(Tensor x, Tensor residual, Tensor weight, "
            "Tensor global_scale, int comm, float eps, str scale_layout) "
            "-> (Tensor, Tensor, Tensor)")


def _nranks(handle):
    return _communicator(handle).nranks


# ---- the ops' CUDA kernels: C++ (libcollc_torch.so) where it loads under this torch, else Python
def _python_kernels():
    def all_reduce(x, comm, op):
        return _all_reduce_impl(_communicator(comm), x, op)

    def all_reduce_(x, comm, op):
        _all_reduce_inplace_impl(_communicator(comm), x, op)

    def all_gather(x, comm):
        return _all_gather_impl(_communicator(comm), x)

    def reduce_scatter(x, comm, op):
        return _reduce_scatter_impl(_communicator(comm), x, op)

    def broadcast(x, comm, root):
        return _broadcast_impl(_communicator(comm), x, root)

    def reduce(x, comm, root, op):
        return _reduce_impl(_communicator(comm), x, root, op)

    def all_to_all(x, comm):
        return _all_to_all_impl(_communicator(comm), x)

    def fused_add_rms_norm(x, residual, weight, comm, eps):
        return _fused_add_rms_norm_impl(_communicator(comm), x, residual, weight, eps)

    for kernel in (all_reduce, all_reduce_, all_gather, reduce_scatter, broadcast, reduce,
                   all_to_all, fused_add_rms_norm):
        _LIB.impl(kernel.__name__, kernel, "CUDA")


def _fused_add_rms_norm_fp8_kernel(x, residual, weight, scale, comm, eps):
    return _fused_add_rms_norm_fp8_impl(_communicator(comm), x, residual, weight, scale, eps)


def _fused_add_rms_norm_fp8_per_token_kernel(x, residual, weight, comm, eps):
    return _fused_add_rms_norm_fp8_per_token_impl(_communicator(comm), x, residual, weight, eps)


def _fused_add_rms_norm_nvfp4_kernel(x, residual, weight, global_scale, comm, eps,
                                     scale_layout):
    return _fused_add_rms_norm_nvfp4_impl(_communicator(comm), x, residual, weight, global_scale,
                                          eps, scale_layout)


# The C++ kernels (torchops/) do not include the quantized ops: they run on the Python path on both.
_LIB.impl("fused_add_rms_norm_fp8", _fused_add_rms_norm_fp8_kernel, "CUDA")
_LIB.impl("fused_add_rms_norm_fp8_per_token", _fused_add_rms_norm_fp8_per_token_kernel, "CUDA")
_LIB.impl("fused_add_rms_norm_nvfp4", _fused_add_rms_norm_nvfp4_kernel, "CUDA")


def _make_instance(comm, kind, dtype, op, root, row_length, instance, in_place, status,
                   status_capacity, message, message_capacity):
    """The C++ kernels' instance factory: Communicator._instance, on a call's first use of a
    kind, type and operator (collective, and refused inside a graph capture, as in Python)."""
    try:
        made = _communicator(comm)._instance(kind.decode(), dtype.decode(), op.decode(), root,
                                             row_length)
        instance[0] = made._handle.value
        in_place[0] = int(made.compiled.in_place)
        return 0
    except Error as error:
        name, text = error.status, str(error)
    except BaseException as error:  # nothing may leave a ctypes callback
        name, text = "COLLC_INTERNAL", f"{type(error).__name__}: {error}"
    _torch_native.write_c_string(status, status_capacity, name)
    _torch_native.write_c_string(message, message_capacity, text)
    return 1


def _load_native():
    from . import _capi
    library, reason = _torch_native.load(torch.__version__, _capi.where)
    if library is None and _torch_native.choice() == "native":
        raise Error(f"COLLC_HOST_PATH=native, but collc's C++ torch ops are not available: "
                    f"{reason}", "COLLC_UNSUPPORTED")
    if library is not None:
        library.collc_torch_ops_set_instance_factory(_instance_factory)
    return library, reason


_instance_factory = _torch_native.INSTANCE_FACTORY(_make_instance)  # alive for the process
_native, native_reason = _load_native()
# Which path runs the ops in this process: "native" (C++ kernels, torch's dispatcher straight to
# collc_launch) or "python" (native_reason says why).
host_path = "python" if _native is None else "native"


def _native_kernel(name):
    """The C++ kernel's entry without OpOverload's Python frame."""
    overload = getattr(torch.ops.collc, name).default
    return getattr(overload, "_op", overload)


if _native is None:
    _python_kernels()
    _all_reduce_eager = _all_reduce_impl
    _all_reduce_inplace_eager = _all_reduce_inplace_impl
    _all_gather_eager = _all_gather_impl
    _reduce_scatter_eager = _reduce_scatter_impl
    _broadcast_eager = _broadcast_impl
    _reduce_eager = _reduce_impl
    _all_to_all_eager = _all_to_all_impl
    _fused_add_rms_norm_eager = _fused_add_rms_norm_impl
else:
    # Eager calls go straight to the C++ kernels; their failures become collc.Error again.
    _ALL_REDUCE = _native_kernel("all_reduce")
    _ALL_REDUCE_ = _native_kernel("all_reduce_")
    _ALL_GATHER = _native_kernel("all_gather")
    _REDUCE_SCATTER = _native_kernel("reduce_scatter")
    _BROADCAST = _native_kernel("broadcast")
    _REDUCE = _native_kernel("reduce")
    _ALL_TO_ALL = _native_kernel("all_to_all")
    _FUSED_ADD_RMS_NORM = _native_kernel("fused_add_rms_norm")

    _UNSET = object()

    def _failure(error, c, kind, x, op=_UNSET, root=_UNSET):
        """The collc.Error a C++ kernel raised; where torch refused an argument's type before the
        kernel ran, the Python path's refusal if it has one (an unknown op, a root that is no
        rank, an x that is no tensor), else torch's error."""
        mapped = _torch_native.error_from(error)
        if mapped is error:
            if op is not _UNSET:
                _check_op(op)
            if root is not _UNSET:
                _check_root(c, root)
            c._check(x, kind)
        return mapped

    def _all_reduce_eager(c, x, op):
        try:
            return _ALL_REDUCE(x, c.handle, op)
        except RuntimeError as error:
            raise _failure(error, c, "allreduce", x, op=op) from None

    def _all_reduce_inplace_eager(c, x, op):
        try:
            _ALL_REDUCE_(x, c.handle, op)
        except RuntimeError as error:
            raise _failure(error, c, "allreduce", x, op=op) from None

    def _all_gather_eager(c, x):
        try:
            return _ALL_GATHER(x, c.handle)
        except RuntimeError as error:
            raise _failure(error, c, "allgather", x) from None

    def _reduce_scatter_eager(c, x, op):
        try:
            return _REDUCE_SCATTER(x, c.handle, op)
        except RuntimeError as error:
            raise _failure(error, c, "reducescatter", x, op=op) from None

    def _broadcast_eager(c, x, root):
        try:
            return _BROADCAST(x, c.handle, root)
        except RuntimeError as error:
            raise _failure(error, c, "broadcast", x, root=root) from None

    def _reduce_eager(c, x, root, op):
        try:
            return _REDUCE(x, c.handle, root, op)
        except RuntimeError as error:
            raise _failure(error, c, "reduce", x, op=op, root=root) from None

    def _all_to_all_eager(c, x):
        try:
            return _ALL_TO_ALL(x, c.handle)
        except RuntimeError as error:
            raise _failure(error, c, "alltoall", x) from None

    def _fused_add_rms_norm_eager(c, x, residual, weight, eps):
        try:
            return _FUSED_ADD_RMS_NORM(x, residual, weight, c.handle, eps)
        except RuntimeError as error:
            raise _failure(error, c, "allreduce", x) from None


# Fake (meta) implementations: shapes only, for torch.compile and graph tracing.
@torch.library.register_fake("collc::all_reduce")
def _all_reduce_fake(x, comm, op):
    return torch.empty_like(x)


@torch.library.register_fake("collc::all_reduce_")
def _all_reduce__fake(x, comm, op):
    return None


@torch.library.register_fake("collc::all_gather")
def _all_gather_fake(x, comm):
    return x.new_empty((_nranks(comm) * x.numel(),))


@torch.library.register_fake("collc::reduce_scatter")
def _reduce_scatter_fake(x, comm, op):
    return x.new_empty((x.numel() // _nranks(comm),))


@torch.library.register_fake("collc::broadcast")
def _broadcast_fake(x, comm, root):
    return torch.empty_like(x)


@torch.library.register_fake("collc::reduce")
def _reduce_fake(x, comm, root, op):
    return torch.empty_like(x)


@torch.library.register_fake("collc::all_to_all")
def _all_to_all_fake(x, comm):
    return torch.empty_like(x)


@torch.library.register_fake("collc::fused_add_rms_norm")
def _fused_add_rms_norm_fake(x, residual, weight, comm, eps):
    return torch.empty_like(x), torch.empty_like(residual)


@torch.library.register_fake("collc::fused_add_rms_norm_fp8")
def _fused_add_rms_norm_fp8_fake(x, residual, weight, scale, comm, eps):
    return torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device), \
        torch.empty_like(residual)


@torch.library.register_fake("collc::fused_add_rms_norm_fp8_per_token")
def _fused_add_rms_norm_fp8_per_token_fake(x, residual, weight, comm, eps):
    tokens = x.numel() // weight.numel()
    return (torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device),
            torch.empty((tokens, 1), dtype=torch.float32, device=x.device),
            torch.empty_like(residual))


@torch.library.register_fake("collc::fused_add_rms_norm_nvfp4")
def _fused_add_rms_norm_nvfp4_fake(x, residual, weight, global_scale, comm, eps, scale_layout):
    hidden = weight.numel()
    q_shape, scale_shape = _nvfp4_shapes(x.numel() // hidden if hidden else 0, hidden,
                                         scale_layout)
    return (torch.empty(q_shape, dtype=_FP4_DTYPE, device=x.device),
            torch.empty(scale_shape, dtype=torch.float8_e4m3fn, device=x.device),
            torch.empty_like(residual))
