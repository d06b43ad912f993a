"""collc without torch and without a GPU: import, version, compile, and errors."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import collc


def collc_tool():
    """The collc tool beside the library the package loaded (bin/ next to lib/)."""
    return Path(collc.library_path()).parent / "bin" / "collc"


def test_version_matches_the_library():
    assert collc.__version__ == collc.library_version()
    assert collc.library_path()


def test_compiles_a_stdlib_spec():
    compiled = collc.compile("allreduce_oneshot", dtype="bfloat16", nranks=4, sync="ll")
    assert compiled.kind == "allreduce"
    assert compiled.dtype == "bfloat16"
    assert compiled.nranks == 4
    assert compiled.naux == 0
    assert compiled.in_place  # the proof allows it for the one-shot AllReduce
    assert compiled.kernel_name
    assert "__global__" in compiled.cuda_source
    assert compiled.buffer_counts(100) == (100, 100)
    assert compiled.heap_bytes(1000) > 0


def test_allgather_buffers_hold_every_rank():
    compiled = collc.compile("allgather_direct", nranks=3)
    assert compiled.kind == "allgather"
    assert compiled.buffer_counts(10) == (10, 30)


def test_counts_whose_sizes_do_not_fit_are_refused():
    compiled = collc.compile("allgather_direct", nranks=8)
    with pytest.raises(collc.Error, match=r"more than 2\^63 - 1 bytes for the input"):
        compiled.heap_bytes(1 << 61)
    with pytest.raises(collc.Error, match=r"more than 2\^63 - 1 elements"):
        compiled.buffer_counts(1 << 61)
    assert compiled.heap_bytes(1 << 20) > 0


def test_the_fused_epilogue_has_aux_buffers():
    compiled = collc.compile("allreduce_rmsnorm", nranks=2, row_length=1024)
    assert compiled.naux == 3
    assert compiled.output_dtype == "float32"
    assert compiled.aux_dtypes == ["float32"] * 3


def test_a_quantized_output_and_its_scale_have_their_own_types():
    compiled = collc.compile("allreduce_rmsnorm_fp8", nranks=2, dtype="bfloat16", row_length=1024)
    assert compiled.output_dtype == "float8_e4m3fn"
    assert compiled.aux_dtypes == ["bfloat16", "bfloat16", "bfloat16", "float32"]
    assert not compiled.in_place  # an fp8 output is never its bf16 input's memory


def test_the_per_token_spec_writes_one_scale_a_row():
    """The layout collc.torch's fp8_per_token op passes: residual, residual_out, weight, then the
    scales (aux 3), one float32 per row."""
    compiled = collc.compile("allreduce_rmsnorm_fp8_per_token", nranks=2, dtype="bfloat16",
                             row_length=1024)
    assert compiled.output_dtype == "float8_e4m3fn"
    assert compiled.aux_dtypes == ["bfloat16", "bfloat16", "bfloat16", "float32"]
    tokens = 7
    assert [compiled.aux_count(k, tokens * 1024) for k in range(compiled.naux)] == [
        tokens * 1024, tokens * 1024, 1024, tokens]


# The NVFP4 stdlib specs collc.torch's quant="nvfp4" runs, by scale layout.
NVFP4_SPECS = {"swizzled": "allreduce_rmsnorm_nvfp4", "linear": "allreduce_rmsnorm_nvfp4_linear"}


def compile_stdlib_or_skip(spec, **options):
    try:
        return collc.compile(spec, **options)
    except collc.Error as error:
        if "the standard library has no spec of that name" in str(error):
            pytest.skip(f"this collc library's stdlib has no {spec}")
        raise


@pytest.mark.parametrize("layout", sorted(NVFP4_SPECS))
def test_the_nvfp4_specs_declare_the_buffers_collc_torch_passes(layout):
    """residual, residual_out, weight, then the block scales (aux 3: one E4M3 per 16 elements of
    a row, linear or padded to 128 rows x 4 blocks) and the global scale (aux 4, one float32);
    the output two E2M1 values a byte. 1040 elements a row: 65 blocks, padded to 68."""
    compiled = compile_stdlib_or_skip(NVFP4_SPECS[layout], nranks=2, dtype="bfloat16",
                                      row_length=1040)
    assert compiled.output_dtype == "float4_e2m1fn_x2"
    assert compiled.aux_dtypes == ["bfloat16"] * 3 + ["float8_e4m3fn", "float32"]
    assert not compiled.in_place
    for tokens in (1, 7, 130):
        scales = tokens * 65 if layout == "linear" else -(-tokens // 128) * 128 * 68
        assert [compiled.aux_count(k, tokens * 1040) for k in range(compiled.naux)] == [
            tokens * 1040, tokens * 1040, 1040, scales, 1]


PER_ROW_SPEC = """collective per_row kind allreduce
  rows hidden = 64
  buffers in: T[n], out: T[n], y: T[n], weight: T[hidden], token_scale: f32[n / hidden], swizzled: fp8e4m3[round_up(n / hidden, 128) * round_up(ceil_div(hidden, 16), 4)]
  scratch slot[nranks]: T[n]
{
  step push {
    for p in peers { put in -> p.slot[rank] }
  }
  step reduce {
    wait push
    y = reduce(in, slot[peers])
    out = rmsnorm(y, weight)
  }
}
"""


def test_aux_buffers_are_sized_by_their_declared_size():
    compiled = collc.compile(PER_ROW_SPEC, nranks=2, dtype="bfloat16", row_length=80)
    tokens = 7
    count = tokens * 80
    assert [compiled.aux_count(k, count) for k in range(compiled.naux)] == [
        count, 80, tokens, 128 * 8]  # 80 / 16 = 5 blocks a row, padded to 8
    with pytest.raises(collc.Error, match="buffer 4 is not one of the 4 aux buffers"):
        compiled.aux_count(4, count)


SPEC_WITH_A_BUG = """collective broken kind allreduce
  buffers in: T[n], out: T[n]
  scratch slot[nranks]: T[n]
{
  step push {
    for p in peers { put in -> p.slot[rank] }
  }
  step reduce {
    out = reduce(in, slot[peers])
  }
}
"""


def test_a_wrong_spec_is_refused_with_its_location():
    with pytest.raises(collc.Error) as refused:
        collc.compile(SPEC_WITH_A_BUG)
    assert refused.value.status == "COLLC_SPEC_ERROR"
    message = str(refused.value)
    assert "<text>:9:" in message  # the unordered read, at its line
    assert "wait push" in message


def test_unknown_spec_and_bad_options_are_errors():
    with pytest.raises(collc.Error, match="no_such_spec"):
        collc.compile("no_such_spec")
    with pytest.raises(collc.Error, match="unknown dtype"):
        collc.compile("allreduce_oneshot", dtype="int8")
    with pytest.raises(collc.Error, match="unknown op"):
        collc.compile("allreduce_oneshot", op="avg")
    with pytest.raises(collc.Error, match="nranks"):
        collc.compile("allreduce_oneshot", nranks=0)
    with pytest.raises(collc.Error, match="cannot compile for 73 ranks: the spec declares ranks 2..72"):
        collc.compile("allreduce_twoshot", nranks=73)
    with pytest.raises(collc.Error, match="cannot compile for 73 ranks: the spec declares ranks 2..72"):
        collc.compile("allreduce_ring", nranks=73)
    with pytest.raises(collc.Error, match="spec must be"):
        collc.compile(None)


def test_spec_ranks_are_the_declared_range_without_a_proof():
    assert collc.spec_ranks("allreduce_oneshot") == (2, 72)
    assert collc.spec_ranks("allreduce_twoshot") == (2, 72)
    assert collc.spec_ranks("allreduce_ring") == (2, 72)
    with pytest.raises(collc.Error, match="no_such_spec"):
        collc.spec_ranks("no_such_spec")
    with pytest.raises(collc.Error, match="spec must be"):
        collc.spec_ranks(None)


def test_a_communicators_allreduce_is_a_spec_its_rank_count_is_proved_for():
    from collc._allreduce_spec import ONESHOT_LIMIT, allreduce_spec
    assert allreduce_spec(ONESHOT_LIMIT, 8) == "allreduce_oneshot"
    assert allreduce_spec(8 << 20, 8) == "allreduce_twoshot"
    assert allreduce_spec(8 << 20, 64) == "allreduce_twoshot"
    assert allreduce_spec(8 << 20, 72) == "allreduce_twoshot"
    assert collc.compile(allreduce_spec(8 << 20, 72), nranks=72).nranks == 72


def test_work_limit_bounds_the_proofs():
    with pytest.raises(collc.Error, match="takes more than 1024 steps of work"):
        collc.compile("allreduce_oneshot", nranks=8, work_limit=1024)
    with pytest.raises(collc.Error, match="work_limit must be a non-negative integer"):
        collc.compile("allreduce_oneshot", work_limit=-1)
    assert collc.compile("allreduce_oneshot", nranks=8, work_limit=0).nranks == 8


def test_a_communicators_default_max_bytes_keeps_the_default_heap_small():
    from collc._allreduce_spec import (DEFAULT_WIDE_CALLS_RANKS, ONESHOT_LIMIT, allreduce_spec,
                                       default_max_bytes)
    low, high = collc.spec_ranks("allreduce_twoshot")
    assert default_max_bytes(low) == default_max_bytes(DEFAULT_WIDE_CALLS_RANKS) == 8 << 20
    assert allreduce_spec(default_max_bytes(DEFAULT_WIDE_CALLS_RANKS),
                          DEFAULT_WIDE_CALLS_RANKS) == "allreduce_twoshot"
    # Past 24 ranks the one-shot's range only, though the two-shot declares up to `high`: the
    # default heap (eight one-shot instances at max_bytes) stays small.
    assert high > DEFAULT_WIDE_CALLS_RANKS
    for nranks in (DEFAULT_WIDE_CALLS_RANKS + 1, high, high + 1, 72):
        assert default_max_bytes(nranks) == ONESHOT_LIMIT
        assert allreduce_spec(default_max_bytes(nranks), nranks) == "allreduce_oneshot"
    oneshot = collc.compile("allreduce_oneshot", nranks=72)
    per_instance = oneshot.heap_bytes(default_max_bytes(72) // 4)
    assert per_instance < oneshot.heap_bytes((8 << 20) // 4) // 4


def test_the_launch_shape_is_the_callers_or_the_specs():
    spec = collc.compile("allreduce_oneshot").cuda_source
    assert "kVec = 4;" in spec and "kWholeStores = false;" in spec  # 16 bytes of f32, no whole stores
    shaped = collc.compile("allreduce_oneshot", vector_bytes=4, unroll=2, whole_stores=True)
    assert "kVec = 1;" in shaped.cuda_source
    assert "kWholeStores = true;" in shaped.cuda_source
    assert "unroll 2: 2 vectors per thread per iteration" in shaped.cuda_source
    with pytest.raises(collc.Error, match="vector = 3 is invalid"):
        collc.compile("allreduce_oneshot", vector_bytes=3)
    with pytest.raises(collc.Error, match="whole_stores must be"):
        collc.compile("allreduce_oneshot", whole_stores=2)
    with pytest.raises(collc.Error, match="unroll must be"):
        collc.compile("allreduce_oneshot", unroll=-1)


@pytest.mark.parametrize("spelling,name", [
    ("bf16", "bfloat16"), ("bfloat16", "bfloat16"), ("BF16", "bfloat16"),
    ("f16", "float16"), ("float16", "float16"), ("half", "float16"),
    ("f32", "float32"), ("float32", "float32"), ("float", "float32")])
def test_the_tools_type_names_and_pythons_are_one(spelling, name):
    assert collc.compile("allreduce_oneshot", dtype=spelling).dtype == name


class _DtypeOfTorch:
    """What collc sees of a torch dtype: its type is torch's `dtype`, printed "torch.NAME"."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


_DtypeOfTorch.__name__ = "dtype"
_DtypeOfTorch.__module__ = "torch"


def test_a_torch_dtype_is_read_without_torch():
    assert collc.compile("allreduce_oneshot", dtype=_DtypeOfTorch("torch.bfloat16")).dtype == \
        "bfloat16"
    assert collc.compile("allreduce_oneshot", dtype=_DtypeOfTorch("torch.float16")).dtype == \
        "float16"
    with pytest.raises(collc.Error, match="unknown dtype"):
        collc.compile("allreduce_oneshot", dtype=_DtypeOfTorch("torch.int8"))
    with pytest.raises(collc.Error, match="unknown dtype 3"):
        collc.compile("allreduce_oneshot", dtype=3)


def test_torch_dtypes_themselves():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    for dtype, name in [(torch.bfloat16, "bfloat16"), (torch.float16, "float16"),
                        (torch.half, "float16"), (torch.float32, "float32"),
                        (torch.float, "float32")]:
        assert collc.compile("allreduce_oneshot", dtype=dtype).dtype == name
    with pytest.raises(collc.Error, match="unknown dtype"):
        collc.compile("allreduce_oneshot", dtype=torch.int32)


def test_compiling_imports_no_torch():
    probe = ("import sys, collc; collc.compile('allreduce_oneshot', dtype='bf16'); "
             "print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(Path(collc.__file__).parent.parent)),
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_device_count_needs_no_gpu():
    assert collc.device_count() >= 0


def test_a_bundle_loads_without_the_compiler(tmp_path):
    tool = collc_tool()
    if not tool.exists():
        pytest.skip(f"no collc tool at {tool}")
    bundle = tmp_path / "oneshot.collb"
    subprocess.run([str(tool), "emit", "allreduce_oneshot", "--ranks", "3", "--dtype", "bf16",
                    "--emit=bundle", "--arch=sm_90", "-o", str(bundle)], check=True)
    loaded = collc.load_bundle(bundle)
    assert (loaded.kind, loaded.dtype, loaded.nranks) == ("allreduce", "bfloat16", 3)
    assert loaded.in_place == collc.compile("allreduce_oneshot", nranks=3, dtype="bfloat16").in_place
    with pytest.raises(collc.Error, match="no_bundle_here"):
        collc.load_bundle(tmp_path / "no_bundle_here.collb")


def test_in_place_is_proved_per_strategy():
    # The fused RMSNorm stores normalized rows into `in` while, under ll and sentinel, another
    # block of its rank may still be sending them: only barrier's lowered program runs in place.
    barrier = collc.compile("allreduce_rmsnorm", nranks=4, sync="barrier", row_length=1024)
    assert barrier.in_place
    for sync in ("ll", "sentinel"):
        arrival = collc.compile("allreduce_rmsnorm", nranks=4, sync=sync, row_length=1024)
        assert not arrival.in_place, sync
    assert collc.compile("allreduce_oneshot", nranks=4, sync="ll").in_place
