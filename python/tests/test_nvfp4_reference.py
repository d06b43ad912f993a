"""The NVFP4 reference in torch (collc._nvfp4), which the engine's GPU check and the benchmark
compare the fused op with: its conversions, block scales and swizzled layout against values
worked out by hand, and its comparison failing where it must. Needs torch; no GPU."""

import math

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
from collc import _nvfp4 as nv  # noqa: E402  (needs torch)

NAN, INF = math.nan, math.inf


def codes_of(values):
    return nv.e2m1_codes(torch.tensor(values, dtype=torch.float64)).tolist()


def test_e2m1_rounds_to_nearest_even_and_saturates():
    # Ties: 0.25 to 0, 0.75 to 1, 1.25 to 1, 1.75 to 2, 2.5 to 2, 3.5 to 4, 5 to 4 (even codes).
    assert codes_of([0.0, 0.25, 0.26, 0.75, 1.25, 1.3, 1.75, 2.5, 2.6, 3.5, 5.0, 5.1]) == [
        0, 0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7]
    # Past 6 and infinities saturate; NaN is +6; the sign is bit 3, a zero's too.
    assert codes_of([6.0, 7.0, INF, -INF, NAN, -0.0, -0.75, -1e9]) == [7, 7, 7, 15, 7, 8, 10, 15]
    assert nv.e2m1_values(torch.tensor([7, 15, 8, 3, 13], dtype=torch.uint8)).tolist() == [
        6.0, -6.0, -0.0, 1.5, -3.0]
    assert nv.e2m1_ordinals(torch.tensor([0, 8, 15, 1])).tolist() == [0, 0, -7, 1]


def test_e4m3_rounds_at_its_quantum_and_saturates():
    v = torch.tensor([448.0, 460.0, 1e4, 17.0, 19.0, 2.0**-10, 3 * 2.0**-10, 0.0175, -3.3, INF],
                     dtype=torch.float64)
    # [16, 32) has a quantum of 2: 17 is a tie to 16 (even), 19 a tie to 20; below 2^-6 the
    # quantum is 2^-9: 2^-10 ties to 0, 3 * 2^-10 to 2^-8, 0.0175 to 9 * 2^-9.
    assert nv.e4m3_round(v).tolist() == [448.0, 448.0, 448.0, 16.0, 20.0, 0.0, 2.0**-8,
                                         9 * 2.0**-9, -3.25, 448.0]
    assert math.isnan(nv.e4m3_round(torch.tensor([NAN], dtype=torch.float64)).item())
    bits = nv.e4m3_bits(torch.tensor([448.0, 1.0, 0.25, 0.0, NAN, 2.0**-9], dtype=torch.float64))
    assert bits.tolist() == [0x7E, 0x38, 0x28, 0x00, 0x7F, 0x01]


def row(*blocks):
    """One row of the given blocks, each padded with zeros to 16 elements."""
    values = []
    for block in blocks:
        values += list(block) + [0.0] * (16 - len(block))
    return torch.tensor([values], dtype=torch.float64)


def test_a_block_scale_is_its_amax_over_six_times_the_global_scale():
    codes, scales = nv.quantize(row([6.0, 3.0, -1.5, 0.2], [1.5, -0.75, NAN]), 1.0)
    # Block 0: SF = e4m3(6 / 6) = 1, factor 1. Block 1: NaN passed over, SF = 0.25, factor 4:
    # 1.5 * 4 = 6, -0.75 * 4 = -3, NaN +6.
    assert scales.tolist() == [[0x38, 0x28]]
    assert codes[0, :4].tolist() == [7, 5, 11, 0]
    assert codes[0, 16:19].tolist() == [7, 13, 7]
    assert codes[0, 4:16].tolist() == [0] * 12 and codes[0, 19:].tolist() == [0] * 13


def test_a_saturated_scale_saturates_its_elements():
    # SF = e4m3(1000 * 3 / 6 = 500) = 448; factor 1000 / 448: 3 -> 6.70 (6), 1 -> 2.23 (2),
    # -2 -> -4.46 (-4), 0.2 -> 0.446 (0.5).
    codes, scales = nv.quantize(row([3.0, 1.0, -2.0, 0.2]), 1000.0)
    assert scales.tolist() == [[0x7E]]
    assert nv.e2m1_values(codes[0, :4]).tolist() == [6.0, 2.0, -4.0, 0.5]


def test_zero_and_tiny_blocks_have_a_zero_scale_and_zero_elements():
    # A zero block, one of NaNs only (amax 0: the NaN times 0 is NaN, +6), and one whose argument
    # GS * amax / 6 = 2^-11 rounds to 0 in E4M3: its elements are 0, their sign kept.
    codes, scales = nv.quantize(row([0.0, -0.0], [NAN, NAN], [6 * 2.0**-11, -2.0**-12]), 1.0)
    assert scales.tolist() == [[0, 0, 0]]
    assert codes[0, :2].tolist() == [0, 8]
    assert codes[0, 16:18].tolist() == [7, 7]
    assert codes[0, 32:34].tolist() == [0, 8]


def test_an_infinity_takes_the_largest_scale():
    codes, scales = nv.quantize(row([INF, 1.0, -2.0]), 1.0)
    # SF = e4m3(inf) = 448: the finite elements fall to 0, the infinity saturates.
    assert scales.tolist() == [[0x7E]]
    assert codes[0, :3].tolist() == [7, 0, 8]


def test_a_global_scale_tensor_stays_a_tensor():
    rows = torch.linspace(-3, 3, 64, dtype=torch.float32).view(2, 32)
    by_tensor = nv.quantize(rows, torch.tensor([200.0]))
    by_number = nv.quantize(rows, 200.0)
    assert all(torch.equal(a, b) for a, b in zip(by_tensor, by_number))


def test_packing_puts_the_even_element_in_the_low_nibble():
    codes = torch.tensor([[1, 2, 3, 4, 15, 8]], dtype=torch.uint8)
    packed = nv.pack(codes)
    assert packed.tolist() == [[0x21, 0x43, 0x8F]]
    assert torch.equal(nv.unpack(packed), codes)


@pytest.mark.parametrize("r, b, blocks, offset", [
    (0, 0, 8, 0), (0, 3, 8, 3), (0, 4, 8, 512),    # the next tile of 4 blocks
    (1, 0, 8, 16), (31, 0, 8, 496), (32, 0, 8, 4),  # rows 32 apart share 16 bytes
    (33, 2, 8, 22), (127, 3, 8, 511),               # the tile's last byte
    (128, 0, 8, 1024), (130, 5, 8, 1569),           # the second row of tiles (2 tiles a row)
    (128, 0, 5, 1024), (1, 4, 5, 528),              # 5 blocks pad to 8: 2 tiles a row
])
def test_swizzled_offsets(r, b, blocks, offset):
    assert nv.swizzled_offset(r, b, blocks) == offset


def test_swizzle_puts_each_scale_at_its_offset_and_zeroes_the_padding():
    rows, blocks = 130, 5
    scales = torch.randint(1, 255, (rows, blocks), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(3))
    swizzled = nv.swizzle(scales)
    assert tuple(swizzled.shape) == nv.swizzled_shape(rows, blocks) == (256, 8)
    flat = swizzled.view(-1)
    r = torch.arange(rows).view(-1, 1).expand(rows, blocks)
    b = torch.arange(blocks).view(1, -1).expand(rows, blocks)
    offsets = nv.swizzled_offset(r, b, blocks)
    assert torch.equal(flat[offsets], scales)
    written = torch.zeros(flat.numel(), dtype=torch.bool)
    written[offsets.reshape(-1)] = True
    assert int(written.sum()) == rows * blocks and not bool(flat[~written].any())
    linear, padding = nv.unswizzle(swizzled, rows, blocks)
    assert torch.equal(linear, scales) and not bool(padding.any())
    with pytest.raises(ValueError, match=r"expected \(256, 8\)"):
        nv.unswizzle(swizzled[:128], rows, blocks)


def sample_rows():
    gen = torch.Generator().manual_seed(7)
    rows = torch.randn(9, 64, dtype=torch.float64, generator=gen) * 3
    rows[2] = 0.0
    return rows


def test_the_comparison_accepts_the_reference_and_float32_arithmetic():
    rows = sample_rows()
    codes, scales = nv.quantize(rows, 500.0)
    same = nv.compare(rows, 500.0, codes, scales, near=1e-4)
    assert same and same.blocks == 36 and same.elements == 576
    # float32 arithmetic (the benchmark's torch epilogue) differs only near a boundary.
    codes32, scales32 = nv.quantize(rows.float(), 500.0)
    assert nv.compare(rows, 500.0, codes32, scales32, near=1e-4)


def test_the_comparison_finds_a_wrong_element_and_a_wrong_scale():
    rows = sample_rows()
    codes, scales = nv.quantize(rows, 500.0)
    wrong = codes.clone()
    wrong[4, 17] = (int(wrong[4, 17]) + 1) % 16 if int(wrong[4, 17]) % 8 != 7 else 0
    found = nv.compare(rows, 500.0, wrong, scales, near=1e-4, where="call 3")
    assert not found
    assert found.wrong[0].startswith("call 3: 1 of 576 elements differ")
    assert "row 4 element 17" in found.wrong[0]
    bad_scale = scales.clone()
    bad_scale[1, 2] += 1
    found = nv.compare(rows, 500.0, codes, bad_scale, near=1e-4)
    assert "1 block scales differ" in found.wrong[0] and "row 1 block 2" in found.wrong[0]
    found = nv.compare(rows, 500.0, codes[:, :32], scales, near=1e-4)
    assert "codes (9, 32)" in found.wrong[0]


def test_an_element_on_a_tie_may_round_either_way_and_is_counted():
    # SF = e4m3(6 / 6) = 1: 0.75 is a tie between 0.5 and 1; 2.6 is not near one.
    rows = row([6.0, 0.75, 2.6])
    codes, scales = nv.quantize(rows, 1.0)
    assert codes[0, 1].item() == 2
    other = codes.clone()
    other[0, 1] = 1  # 0.5: the other side of the tie
    agreement = nv.compare(rows, 1.0, other, scales, near=1e-4)
    assert agreement and agreement.elements_near == 1
    other[0, 2] = 4  # 2.0 for 2.6: wrong
    assert not nv.compare(rows, 1.0, other, scales, near=1e-4)
