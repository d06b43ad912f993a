"""NVFP4 in plain torch ops: the quantization fused_add_rms_norm_quant(quant="nvfp4") makes, so
that the benchmark has an unfused quantization (in float32, on the GPU) and the tests a reference
(in float64, on the CPU). The convention is compiler/interpret/Float4.h's:

  - a row of `hidden` elements (a multiple of 16) is quantized in blocks of 16 consecutive ones;
  - a block's amax is its largest |x| that is not NaN (0 if none); its scale
    SF = e4m3(GS * amax / 6), GS the caller's global scale, rounded to nearest even and saturating
    at 448 (NaN stays NaN);
  - each element is e2m1(x * GS / SF) (0 where SF is 0), rounded to nearest even, saturating at
    +-6, NaN becoming +6, a zero keeping its sign; so x ~ q * SF / GS;
  - element 2i of a row is the low nibble of the row's byte i (torch.float4_e2m1fn_x2);
  - the block scales are linear (row r's block b at r * hidden / 16 + b) or in the 128x4-swizzled
    layout the block-scaled GEMMs read (swizzled_offset), whose padding is zero.

Every rounding here is exact in the tensor's float type (both conversions count boundaries or
round at a power of two), so the float64 reference is the convention itself.
"""

import torch

BLOCK = 16
E2M1_MAX = 6.0
E4M3_MAX = 448.0
# E2M1 magnitudes of codes 0..7 (bit 3 is the sign).
E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
# Rounding boundaries between neighbouring codes, and whether a tie there goes up (to the even
# code): 0.25 to 0, 0.75 to 1, 1.25 to 1, 1.75 to 2, 2.5 to 2, 3.5 to 4, 5 to 4.
_E2M1_BOUNDARIES = ((0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False),
                    (3.5, True), (5.0, False))
# The swizzled layout's tile: 128 rows of 4 blocks, 512 bytes.
TILE_ROWS, TILE_BLOCKS = 128, 4


def ceil_div(a, b):
    return -(-a // b)


def round_up(a, b):
    return ceil_div(a, b) * b


def swizzled_shape(rows, blocks_per_row):
    """The swizzled scales' tensor shape: rows padded to 128, blocks per row to 4."""
    return round_up(rows, TILE_ROWS), round_up(blocks_per_row, TILE_BLOCKS)


def swizzled_offset(row, block, blocks_per_row):
    """The byte of row `row`'s block `block` in the swizzled scales (ints or integer tensors):
    tiles of 128 rows x 4 blocks in row-major order of tiles, and within a tile row r's block c at
    (r % 32) * 16 + (r / 32) * 4 + c."""
    column_tiles = ceil_div(blocks_per_row, TILE_BLOCKS)
    tile = row // TILE_ROWS * column_tiles + block // TILE_BLOCKS
    r = row % TILE_ROWS
    return tile * 512 + r % 32 * 16 + r // 32 * 4 + block % TILE_BLOCKS


def e2m1_codes(v):
    """v rounded to E2M1, as codes 0..15 (uint8, the sign in bit 3)."""
    a = v.abs()
    magnitude = torch.zeros(v.shape, dtype=torch.uint8, device=v.device)
    for boundary, tie_up in _E2M1_BOUNDARIES:
        magnitude += (a >= boundary if tie_up else a > boundary).to(torch.uint8)
    code = magnitude | (torch.signbit(v).to(torch.uint8) << 3)
    return torch.where(torch.isnan(v), torch.full_like(code, 7), code)


def e2m1_values(codes, dtype=torch.float64):
    """The values of E2M1 codes (the low 4 bits of each byte)."""
    table = torch.tensor(E2M1_MAGNITUDES, dtype=dtype, device=codes.device)
    codes = codes.to(torch.int64)
    magnitude = table[codes & 7]
    return torch.where((codes & 8) != 0, -magnitude, magnitude)


def e2m1_ordinals(codes):
    """E2M1 codes as integers in value order (-7..7): neighbouring values differ by one, and +0 and
    -0 are both 0."""
    codes = codes.to(torch.int32)
    return torch.where((codes & 8) != 0, -(codes & 7), codes & 7)


def e4m3_round(v):
    """v rounded to E4M3's values in v's float type: to nearest even, saturating at +-448, NaN
    staying NaN. Exact: the quantum is a power of two, 2^(e - 3) for v in [2^e, 2^(e+1)), 2^-9
    below 2^-6."""
    a = v.abs().clamp(max=E4M3_MAX)
    _, exponent = torch.frexp(a)  # a = m * 2^exponent, m in [0.5, 1)
    quantum = torch.exp2((exponent.to(v.dtype) - 1).clamp(min=-6) - 3)
    return torch.copysign(torch.round(a / quantum) * quantum, v)


def e4m3_bits(v):
    """v rounded to E4M3 (e4m3_round), as its bits (uint8; NaN as 0x7f)."""
    rounded = e4m3_round(v)
    bits = rounded.to(torch.float32).to(torch.float8_e4m3fn).view(torch.uint8)
    return torch.where(torch.isnan(rounded), torch.full_like(bits, 0x7F), bits)


def e4m3_values(bits, dtype=torch.float64):
    """The values of E4M3 bits."""
    return bits.view(torch.float8_e4m3fn).to(dtype)


def _blocks(rows):
    if rows.dim() != 2 or rows.shape[1] % BLOCK:
        raise ValueError(f"rows must be [rows, hidden] with hidden a multiple of {BLOCK}, not "
                         f"{tuple(rows.shape)}")
    return rows.view(rows.shape[0], rows.shape[1] // BLOCK, BLOCK)


def block_amax(rows):
    """[rows, hidden / 16]: each block's largest magnitude that is not NaN (0 if none)."""
    blocks = _blocks(rows)
    return torch.where(torch.isnan(blocks), torch.zeros_like(blocks), blocks.abs()).amax(dim=-1)


def factors(scale_values, global_scale):
    """What a block's elements are multiplied by: GS / SF, or 0 where SF is 0."""
    safe = torch.where(scale_values == 0, torch.ones_like(scale_values), scale_values)
    return torch.where(scale_values == 0, torch.zeros_like(scale_values), global_scale / safe)


def quantize(rows, global_scale):
    """rows [rows, hidden] (a float type; the arithmetic is in it) with the global scale (a number,
    or a tensor of one element, which stays on its device): (codes [rows, hidden] uint8, one a
    byte; scale bits [rows, hidden / 16] uint8, linear)."""
    if isinstance(global_scale, torch.Tensor):
        global_scale = global_scale.to(rows.dtype).view(())
    scale_bits = e4m3_bits(global_scale * block_amax(rows) / E2M1_MAX)
    factor = factors(e4m3_values(scale_bits, rows.dtype), global_scale)
    codes = e2m1_codes(_blocks(rows) * factor.unsqueeze(-1))
    return codes.view(rows.shape), scale_bits


def pack(codes):
    """[rows, hidden] codes -> [rows, hidden / 2] bytes, element 2i in byte i's low nibble."""
    return codes[:, 0::2] | (codes[:, 1::2] << 4)


def unpack(packed):
    """[rows, hidden / 2] bytes -> [rows, hidden] codes."""
    packed = packed.view(torch.uint8)
    return torch.stack((packed & 0xF, packed >> 4), dim=-1).view(packed.shape[0], -1)


def _tiled(padded):
    """[R, B] padded to whole tiles, as (row tile, r / 32, r % 32, block tile, c)."""
    rows, blocks = padded.shape
    return padded.view(rows // TILE_ROWS, 4, 32, blocks // TILE_BLOCKS, TILE_BLOCKS)


def swizzle(scale_bits):
    """Linear scales [rows, B] -> the swizzled layout, [round_up(rows, 128), round_up(B, 4)]
    bytes in memory order (the tensor's element [i, j] is byte i * columns + j), padding zero."""
    rows, blocks = scale_bits.shape
    padded = scale_bits.new_zeros(swizzled_shape(rows, blocks))
    padded[:rows, :blocks] = scale_bits
    return _tiled(padded).permute(0, 3, 2, 1, 4).reshape(padded.shape)


def unswizzle(swizzled, rows, blocks):
    """The swizzled layout -> (linear scales [rows, blocks], the padding's bytes: zero where the
    layout was written as swizzle writes it)."""
    padded_rows, padded_blocks = swizzled_shape(rows, blocks)
    if tuple(swizzled.shape) != (padded_rows, padded_blocks):
        raise ValueError(f"swizzled scales of {tuple(swizzled.shape)}, expected "
                         f"{(padded_rows, padded_blocks)} for {rows} rows of {blocks} blocks")
    tiles = swizzled.reshape(padded_rows // TILE_ROWS, padded_blocks // TILE_BLOCKS, 32, 4,
                             TILE_BLOCKS)
    linear = tiles.permute(0, 3, 2, 1, 4).reshape(padded_rows, padded_blocks)
    padding = linear.clone()
    padding[:rows, :blocks] = 0
    return linear[:rows, :blocks], padding


class Agreement:
    """How a kernel's NVFP4 rows compare with the float64 values they quantize (compare)."""

    def __init__(self):
        self.blocks = self.blocks_near = self.elements = self.elements_near = 0
        self.wrong = []  # what differs where it must not, in words

    def __bool__(self):
        return not self.wrong


def compare(rows, global_scale, codes, scale_bits, near, agreement=None, where=""):
    """A kernel's `codes` [rows, hidden] and linear `scale_bits` [rows, hidden / 16] against the
    float64 `rows` quantized with `global_scale` (a number). A block scale must be the float64
    argument GS * amax / 6 rounded, or, where that argument lies within `near` (relative: the
    kernel's float error) of an E4M3 rounding boundary, its neighbour across it (counted in
    blocks_near). Each element must be its float64 argument x * GS / SF, with the scale the kernel
    wrote, rounded to E2M1 (compared by value: +0 and -0 agree), or its neighbour where that
    argument lies within `near` of a boundary (counted in elements_near)."""
    agreement = agreement if agreement is not None else Agreement()
    rows = rows.double()
    prefix = f"{where}: " if where else ""
    if tuple(codes.shape) != tuple(rows.shape) or tuple(scale_bits.shape) != tuple(
            block_amax(rows).shape):
        agreement.wrong.append(f"{prefix}codes {tuple(codes.shape)} and scales "
                               f"{tuple(scale_bits.shape)} for rows {tuple(rows.shape)}")
        return agreement
    argument = global_scale * block_amax(rows) / E2M1_MAX
    low, high = e4m3_round(argument * (1 - near)), e4m3_round(argument * (1 + near))
    got_scale = e4m3_values(scale_bits.cpu())
    agreement.blocks += argument.numel()
    agreement.blocks_near += int((low != high).sum())
    bad = ~((low <= got_scale) & (got_scale <= high))
    if bool(bad.any()):
        r, b = (int(i) for i in bad.nonzero()[0])
        agreement.wrong.append(f"{prefix}{int(bad.sum())} block scales differ from the float64 "
                               f"value rounded; first: row {r} block {b} is {got_scale[r, b]}, "
                               f"expected {low[r, b]}")
    element = _blocks(rows) * factors(got_scale, global_scale).unsqueeze(-1)
    low = e2m1_values(e2m1_codes(element * (1 - near)))
    high = e2m1_values(e2m1_codes(element * (1 + near)))
    low, high = torch.minimum(low, high), torch.maximum(low, high)
    got = e2m1_values(codes.cpu()).view(element.shape)
    agreement.elements += element.numel()
    agreement.elements_near += int((low != high).sum())
    bad = ~((low <= got) & (got <= high))
    if bool(bad.any()):
        r, b, i = (int(k) for k in bad.nonzero()[0])
        agreement.wrong.append(f"{prefix}{int(bad.sum())} of {bad.numel()} elements differ from "
                               f"the float64 value rounded; first: row {r} element {b * BLOCK + i}"
                               f" is {got[r, b, i]}, expected {low[r, b, i]} (x = "
                               f"{float(rows[r, b * BLOCK + i])})")
    return agreement
