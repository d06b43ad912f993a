"""The Python path to the kernels on a GPU: ranks as co-resident kernels on GPU 0 in one process
(collc.World.shared_gpu), tensors from torch, every call checked. Skips without torch or a GPU."""

import pytest

import collc

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no GPU: torch sees no CUDA device", allow_module_level=True)


@pytest.mark.parametrize("nranks,sync,dtype", [(2, "ll", "bfloat16"), (4, "sentinel", "float32"),
                                               (5, "barrier", "float16")])
def test_allreduce_on_one_gpu(nranks, sync, dtype):
    world = collc.World.shared_gpu(nranks, heap_bytes=64 << 20)
    compiled = collc.compile("allreduce_oneshot", dtype=dtype, nranks=nranks, sync=sync, blocks=4)
    instance = collc.Instance(world, compiled, 1 << 16)
    torch_dtype = getattr(torch, dtype)
    for count in (1, 37, 4099):
        inputs = [torch.randint(-8, 8, (count,), device="cuda").to(torch_dtype)
                  for _ in range(nranks)]
        outputs = [torch.full((count,), float("nan"), device="cuda", dtype=torch_dtype)
                   for _ in range(nranks)]
        torch.cuda.synchronize()
        for r in range(nranks):
            instance.launch(r, inputs[r].data_ptr(), outputs[r].data_ptr(), count)
        instance.synchronize()
        expected = sum(t.double() for t in inputs)
        for r in range(nranks):
            assert torch.equal(outputs[r].double(), expected), f"rank {r}, count {count}"


def test_overlapping_buffers_are_refused():
    world = collc.World.shared_gpu(2, heap_bytes=16 << 20)
    compiled = collc.compile("allreduce_oneshot", nranks=2, blocks=2)
    instance = collc.Instance(world, compiled, 1024)
    buffer = torch.zeros(2048, device="cuda")
    with pytest.raises(collc.Error, match="overlap"):
        instance.launch(0, buffer.data_ptr(), buffer.data_ptr() + 64, 256)


def test_a_bundle_runs_from_python(tmp_path):
    import subprocess
    from pathlib import Path
    tool = Path(collc.library_path()).parent / "bin" / "collc"
    arch = "sm_%d%d" % torch.cuda.get_device_capability(0)
    bundle = tmp_path / "twoshot.collb"
    subprocess.run([str(tool), "emit", "allreduce_twoshot", "--ranks", "4", "--dtype", "f32",
                    "--sync", "ll", "--blocks", "4", "--emit=bundle", f"--arch={arch}", "-o",
                    str(bundle)], check=True)
    world = collc.World.shared_gpu(4, heap_bytes=64 << 20)
    instance = collc.Instance(world, collc.load_bundle(bundle), 1 << 14)
    count = 4099
    inputs = [torch.randint(-8, 8, (count,), device="cuda").float() for _ in range(4)]
    outputs = [torch.empty(count, device="cuda") for _ in range(4)]
    torch.cuda.synchronize()
    for r in range(4):
        instance.launch(r, inputs[r].data_ptr(), outputs[r].data_ptr(), count)
    instance.synchronize()
    expected = sum(inputs)
    for r in range(4):
        assert torch.equal(outputs[r], expected), f"rank {r}"
