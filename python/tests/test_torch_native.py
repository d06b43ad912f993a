"""How collc.torch picks the C++ path (libcollc_torch.so) or stays on the Python one: the torch
version the library records, read without loading it, and the reasons it is not loaded. No
torch and no GPU needed: nothing here loads the library."""

import pytest

from collc import Error, _torch_native


def library_for(directory, version):
    path = directory / _torch_native.LIBRARY
    path.write_bytes(b"\x7fELF...." + f"collc-torch-ops built for torch {version}".encode()
                     + b"\x00more bytes")
    return path


def test_the_recorded_torch_version_is_read_from_the_file(tmp_path):
    assert _torch_native.built_for(library_for(tmp_path, "2.11.0+cu130")) == "2.11.0+cu130"
    other = tmp_path / "other.so"
    other.write_bytes(b"no marker here")
    assert _torch_native.built_for(other) is None


def test_a_library_for_another_torch_is_not_loaded(tmp_path, monkeypatch):
    monkeypatch.delenv("COLLC_HOST_PATH", raising=False)
    library_for(tmp_path, "2.11.0+cu130")
    library, reason = _torch_native.load("2.10.0+cu128", str(tmp_path))
    assert library is None
    assert "was built for torch 2.11.0+cu130; this is torch 2.10.0+cu128" in reason


def test_a_missing_library_is_the_reason(tmp_path, monkeypatch):
    monkeypatch.delenv("COLLC_HOST_PATH", raising=False)
    library, reason = _torch_native.load("2.11.0+cu130", str(tmp_path))
    assert library is None and "no libcollc_torch.so beside libcollc.so" in reason
    library, reason = _torch_native.load("2.11.0+cu130", "the system loader's path")
    assert library is None and "system loader's path" in reason


def test_the_python_path_can_be_asked_for(tmp_path, monkeypatch):
    library_for(tmp_path, "2.11.0+cu130")
    monkeypatch.setenv("COLLC_HOST_PATH", "python")
    assert _torch_native.load("2.11.0+cu130", str(tmp_path)) == (None, "COLLC_HOST_PATH=python")
    monkeypatch.setenv("COLLC_HOST_PATH", "fast")
    with pytest.raises(Error, match="COLLC_HOST_PATH='fast': use auto, native or python"):
        _torch_native.load("2.11.0+cu130", str(tmp_path))


def test_a_kernels_failure_becomes_collc_error_again():
    error = _torch_native.error_from(
        RuntimeError("collc.Error(COLLC_CUDA_ERROR): collc_launch: kernel 'k': launch failed"))
    assert isinstance(error, Error)
    assert error.status == "COLLC_CUDA_ERROR"
    assert str(error) == "collc_launch: kernel 'k': launch failed"
    torch_own = RuntimeError("Could not run 'collc::all_reduce' with arguments from 'Meta'")
    assert _torch_native.error_from(torch_own) is torch_own
