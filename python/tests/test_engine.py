"""The engine's path on GPUs: collc.torch in one process per rank over a gloo group, every op,
graphs, torch.compile, two streams, and the faults (a rank killed mid-call, calls that differ,
settings that differ), through engine/ranks.py started by engine/spawn.py. With fewer GPUs than
ranks the ranks share GPU 0 (for correctness only). Skips without torch or a GPU; the GPU
machine's `scripts/gpu-check BUNDLE engine` runs the same scenarios, also under torchrun."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no GPU: torch sees no CUDA device", allow_module_level=True)
# Minutes of GPU time with ranks sharing a GPU: the GPU machine runs them in gpu-check's engine
# phase, so the package's test run (the embedding phase) leaves them out unless asked.
if os.environ.get("COLLC_ENGINE_TESTS") != "1":
    pytest.skip("the engine scenarios run in `scripts/gpu-check BUNDLE engine`; set "
                "COLLC_ENGINE_TESTS=1 to run them here", allow_module_level=True)

ENGINE = Path(__file__).resolve().parent / "engine"


def spawn(nproc, *scenarios, expect_killed=None, timeout=500):
    args = [sys.executable, str(ENGINE / "spawn.py"), "--nproc", str(nproc),
            "--timeout", str(timeout)]
    if torch.cuda.device_count() < nproc:
        args.append("--share-gpu")
    if expect_killed is not None:
        args += ["--expect-killed", str(expect_killed)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run(args + ["--", str(ENGINE / "ranks.py"), *scenarios], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=timeout + 60)
    return run.returncode, run.stdout


@pytest.mark.parametrize("nproc", [2])
def test_every_scenario(nproc):
    code, output = spawn(nproc, "all")
    assert code == 0, output[-6000:]


@pytest.mark.parametrize("nproc", [2, 3])
def test_a_killed_rank_is_named_by_the_others(nproc):
    code, output = spawn(nproc, "kill", expect_killed=nproc - 1, timeout=120)
    assert code == 0, output[-6000:]
    assert output.count("PASS kill") == nproc - 1, output[-6000:]
