"""ctypes declarations of collc's C API (include/collc/collc.h), and the call wrapper that turns a
status into a collc.Error carrying the library's message."""

import ctypes
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_int, c_int64, c_size_t, c_uint,
                    c_uint64, c_void_p)

from . import _library
from ._errors import Error

# collc_status
OK, INVALID_ARGUMENT, SPEC_ERROR, CUDA_ERROR, NCCL_ERROR, UNSUPPORTED, INTERNAL = range(7)

DTYPES = {"float32": 0, "float16": 1, "bfloat16": 2}
# The collc tool's names (--dtype bf16) and torch's other spellings (torch.half, torch.float).
DTYPE_ALIASES = {"f32": "float32", "float": "float32", "f16": "float16", "half": "float16",
                 "bf16": "bfloat16"}
# collc_element_type: a buffer's element type, torch's names (torch.float8_e4m3fn for E4M3,
# torch.float4_e2m1fn_x2 for E2M1: one such element is a byte of two values, the even one in the
# low nibble, so a buffer of n values is a tensor of ceil(n / 2) of them).
ELEMENT_TYPES = ["float32", "float16", "bfloat16", "float8_e4m3fn", "float4_e2m1fn_x2"]
OPS = {"sum": 0, "max": 1, "min": 2}
KINDS = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall"]
# collc_world_create_process_flags
WORLD_SHARE_GPU, WORLD_CHECK_CALLS = 1, 2


class CompileOptions(Structure):
    # struct_size first, as in every caller-allocated struct of collc.h.
    _fields_ = [("struct_size", c_size_t), ("dtype", c_int), ("op", c_int), ("nranks", c_int),
                ("root", c_int), ("sync", c_int), ("row_length", c_int64), ("blocks", c_int),
                ("threads", c_int), ("vector_bytes", c_int), ("unroll", c_int),
                ("whole_stores", c_int),
                ("work_limit", c_int64)]


ALLGATHER_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_size_t, c_void_p)

# name: (restype, argtypes). A status-returning function has restype c_int.
_SIGNATURES = {
    "collc_last_error": (c_char_p, []),
    "collc_status_name": (c_char_p, [c_int]),
    "collc_sync_name": (c_char_p, [c_int]),
    "collc_version": (c_char_p, []),
    "collc_device_count": (c_int, [POINTER(c_int)]),
    "collc_set_nvrtc_library": (c_int, [c_char_p]),
    "collc_world_create_local": (c_int, [POINTER(c_int), c_int, c_uint64, POINTER(c_void_p)]),
    "collc_world_create_process": (c_int, [c_int, c_int, c_int, c_uint64, ALLGATHER_FN, c_void_p,
                                           POINTER(c_void_p)]),
    "collc_world_create_process_flags": (c_int, [c_int, c_int, c_int, c_uint64, c_uint,
                                                 ALLGATHER_FN, c_void_p, POINTER(c_void_p)]),
    "collc_world_create_shared_gpu": (c_int, [c_int, c_int, c_uint64, POINTER(c_void_p)]),
    "collc_world_nranks": (c_int, [c_void_p, POINTER(c_int)]),
    "collc_world_heap_bytes": (c_int, [c_void_p, POINTER(c_uint64)]),
    "collc_world_destroy": (c_int, [c_void_p]),
    "collc_compiled_load_bundle": (c_int, [c_char_p, POINTER(c_void_p)]),
    "collc_compiled_in_place": (c_int, [c_void_p]),
    "collc_compiled_info": (c_int, [c_void_p, POINTER(c_int), POINTER(c_int), POINTER(c_int),
                                    POINTER(c_int)]),
    "collc_compiled_buffer_type": (c_int, [c_void_p, c_int, POINTER(c_int)]),
    "collc_compiled_aux_count": (c_int, [c_void_p, c_int, c_uint64, POINTER(c_uint64)]),
    "collc_compiled_buffer_counts": (c_int, [c_void_p, c_uint64, POINTER(c_uint64),
                                             POINTER(c_uint64)]),
    "collc_compiled_heap_bytes": (c_int, [c_void_p, c_uint64, POINTER(c_uint64)]),
    "collc_compiled_kernel_name": (c_char_p, [c_void_p]),
    "collc_compiled_cuda_source": (c_char_p, [c_void_p]),
    "collc_compiled_destroy": (c_int, [c_void_p]),
    "collc_instance_create": (c_int, [c_void_p, c_void_p, c_uint64, POINTER(c_void_p)]),
    "collc_launch": (c_int, [c_void_p, c_int, c_void_p, c_void_p, POINTER(c_void_p), c_int,
                             c_uint64, c_void_p]),
    "collc_instance_synchronize": (c_int, [c_void_p, POINTER(c_void_p), c_int]),
    "collc_instance_destroy": (c_int, [c_void_p]),
}
_COMPILER_SIGNATURES = {
    "collc_compile_options_init_sized": (c_int, [POINTER(CompileOptions), c_size_t]),
    "collc_compile": (c_int, [c_char_p, POINTER(CompileOptions), POINTER(c_void_p)]),
    "collc_compile_text": (c_int, [c_char_p, c_char_p, POINTER(CompileOptions),
                                   POINTER(c_void_p)]),
    "collc_spec_ranks": (c_int, [c_char_p, POINTER(c_int), POINTER(c_int)]),
}

runtime, compiler, where = _library.load()


def _declare(library, signatures):
    for name, (restype, argtypes) in signatures.items():
        function = getattr(library, name)
        function.restype = restype
        function.argtypes = argtypes


_declare(runtime, _SIGNATURES)
if compiler is not None:
    _declare(compiler, _COMPILER_SIGNATURES)


def _registered_syncs():
    """The strategies' spellings and C values, from the library's registry (collc_sync_name): None
    is the spec's own strategy."""
    syncs = {None: 0}
    while True:
        spelling = runtime.collc_sync_name(len(syncs))
        if spelling is None:
            return syncs
        syncs[spelling.decode()] = len(syncs)


SYNCS = _registered_syncs()

# Passed to the runtime as an argument: the package never writes the process's environment.
nvrtc = _library.nvrtc_choice()
if nvrtc:
    runtime.collc_set_nvrtc_library(nvrtc.encode())


def last_error():
    message = runtime.collc_last_error()
    return message.decode("utf-8", "replace") if message else ""


def check(status):
    """Raises collc.Error for a failing status, with the calling thread's last error."""
    if status != OK:
        name = runtime.collc_status_name(status).decode()
        raise Error(last_error() or name, name)


def call(name, *args):
    """Calls a status-returning C function by name and checks its status."""
    if name in _COMPILER_SIGNATURES:
        if compiler is None:
            raise Error(f"{name} needs {_library.COMPILER}, which was not found next to "
                        f"{_library.RUNTIME} ({where})", "COLLC_UNSUPPORTED")
        check(getattr(compiler, name)(*args))
    else:
        check(getattr(runtime, name)(*args))


def version():
    return runtime.collc_version().decode()
