"""Finding and loading collc's C libraries.

The runtime (libcollc.so) and the compiler (libcollc_compiler.so, which needs the runtime) are
looked for, in order: in $COLLC_LIBRARY_DIR; in the package's own lib/ (a wheel that carries
them); in the build/lib of the source tree this package sits in (a development checkout); then
wherever the system's loader finds them. The first directory holding libcollc.so wins, and the
compiler is taken from the same place.
"""

import ctypes
import os
from pathlib import Path

RUNTIME = "libcollc.so"
COMPILER = "libcollc_compiler.so"


class LibraryNotFound(ImportError):
    """collc's C library is not where collc looks for it."""


def candidate_dirs():
    """Directories searched for the libraries, in order (those that exist)."""
    dirs = []
    env = os.environ.get("COLLC_LIBRARY_DIR")
    if env:
        dirs.append(Path(env))
    here = Path(__file__).resolve().parent
    dirs.append(here / "lib")
    dirs.append(here.parent.parent / "build" / "lib")
    return [d for d in dirs if d.is_dir()]


# Where NVIDIA's NVRTC wheels put libnvrtc under site-packages: CUDA 13's nvidia-cuda-nvrtc, then
# CUDA 12's nvidia-cuda-nvrtc-cu12.
NVRTC_WHEEL_FILES = (
    ("nvidia", "cu13", "lib", "libnvrtc.so.13"),
    ("nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.13"),
    ("nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12"),
)


def find_nvrtc_wheel(paths=None):
    """libnvrtc from an NVRTC pip wheel (nvidia-cuda-nvrtc for CUDA 13, nvidia-cuda-nvrtc-cu12;
    torch's CUDA wheels install one) on `paths` (default sys.path), or None. collc's runtime finds
    a toolkit's NVRTC itself; a pip-only environment has only this one."""
    import sys
    for parts in NVRTC_WHEEL_FILES:
        for entry in sys.path if paths is None else paths:
            lib = Path(entry or ".").joinpath(*parts)
            if lib.is_file():
                return str(lib)
    return None


def _load(path):
    # RTLD_GLOBAL: the compiler library resolves the runtime's symbols against this copy.
    return ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)


def nvrtc_choice():
    """The NVRTC the package hands the runtime (collc_set_nvrtc_library), or None: the wheel's,
    unless the user named one in $COLLC_NVRTC_LIBRARY (which the runtime reads itself)."""
    if os.environ.get("COLLC_NVRTC_LIBRARY"):
        return None
    return find_nvrtc_wheel()


def load():
    """(runtime, compiler or None, where): the loaded libraries and a description of where from."""
    tried = []
    for d in candidate_dirs():
        runtime_path = d / RUNTIME
        tried.append(str(runtime_path))
        if runtime_path.exists():
            runtime = _load(runtime_path)
            compiler_path = d / COMPILER
            compiler = _load(compiler_path) if compiler_path.exists() else None
            return runtime, compiler, str(d)
    try:
        runtime = _load(RUNTIME)
    except OSError as error:
        tried.append(f"{RUNTIME} on the loader's path ({error})")
        raise LibraryNotFound(
            "collc's C library was not found; tried: " + "; ".join(tried) +
            ". Build collc (scripts/setup) or set COLLC_LIBRARY_DIR to the directory holding "
            "libcollc.so") from None
    try:
        compiler = _load(COMPILER)
    except OSError:
        compiler = None
    return runtime, compiler, "the system loader's path"
