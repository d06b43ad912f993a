"""collc from Python: compile collective specs with collc's verifying compiler and run them.

    import collc
    compiled = collc.compile("allreduce_oneshot", dtype="bfloat16", nranks=2, sync="ll")
    compiled.in_place        # True: the proof allows out to be in's memory

`collc.torch` runs them on PyTorch tensors (it needs torch). The C library is found as
collc/_library.py says; importing collc itself needs neither a GPU nor torch.
"""

__version__ = "0.1.0"

from ._errors import Error  # noqa: E402
from ._compiled import Compiled, compile, load_bundle, spec_ranks  # noqa: E402,F401
from ._world import Instance, World  # noqa: E402,F401


def library_version():
    """The version of the C library collc loaded (the same as __version__ in a consistent install)."""
    from . import _capi
    return _capi.version()


def library_path():
    """Where the C library was loaded from."""
    from . import _capi
    return _capi.where


def device_count():
    """Visible GPUs (0 where there is none, or no driver)."""
    import ctypes
    from . import _capi
    count = ctypes.c_int(0)
    _capi.runtime.collc_device_count(ctypes.byref(count))
    return count.value


__all__ = ["Compiled", "Error", "Instance", "World", "compile", "load_bundle", "spec_ranks",
           "device_count", "library_path", "library_version", "__version__"]
