"""collc.torch's custom ops: registered, and their fake implementations give the shapes
torch.compile traces with. Needs torch (skipped where it is not installed); no GPU."""

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
                 "reduce", "all_to_all", "fused_add_rms_norm"):
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


def test_communicator_needs_an_initialized_group():
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        pytest.skip("a process group is already initialized")
    with pytest.raises(Exception, match="init_process_group"):
        ct.Communicator(None)
