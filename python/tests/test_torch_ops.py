"""collc.torch's custom ops: registered, their fake implementations give the shapes
torch.compile traces with, compiled graphs call their kernels, and the C++ path refuses calls with
the Python path's words. Needs torch (skipped where it is not installed); no GPU."""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
ct = pytest.importorskip("collc.torch")


class FakeCommunicator:
    """Stands in for a Communicator in the fake implementations, which only need its rank count."""

    nranks = 4


@pytest.fixture
def comm():
    fake = FakeCommunicator()
    handle = 10**9
    ct._communicators[handle] = fake
    yield handle
    del ct._communicators[handle]


def test_every_op_is_registered():
    for name in ("all_reduce", "all_reduce_", "all_gather", "reduce_scatter", "broadcast",
                 "reduce", "all_to_all", "fused_add_rms_norm", "fused_add_rms_norm_fp8",
                 "fused_add_rms_norm_fp8_per_token", "fused_add_rms_norm_nvfp4"):
        assert hasattr(torch.ops.collc, name), name


def test_fake_implementations_give_the_shapes(comm):
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        x = torch.empty(64, dtype=torch.bfloat16)
        assert torch.ops.collc.all_reduce(x, comm, "sum").shape == (64,)
        assert torch.ops.collc.all_gather(x, comm).shape == (256,)
        assert torch.ops.collc.reduce_scatter(x, comm, "sum").shape == (16,)
        assert torch.ops.collc.broadcast(x, comm, 1).shape == (64,)
        assert torch.ops.collc.reduce(x, comm, 0, "max").shape == (64,)
        assert torch.ops.collc.all_to_all(x, comm).shape == (64,)
        residual = torch.empty(64, dtype=torch.bfloat16)
        weight = torch.empty(16, dtype=torch.bfloat16)
        out, res = torch.ops.collc.fused_add_rms_norm(x, residual, weight, comm, 1e-6)
        assert out.shape == (64,) and res.shape == (64,)
        assert out.dtype == torch.bfloat16
        scale = torch.empty(1, dtype=torch.float32)
        q, res = torch.ops.collc.fused_add_rms_norm_fp8(x, residual, weight, scale, comm, 1e-6)
        assert q.shape == (64,) and q.dtype == torch.float8_e4m3fn
        assert res.shape == (64,) and res.dtype == torch.bfloat16
        q, scales, res = torch.ops.collc.fused_add_rms_norm_fp8_per_token(x, residual, weight,
                                                                          comm, 1e-6)
        assert q.shape == (64,) and q.dtype == torch.float8_e4m3fn
        assert scales.shape == (4, 1) and scales.dtype == torch.float32  # 64 / 16 rows
        assert res.shape == (64,) and res.dtype == torch.bfloat16


def test_the_nvfp4_fake_gives_packed_values_and_each_layout_of_scales(comm):
    from torch._subclasses.fake_tensor import FakeTensorMode
    fp4 = getattr(torch, "float4_e2m1fn_x2", torch.uint8)
    with FakeTensorMode():
        # 3 rows of 80 elements: 5 blocks of 16 a row.
        x = torch.empty(240, dtype=torch.bfloat16)
        residual = torch.empty(240, dtype=torch.bfloat16)
        weight = torch.empty(80, dtype=torch.bfloat16)
        scale = torch.empty(1, dtype=torch.float32)
        for layout, scale_shape in (("swizzled", (128, 8)), ("linear", (3, 5))):
            q, scales, res = torch.ops.collc.fused_add_rms_norm_nvfp4(x, residual, weight, scale,
                                                                      comm, 1e-6, layout)
            assert q.shape == (3, 40) and q.dtype == fp4
            assert scales.shape == scale_shape and scales.dtype == torch.float8_e4m3fn
            assert res.shape == (240,) and res.dtype == torch.bfloat16
        # 129 rows of 4096: the swizzled scales take two tiles of rows, 256 blocks a row.
        x = torch.empty(129 * 4096, dtype=torch.float16)
        q, scales, _ = torch.ops.collc.fused_add_rms_norm_nvfp4(
            x, x, torch.empty(4096, dtype=torch.float16), scale, comm, 1e-6, "swizzled")
        assert q.shape == (129, 2048) and scales.shape == (256, 256)


def test_communicator_needs_an_initialized_group():
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        pytest.skip("a process group is already initialized")
    with pytest.raises(Exception, match="init_process_group"):
        ct.Communicator(None)


@pytest.fixture
def offline_comm():
    """A Communicator of 2 ranks on cuda:0 without a world (nothing is launched: every call
    below is refused first), known to both paths."""
    comm = object.__new__(ct.Communicator)
    comm.handle, comm.rank, comm.nranks, comm.device, comm.max_bytes = 10**9 + 1, 0, 2, 0, 4096
    ct._communicators[comm.handle] = comm
    if ct._native is not None:
        ct._native.collc_torch_ops_register(comm.handle, 0, 2, 0, 4096)
    yield comm
    if ct._native is not None:
        ct._native.collc_torch_ops_forget(comm.handle)
    del ct._communicators[comm.handle]


def refusal(action):
    with pytest.raises(ct.Error) as raised:
        action()
    return str(raised.value)


def test_the_path_is_named():
    assert ct.host_path in ("native", "python")
    assert (ct.native_reason is None) == (ct.host_path == "native")


def test_both_paths_refuse_with_the_same_words(offline_comm):
    """The eager call on the C++ path against the Python path's functions."""
    if ct.host_path != "native":
        pytest.skip(f"the C++ path is not loaded: {ct.native_reason}")
    c, x = offline_comm, torch.zeros(64)
    cases = [
        (lambda: ct._all_reduce_eager(c, x, "sum"), lambda: ct._all_reduce_impl(c, x, "sum")),
        (lambda: ct._all_reduce_eager(c, x, "prod"), lambda: ct._all_reduce_impl(c, x, "prod")),
        (lambda: ct._all_reduce_eager(c, x, None), lambda: ct._all_reduce_impl(c, x, None)),
        (lambda: ct._all_reduce_eager(c, 3, "sum"), lambda: ct._all_reduce_impl(c, 3, "sum")),
        (lambda: ct._all_reduce_inplace_eager(c, x, "max"),
         lambda: ct._all_reduce_inplace_impl(c, x, "max")),
        (lambda: ct._broadcast_eager(c, x, 2), lambda: ct._broadcast_impl(c, x, 2)),
        (lambda: ct._reduce_eager(c, x, "a", "sum"), lambda: ct._reduce_impl(c, x, "a", "sum")),
        (lambda: ct._reduce_scatter_eager(c, x, "min"), lambda: ct._reduce_scatter_impl(c, x, "min")),
        (lambda: ct._all_gather_eager(c, x), lambda: ct._all_gather_impl(c, x)),
        (lambda: ct._all_to_all_eager(c, x), lambda: ct._all_to_all_impl(c, x)),
        (lambda: ct._fused_add_rms_norm_eager(c, x, x, x[:16], 1e-6),
         lambda: ct._fused_add_rms_norm_impl(c, x, x, x[:16], 1e-6)),
    ]
    for eager, python in cases:
        assert refusal(eager) == refusal(python)
    assert "a tensor on cpu; this communicator runs on cuda:0" in refusal(cases[0][0])


def test_quantized_fused_op_refuses_what_it_cannot_make(offline_comm):
    c, x = offline_comm, torch.zeros(64)
    assert ct._QUANTS == ("fp8", "fp8_per_token", "nvfp4")
    assert "quant='int4' is not one collc makes: fp8, fp8_per_token, nvfp4" in refusal(
        lambda: c.fused_add_rms_norm_quant(x, x, x[:16], quant="int4"))
    assert "needs scale=" in refusal(lambda: c.fused_add_rms_norm_quant(x, x, x[:16]))
    assert "pass no scale=" in refusal(lambda: c.fused_add_rms_norm_quant(
        x, x, x[:16], quant="fp8_per_token", scale=torch.ones(1)))
    assert "a tensor on cpu" in refusal(
        lambda: ct._fused_add_rms_norm_fp8_impl(c, x, x, x[:16], torch.ones(1), 1e-6))
    assert "a tensor on cpu" in refusal(
        lambda: ct._fused_add_rms_norm_fp8_per_token_impl(c, x, x, x[:16], 1e-6))


def test_nvfp4_refuses_what_it_cannot_make(offline_comm):
    c, x, gs = offline_comm, torch.zeros(64), torch.ones(1)
    assert "quant='nvfp4' needs scale=, the global scale" in refusal(
        lambda: c.fused_add_rms_norm_quant(x, x, x[:16], quant="nvfp4"))
    assert "scale_layout='tiled' is not one collc makes: swizzled, linear" in refusal(
        lambda: c.fused_add_rms_norm_quant(x, x, x[:16], quant="nvfp4", scale=gs,
                                           scale_layout="tiled"))
    for quant, scale in (("fp8", gs), ("fp8_per_token", None)):
        for layout in ("linear", "swizzled"):
            assert f"scale_layout= is NVFP4's (quant='nvfp4'); quant='{quant}' takes none" in \
                refusal(lambda: c.fused_add_rms_norm_quant(x, x, x[:16], quant=quant, scale=scale,
                                                           scale_layout=layout))
    impl = ct._fused_add_rms_norm_nvfp4_impl
    assert "weight.numel() = 8 is not a multiple of 16" in refusal(
        lambda: impl(c, x, x, x[:8], gs, 1e-6, "swizzled"))
    assert "scale_layout='rows' is not one" in refusal(
        lambda: impl(c, x, x, x[:16], gs, 1e-6, "rows"))
    assert "a tensor on cpu" in refusal(lambda: impl(c, x, x, x[:16], gs, 1e-6, "linear"))


@pytest.mark.parametrize("layout", ["swizzled", "linear"])
def test_the_nvfp4_specs_declare_the_tensors_the_op_makes(layout):
    """The stdlib spec the op runs writes exactly the scales the op allocates (no GPU: the
    compiled variant's declared sizes), and a spec declaring other sizes is refused."""
    import collc
    spec = ct._SPECS[f"rmsnorm_nvfp4_{layout}"]
    try:
        compiled = collc.compile(spec, nranks=2, dtype="bfloat16", row_length=1040)
    except collc.Error as error:
        if "the standard library has no spec of that name" in str(error):
            pytest.skip(f"this collc library's stdlib has no {spec}")
        raise
    for tokens in (1, 7, 128, 130):
        q_shape, scale_shape = ct._nvfp4_shapes(tokens, 1040, layout)
        assert q_shape == (tokens, 520)
        ct._check_nvfp4_declared(compiled, layout, tokens, 1040,
                                 scale_shape[0] * scale_shape[1])
    other = "linear" if layout == "swizzled" else "swizzled"
    _, wrong = ct._nvfp4_shapes(7, 1040, other)
    assert "declares an output of float4_e2m1fn_x2" in refusal(
        lambda: ct._check_nvfp4_declared(compiled, layout, 7, 1040, wrong[0] * wrong[1]))


def test_nvfp4_traces_under_torch_compile(offline_comm):
    """torch.compile(fullgraph=True) traces quant="nvfp4" in both layouts through the fake (no
    graph break), and the compiled graph calls the op, which has a CUDA kernel only."""
    comm = offline_comm

    def block(x, residual, weight, gs):
        q, scales, res = comm.fused_add_rms_norm_quant(x, residual, weight, quant="nvfp4",
                                                       scale=gs)
        q2, scales2, _ = comm.fused_add_rms_norm_quant(x, res, weight, quant="nvfp4", scale=gs,
                                                       scale_layout="linear")
        return q.view(torch.uint8).sum() + q2.view(torch.uint8).sum(), scales, scales2

    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    x = torch.ones(64)
    with pytest.raises((RuntimeError, NotImplementedError)) as raised:
        compiled(x, x.clone(), x[:16].clone(), torch.ones(1))
    assert "CPU" in str(raised.value) and "fused_add_rms_norm_nvfp4" in str(raised.value)


def test_compiled_graphs_hold_the_ops(offline_comm):
    """torch.compile(fullgraph=True) traces the methods (no graph break), and the compiled graph
    calls the op's kernel: on the C++ path it refuses the CPU tensor with collc's words; the
    Python path has no CPU kernel, so torch refuses it."""
    comm = offline_comm

    def block(x, residual, weight):
        y = comm.all_reduce(x * 2)
        comm.all_reduce(y, out=y)
        out, residual = comm.fused_add_rms_norm(y, residual, weight)
        return out + residual

    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    x = torch.ones(64)
    with pytest.raises(RuntimeError) as raised:
        compiled(x, x.clone(), x[:16].clone())
    if ct.host_path == "native":
        assert str(raised.value).startswith("collc.Error(COLLC_INVALID_ARGUMENT): collc cannot take "
                                            "this tensor for allreduce: a tensor on cpu")
    else:
        assert "CPU" in str(raised.value)
