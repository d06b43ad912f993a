"""The `collc` command that the wheel installs: runs the collc tool the package carries
(collc/bin/collc, which finds the package's libraries through its RUNPATH)."""

import os
import sys
from pathlib import Path

from . import _library


def tool_path():
    """The collc tool inside the installed package."""
    return Path(__file__).resolve().parent / "bin" / "collc"


def main():
    tool = tool_path()
    if not os.access(tool, os.X_OK):
        sys.stderr.write(f"collc: the tool is missing from this install ({tool}); reinstall the "
                         "collc wheel, or run build/bin/collc of a source build\n")
        return 1
    argv = ["collc"] + sys.argv[1:]
    # The tool finds a CUDA toolkit's NVRTC itself; NVIDIA's NVRTC wheel (which torch's CUDA wheels
    # install) it is told about, in its own environment only.
    nvrtc = None if os.environ.get("COLLC_NVRTC_LIBRARY") else _library.find_nvrtc_wheel()
    if nvrtc:
        os.execve(tool, argv, dict(os.environ, COLLC_NVRTC_LIBRARY=nvrtc))
    os.execv(tool, argv)
