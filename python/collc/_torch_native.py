"""The C++ path of collc.torch: libcollc_torch.so (torchops/), the CUDA kernels of
torch.ops.collc.* in C++, found beside libcollc.so. It is built against one torch and records
which; it is loaded only under that torch (else collc.torch runs its ops in Python and `reason`
says why). COLLC_HOST_PATH=python keeps it out; COLLC_HOST_PATH=native makes its absence an
error."""

import ctypes
import os
import re
from pathlib import Path

from ._errors import Error

LIBRARY = "libcollc_torch.so"
_MARKER = re.compile(rb"collc-torch-ops built for torch ([^\x00]+)\x00")

# int (*)(comm, kind, dtype, op, root, row_length, void** instance, int* in_place,
#         char* status, size_t, char* message, size_t)
INSTANCE_FACTORY = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_int64, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
    ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int),
    ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)


def built_for(path):
    """The torch version the library at `path` was built against, read from its bytes (without
    loading it), or None."""
    match = _MARKER.search(Path(path).read_bytes())
    return match.group(1).decode() if match else None


def choice():
    value = os.environ.get("COLLC_HOST_PATH", "auto")
    if value not in ("auto", "native", "python"):
        raise Error(f"COLLC_HOST_PATH={value!r}: use auto, native or python")
    return value


def load(torch_version, library_dir):
    """(library, None) with the library loaded into torch and its C functions declared, or
    (None, the reason it is not)."""
    if choice() == "python":
        return None, "COLLC_HOST_PATH=python"
    if library_dir is None or not Path(library_dir).is_dir():
        return None, "libcollc.so came from the system loader's path, where no op library is looked for"
    path = Path(library_dir) / LIBRARY
    if not path.is_file():
        return None, (f"no {LIBRARY} beside libcollc.so in {library_dir} (collc was built "
                      "without COLLC_TORCH_ROOT)")
    built = built_for(path)
    if built is None:
        return None, f"{path} does not say which torch it was built for"
    if built != torch_version:
        return None, (f"{path} was built for torch {built}; this is torch {torch_version} "
                      "(rebuild it against this torch: docs/python.md)")
    import torch
    try:
        torch.ops.load_library(str(path))
    except (OSError, RuntimeError) as error:
        return None, f"{path} did not load: {error}"
    library = ctypes.CDLL(str(path))
    library.collc_torch_ops_register_kernels.restype = ctypes.c_int
    library.collc_torch_ops_register_kernels.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    message = ctypes.create_string_buffer(4096)
    if library.collc_torch_ops_register_kernels(message, len(message)) != 0:
        return None, (f"{path} does not fit this package's op schemas (built from another "
                      f"version of collc?): {message.value.decode('utf-8', 'replace')}")
    library.collc_torch_ops_register.restype = None
    library.collc_torch_ops_register.argtypes = [ctypes.c_int64, ctypes.c_int, ctypes.c_int,
                                                 ctypes.c_int, ctypes.c_uint64]
    for name in ("collc_torch_ops_close", "collc_torch_ops_forget"):
        getattr(library, name).restype = None
        getattr(library, name).argtypes = [ctypes.c_int64]
    library.collc_torch_ops_last_stream.restype = ctypes.c_void_p
    library.collc_torch_ops_last_stream.argtypes = [ctypes.c_int64]
    library.collc_torch_ops_set_instance_factory.restype = None
    library.collc_torch_ops_set_instance_factory.argtypes = [INSTANCE_FACTORY]
    return library, None


def write_c_string(address, capacity, text):
    """Writes `text` NUL-terminated into the caller's buffer, cut to fit."""
    data = text.encode("utf-8", "replace")[:capacity - 1] + b"\x00"
    ctypes.memmove(address, data, len(data))


def error_from(runtime_error):
    """The collc.Error a C++ kernel raised (its message "collc.Error(STATUS): ..."), or the
    RuntimeError itself where it is torch's own."""
    message = str(runtime_error)
    match = re.match(r"collc\.Error\((COLLC_[A-Z_]+)\): ", message)
    if not match:
        return runtime_error
    return Error(message[match.end():], match.group(1))
