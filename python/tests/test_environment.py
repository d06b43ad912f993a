"""The package never writes the process's environment (the host program's): settings reach the C
library as arguments. Checked in the source, and in a fresh interpreter that imports collc and
calls it with both environments (os.environ and the C library's) compared before and after."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import collc

PACKAGE_DIR = Path(collc.__file__).resolve().parent

# Methods of os.environ that change it.
_WRITING_METHODS = {"setdefault", "update", "pop", "popitem", "clear", "__setitem__",
                    "__delitem__"}


def _is_environ(node):
    """os.environ, or environ imported from os."""
    return ((isinstance(node, ast.Attribute) and node.attr == "environ"
             and isinstance(node.value, ast.Name) and node.value.id == "os")
            or (isinstance(node, ast.Name) and node.id == "environ"))


def environment_writes(source, filename):
    """(line, what) for every write to the environment in a module's source."""
    writes = []
    for node in ast.walk(ast.parse(source, filename)):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for target in targets:
            if isinstance(target, ast.Subscript) and _is_environ(target.value):
                writes.append((node.lineno, "os.environ[...] assigned or deleted"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner, name = node.func.value, node.func.attr
            if _is_environ(owner) and name in _WRITING_METHODS:
                writes.append((node.lineno, f"os.environ.{name}()"))
            if (isinstance(owner, ast.Name) and owner.id == "os"
                    and name in {"putenv", "unsetenv"}):
                writes.append((node.lineno, f"os.{name}()"))
    return writes


def test_the_check_finds_writes():
    # The checker itself: each way of writing is found, reading is not.
    source = "\n".join([
        "import os", "from os import environ",
        "os.environ['A'] = '1'", "os.environ.setdefault('B', '2')", "del os.environ['C']",
        "os.putenv('D', '4')", "environ.update(E='5')", "os.environ.get('F')",
        "x = os.environ['G']", "os.getenv('H')"])
    assert sorted(line for line, _ in environment_writes(source, "x.py")) == [3, 4, 5, 6, 7]


def test_no_module_of_the_package_writes_the_environment():
    modules = sorted(PACKAGE_DIR.glob("*.py"))
    assert modules, f"no modules in {PACKAGE_DIR}"
    found = {}
    for module in modules:
        writes = environment_writes(module.read_text(), str(module))
        if writes:
            found[module.name] = writes
    assert not found, f"the package writes the environment: {found}"


# Run in a fresh interpreter: imports collc, calls what needs no GPU (and what fails without one),
# and prints both environments before and after as JSON.
_PROBE = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None)
environ = ctypes.POINTER(ctypes.c_char_p).in_dll(libc, "environ")
def c_environment():
    variables, i = [], 0
    while environ[i]:
        variables.append(environ[i].decode("utf-8", "replace"))
        i += 1
    return sorted(variables)
before = (dict(os.environ), c_environment())
import collc
from collc import _capi
collc.compile("allreduce_oneshot", dtype="bfloat16", nranks=4)
collc.device_count()
try:
    collc.World.shared_gpu(4, heap_bytes=1 << 20).close()
except collc.Error:
    pass  # no GPU here
after = (dict(os.environ), c_environment())
print(json.dumps({"same_os": before[0] == after[0], "same_c": before[1] == after[1],
                  "nvrtc": _capi.nvrtc,
                  "changed": sorted(set(after[1]) ^ set(before[1]))}))
"""


def _probe(tmp_path, environment):
    result = subprocess.run([sys.executable, "-c", _PROBE], env=environment, cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _environment_with(tmp_path, **extra):
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("COLLC_NVRTC_LIBRARY", "CUDA_DEVICE_MAX_CONNECTIONS")}
    # The probe runs in tmp_path: a library directory given relative to here must still be found.
    if environment.get("COLLC_LIBRARY_DIR"):
        environment["COLLC_LIBRARY_DIR"] = os.path.abspath(environment["COLLC_LIBRARY_DIR"])
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(PACKAGE_DIR.parent), str(tmp_path / "site")] +
        [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    environment.update(extra)
    return environment


def test_using_the_package_leaves_the_environment_as_it_was(tmp_path):
    # An NVRTC wheel's layout on sys.path: the package hands its library to the runtime as an
    # argument, where it once set COLLC_NVRTC_LIBRARY. The layout it looks for first (CUDA 13's), so
    # that a machine whose torch brought its own NVRTC wheel finds this one ahead of it.
    wheel_lib = tmp_path / "site" / "nvidia" / "cu13" / "lib"
    wheel_lib.mkdir(parents=True)
    (wheel_lib / "libnvrtc.so.13").write_bytes(b"")
    seen = _probe(tmp_path, _environment_with(tmp_path))
    assert seen["nvrtc"] == str(wheel_lib / "libnvrtc.so.13")
    assert seen["same_os"], seen
    assert seen["same_c"], f"variables set or removed by collc: {seen['changed']}"


def test_a_library_the_user_names_is_left_to_the_runtime(tmp_path):
    # COLLC_NVRTC_LIBRARY is the user's: the package passes nothing and changes nothing.
    seen = _probe(tmp_path, _environment_with(tmp_path, COLLC_NVRTC_LIBRARY="/x/libnvrtc.so.13"))
    assert seen["nvrtc"] is None
    assert seen["same_os"] and seen["same_c"], seen
