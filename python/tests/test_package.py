"""How the package finds what it needs: NVRTC from NVIDIA's pip wheels, and, in an installed
wheel (COLLC_TEST_INSTALLED=1), its own libraries and tool."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import collc
from collc import _cli, _library

installed_only = pytest.mark.skipif(os.environ.get("COLLC_TEST_INSTALLED") != "1",
                                    reason="tests the installed wheel (COLLC_TEST_INSTALLED=1)")


def fake_wheel(site, *parts):
    lib = site.joinpath(*parts)
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    return str(lib)


def test_finds_nvrtc_in_the_cuda12_wheel(tmp_path):
    cu12 = fake_wheel(tmp_path, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12")
    assert _library.find_nvrtc_wheel([str(tmp_path / "elsewhere"), str(tmp_path)]) == cu12


def test_finds_nvrtc_in_the_cuda13_wheel_first(tmp_path):
    # CUDA 13's wheel (nvidia-cuda-nvrtc) lays its libraries out under nvidia/cu13/lib.
    fake_wheel(tmp_path / "a", "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12")
    cu13 = fake_wheel(tmp_path / "b", "nvidia", "cu13", "lib", "libnvrtc.so.13")
    assert _library.find_nvrtc_wheel([str(tmp_path / "a"), str(tmp_path / "b")]) == cu13


def test_no_nvrtc_wheel(tmp_path):
    fake_wheel(tmp_path, "nvidia", "cu13", "lib", "libnvrtc.so.12")  # not the name of CUDA 13's
    assert _library.find_nvrtc_wheel([str(tmp_path)]) is None


@installed_only
def test_the_wheel_loads_its_own_libraries():
    package = Path(collc.__file__).resolve().parent
    assert Path(collc.library_path()).resolve() == package / "lib"
    assert collc.library_version() == collc.__version__
    for spec in ("allreduce_oneshot", "allgather_direct"):
        assert (package / "stdlib" / f"{spec}.coll").is_file()


@installed_only
def test_the_collc_command_runs_the_packaged_tool():
    assert _cli.tool_path() == Path(collc.__file__).resolve().parent / "bin" / "collc"
    command = Path(sys.executable).parent / "collc"
    listed = subprocess.run([str(command), "list"], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert "allreduce_oneshot" in listed.stdout
    checked = subprocess.run([str(command), "check", "allreduce_oneshot"], capture_output=True,
                             text=True)
    assert checked.returncode == 0, checked.stderr
    assert "proved" in checked.stdout
