"""python -m collc.bench_quant: its options, the quantizations it picks, and its tables (no torch
needed); its NVFP4 check on the CPU (where torch is installed); on a GPU machine, with
COLLC_BENCH_TESTS=1, its smoke run at 2 ranks (sharing GPU 0 where there is one GPU), every path
checked before it is timed."""

import csv
import io
import os
import subprocess
import sys

import pytest

from collc import _quant_table as qt


def test_defaults_are_the_issue_shapes_and_every_path():
    args = qt.parse_args([])
    assert args.hidden == (4096, 5120, 8192)
    assert args.tokens == (1, 8, 32, 64, 128)
    assert args.paths == qt.PATH_KEYS
    assert args.dtype == "bf16" and not args.smoke


def test_smoke_shortens_the_graphs_but_keeps_the_shapes():
    args = qt.parse_args(["--smoke", "--calls", "50"])
    assert (args.calls, args.iters, args.rounds) == (4, 4, 3)
    assert args.hidden == qt.DEFAULT_HIDDEN


@pytest.mark.parametrize("argv, words", [
    (["--paths", "fused,cublas"], "unknown cublas"),
    (["--hidden", "4096,x"], "positive integers"),
    (["--tokens", "0"], "positive integers"),
    (["--calls", "0"], "--calls must be at least 1"),
    (["--scale", "-1"], "--scale must be positive"),
    (["--global-scale", "0"], "--global-scale must be positive"),
])
def test_bad_options_are_refused_with_their_name(argv, words, capsys):
    with pytest.raises(SystemExit):
        qt.parse_args(argv)
    assert words in capsys.readouterr().err


def test_quants_offered_are_run_and_others_said_why_not():
    assert qt.chosen_quants("all", ("fp8", "fp8_per_token")) == (["fp8", "fp8_per_token"], {})
    run, missing = qt.chosen_quants("fp8,nvfp4", ("fp8",))
    assert run == ["fp8"]
    assert "does not offer quant='nvfp4'" in missing["nvfp4"]


def sample():
    results = qt.Results()
    results.put("fp8", 4096, 1, "fused", 10.0)
    results.put("fp8", 4096, 1, "nccl", 40.0)
    results.put("fp8", 4096, 1, "collc_ar", 20.0)
    results.skip("fp8", 4096, 1, "symm", "no symmetric memory here")
    results.put("fp8", 8192, 128, "fused", 30.0)
    results.skip("fp8", 8192, 128, "nccl", "NCCL refuses two ranks on one GPU")
    return results


def test_the_table_gives_ratios_to_nccl_and_dashes_with_reasons():
    paths = ("fused", "nccl", "collc_ar", "symm")
    table = qt.markdown(sample(), paths, "title", notes=["a note"])
    lines = table.splitlines()
    assert lines[0] == "### title" and "> a note" in lines
    header = next(line for line in lines if line.startswith("| quant"))
    assert header == ("| quant | hidden | tokens | fused µs | nccl µs | collc_ar µs | symm µs | "
                      "fused / nccl | collc_ar / nccl | symm / nccl |")
    assert "| fp8 | 4096 | 1 | 10.00 | 40.00 | 20.00 | — | 0.250 | 0.500 | — |" in lines
    # No baseline: no ratio at all.
    assert "| fp8 | 8192 | 128 | 30.00 | — | — | — | — | — | — |" in lines
    assert "- not run, nccl (fp8): NCCL refuses two ranks on one GPU" in lines
    assert "- not run, symm (fp8): no symmetric memory here" in lines


def test_the_csv_has_a_line_per_shape_and_path():
    text = qt.csv_text(sample(), ("fused", "nccl"), {"ranks": 2, "shared_gpu": 0})
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 4
    first = rows[0]
    assert (first["quant"], first["hidden"], first["tokens"], first["path"]) == (
        "fp8", "4096", "1", "fused")
    assert first["us_per_call"] == "10.000" and first["ratio_to_nccl"] == "0.2500"
    assert first["ranks"] == "2" and first["skipped"] == ""
    skipped = rows[3]
    assert skipped["path"] == "nccl" and skipped["us_per_call"] == ""
    assert skipped["skipped"] == "NCCL refuses two ranks on one GPU"


def test_smoke_run_on_the_gpu():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no GPU: torch sees no CUDA device")
    if os.environ.get("COLLC_BENCH_TESTS") != "1":
        pytest.skip("the benchmark's smoke run is `scripts/bench-quant BUNDLE --smoke`; set "
                    "COLLC_BENCH_TESTS=1 to run it here")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), COLLC_SHARE_GPU="1")
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc_per_node=2", "-m", "collc.bench_quant", "--smoke",
                          "--hidden", "4096", "--tokens", "1,32"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout[-6000:]
    assert "| fp8 | 4096 | 32 |" in run.stdout, run.stdout[-6000:]
    assert "| nvfp4 | 4096 | 32 |" in run.stdout, run.stdout[-6000:]


def test_the_nvfp4_check_takes_the_torch_quantization_and_finds_what_is_wrong():
    """The NVFP4 path's check (CPU): the torch quantization of the norm rounded to bf16 passes
    (within one code of float64), a value two codes off, a scale two codes off and a nonzero
    padding byte each fail, and a layout other than the swizzled one is named."""
    torch = pytest.importorskip("torch", reason="torch is not installed")
    from collc import bench_quant as bq
    tokens, hidden, gs = 5, 48, 600.0
    normed = torch.randn(tokens, hidden, dtype=torch.float64,
                         generator=torch.Generator().manual_seed(11)) * 2
    q, scales = bq.quantize_nvfp4(normed.to(torch.bfloat16), torch.tensor([gs]))
    assert bq.nvfp4_layout(q, scales, tokens, hidden) is None
    check = bq.Check()
    codes, bits = check.nvfp4("nccl", q, scales, normed, tokens, gs)
    assert check.failures == [] and codes.shape == (tokens, hidden) and bits.shape == (tokens, 3)

    def failures(q, scales):
        check = bq.Check()
        check.nvfp4("fused", q, scales, normed, tokens, gs)
        return check.failures

    raw = q.view(torch.uint8).clone()
    low = int(raw[2, 3]) & 0xF
    raw[2, 3] = (raw[2, 3] & 0xF0) | (low + 2 if low % 8 < 5 else low - 2)
    assert "1 of 240 NVFP4 elements are more than one code" in failures(
        raw.view(q.dtype), scales)[0]
    from collc import _nvfp4
    raw = scales.view(torch.uint8).clone()
    raw.view(-1)[_nvfp4.swizzled_offset(4, 1, 3)] += 2
    assert any("1 of 15 NVFP4 block scales" in f for f in failures(
        q, raw.view(torch.float8_e4m3fn)))
    raw = scales.view(torch.uint8).clone()
    raw.view(-1)[_nvfp4.swizzled_offset(0, 0, 3)] = 0x7F  # NaN: the bits after 448's
    assert any("1 of 15 NVFP4 block scales" in f for f in failures(
        q, raw.view(torch.float8_e4m3fn)))
    raw = scales.view(torch.uint8).clone()
    raw.view(-1)[3] = 1  # row 0's fourth block: padding (3 blocks a row)
    assert "1 bytes of the swizzled scales' padding are not 0" in failures(
        q, raw.view(torch.float8_e4m3fn))[0]
    assert "not packed E2M1 of (5, 24)" in bq.nvfp4_layout(q, scales[:5, :3], tokens, hidden)
