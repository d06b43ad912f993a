"""collc.compile: one variant of a spec, compiled and proved (no GPU needed)."""

import ctypes
import os

from ._errors import Error

_KIND_NAMES = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall"]
_DTYPE_NAMES = ["float32", "float16", "bfloat16"]


def _choice(table, value, what):
    if value not in table:
        names = ", ".join(repr(k) for k in table if k is not None)
        raise Error(f"unknown {what} {value!r}: use one of {names}")
    return table[value]


def dtype_name(value):
    """The element type's name as collc.Compiled reports it ("bfloat16") from any spelling collc
    takes: float32/f32/float, float16/f16/half, bfloat16/bf16 (any case), or a torch dtype
    (torch.bfloat16), recognized without importing torch."""
    from . import _capi
    name = value
    if type(value).__name__ == "dtype" and type(value).__module__ == "torch":
        name = str(value).split(".", 1)[-1]  # "torch.bfloat16"; torch.half prints torch.float16
    if isinstance(name, str):
        lowered = name.lower()
        lowered = _capi.DTYPE_ALIASES.get(lowered, lowered)
        if lowered in _capi.DTYPES:
            return lowered
    names = ", ".join(list(_capi.DTYPES) + list(_capi.DTYPE_ALIASES))
    raise Error(f"unknown dtype {value!r}: use one of {names}, or a torch dtype of these")


def _positive(value, what, allow_zero=True):
    if not isinstance(value, int) or value < 0 or (value == 0 and not allow_zero):
        raise Error(f"{what} must be a {'non-negative' if allow_zero else 'positive'} integer, "
                    f"not {value!r}")
    return value


class Compiled:
    """One compiled variant. Owns its C handle; `close()` or garbage collection frees it."""

    def __init__(self, handle, spec):
        self._handle = handle
        self.spec = spec
        from . import _capi
        kind, dtype, nranks, naux = (ctypes.c_int() for _ in range(4))
        _capi.call("collc_compiled_info", handle, ctypes.byref(kind), ctypes.byref(dtype),
                   ctypes.byref(nranks), ctypes.byref(naux))
        self.kind = _KIND_NAMES[kind.value]
        self.dtype = _DTYPE_NAMES[dtype.value]
        self.nranks = nranks.value
        self.naux = naux.value
        # Each buffer's element type (torch's name): the variant's dtype, or one the spec fixes
        # (a quantized output "float8_e4m3fn", its scale "float32").
        self.output_dtype = self._buffer_type(handle, -1)
        self.aux_dtypes = [self._buffer_type(handle, k) for k in range(self.naux)]
        self.in_place = bool(_capi.runtime.collc_compiled_in_place(handle))
        self.kernel_name = _capi.runtime.collc_compiled_kernel_name(handle).decode()

    @staticmethod
    def _buffer_type(handle, buffer):
        from . import _capi
        value = ctypes.c_int()
        _capi.call("collc_compiled_buffer_type", handle, buffer, ctypes.byref(value))
        return _capi.ELEMENT_TYPES[value.value]

    @property
    def handle(self):
        if self._handle is None:
            raise Error("this compiled collective was closed")
        return self._handle

    @property
    def cuda_source(self):
        from . import _capi
        return _capi.runtime.collc_compiled_cuda_source(self.handle).decode()

    def buffer_counts(self, count):
        """(input elements, output elements) of each rank for a call of `count` elements."""
        from . import _capi
        _positive(count, "count")
        inp, out = ctypes.c_uint64(), ctypes.c_uint64()
        _capi.call("collc_compiled_buffer_counts", self.handle, count, ctypes.byref(inp),
                   ctypes.byref(out))
        return inp.value, out.value

    def aux_count(self, buffer, count):
        """Elements of aux buffer `buffer` (0 .. naux - 1) for a call of `count` elements: its
        declared size (a per-token scale of an FP8 output holds count / row length)."""
        from . import _capi
        _positive(count, "count")
        elems = ctypes.c_uint64()
        _capi.call("collc_compiled_aux_count", self.handle, buffer, count, ctypes.byref(elems))
        return elems.value

    def heap_bytes(self, max_count):
        """Symmetric heap per rank one instance of this variant takes for calls of up to
        `max_count` elements."""
        from . import _capi
        _positive(max_count, "max_count", allow_zero=False)
        bytes_ = ctypes.c_uint64()
        _capi.call("collc_compiled_heap_bytes", self.handle, max_count, ctypes.byref(bytes_))
        return bytes_.value

    def close(self):
        if self._handle is not None:
            from . import _capi
            _capi.runtime.collc_compiled_destroy(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass

    def __repr__(self):
        return (f"collc.Compiled({self.spec!r}, kind={self.kind}, dtype={self.dtype}, "
                f"nranks={self.nranks}, kernel={self.kernel_name})")


def _whole_stores(value):
    if value is None:
        return -1  # the spec's
    if isinstance(value, bool) or value in (0, 1):
        return int(value)
    raise Error(f"whole_stores must be None (the spec's), True, False, 0 or 1, not {value!r}")


def compile(spec, *, dtype="float32", op="sum", nranks=2, root=0, sync=None, row_length=0,
            blocks=0, threads=0, vector_bytes=0, unroll=0, whole_stores=None, work_limit=0):
    """Compiles `spec` (a stdlib name such as "allreduce_oneshot", a path to a .coll file, or the
    text of a spec) for one variant, proving it first. A wrong spec raises collc.Error with the
    diagnostics (file:line:col: error: ...).

    dtype: "float32", "float16" or "bfloat16", the collc tool's "f32", "f16", "bf16", "float",
    "half", or a torch dtype (torch.bfloat16). op: "sum", "max" or "min".

    The launch shape, as `collc emit` takes it (0 or None: the spec's `launch`): blocks per rank,
    threads per block, vector_bytes per memory operation (2, 4, 8 or 16, `--vector`), unroll
    (vectors per thread per iteration), whole_stores (True: every whole vector stored with one
    instruction of its width).

    work_limit: steps of work the proofs may take (0: collc's default, 50,000,000); a larger one
    proves what the default refuses as too costly, in the time it takes (`--work-limit`)."""
    from . import _capi
    if not isinstance(spec, str) or not spec:
        raise Error(f"spec must be a stdlib name, a path or spec text, not {spec!r}")
    options = _capi.CompileOptions()
    _capi.call("collc_compile_options_init_sized", ctypes.byref(options), ctypes.sizeof(options))
    options.dtype = _capi.DTYPES[dtype_name(dtype)]
    options.op = _choice(_capi.OPS, op, "op")
    options.sync = _choice(_capi.SYNCS, sync, "sync")
    options.nranks = _positive(nranks, "nranks", allow_zero=False)
    options.root = _positive(root, "root")
    options.row_length = _positive(row_length, "row_length")
    options.blocks = _positive(blocks, "blocks")
    options.threads = _positive(threads, "threads")
    options.vector_bytes = _positive(vector_bytes, "vector_bytes")
    options.unroll = _positive(unroll, "unroll")
    options.whole_stores = _whole_stores(whole_stores)
    options.work_limit = _positive(work_limit, "work_limit")
    handle = ctypes.c_void_p()
    is_text = "\n" in spec or spec.lstrip().startswith("collective ")
    if is_text:
        _capi.call("collc_compile_text", b"<text>", spec.encode(), ctypes.byref(options),
                   ctypes.byref(handle))
    else:
        _capi.call("collc_compile", os.fspath(spec).encode(), ctypes.byref(options),
                   ctypes.byref(handle))
    return Compiled(handle, spec if not is_text else "<text>")


def spec_ranks(spec):
    """The rank counts `spec` (a stdlib name or a path to a .coll file) declares, (min, max), from
    its front end alone: no proof runs. A spec that does not parse or check raises collc.Error."""
    from . import _capi
    if not isinstance(spec, str) or not spec:
        raise Error(f"spec must be a stdlib name or a path, not {spec!r}")
    low, high = ctypes.c_int(0), ctypes.c_int(0)
    _capi.call("collc_spec_ranks", os.fspath(spec).encode(), ctypes.byref(low), ctypes.byref(high))
    return low.value, high.value


def load_bundle(path):
    """A compiled collective from a bundle file (`collc emit SPEC --emit=bundle --arch=sm_90 -o
    FILE`): its instances use the bundle's cubins, so neither the compiler nor NVRTC is needed."""
    from . import _capi
    handle = ctypes.c_void_p()
    _capi.call("collc_compiled_load_bundle", os.fspath(path).encode(), ctypes.byref(handle))
    return Compiled(handle, os.fspath(path))
