// `out = quantize(rmsnorm(y, weight), scale=S)` over the row a block owns: rmsnorm's value in
// float (rows_rmsnorm.cuh's product, before its rounding to T), divided by the per-tensor scale
// S[0] (correctly rounded, as vLLM's x / scale), then rounded to E4M3 (fp8_e4m3.cuh). Needs the
// row length to be whole vectors (the verifier's rule), so a vector never straddles a row's end.

// The kVec E4M3 bytes of one vector: q[e] = e4m3(y[e] * scale * w[e] / qscale).
__device__ __forceinline__ void rmsnorm_fp8_store(unsigned char* out, u64 i, const Vec& y,
                                                  const Vec& w, float scale, float qscale) {
  float x[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    x[e] = __fdiv_rn(to_float(y.bits[e]) * scale * to_float(w.bits[e]), qscale);
  if (kVec == 1) {
    out[i] = (unsigned char)fp8_e4m3_pair(x[0], 0.0f);
    return;
  }
  // kVec is 2, 4 or 8 here: one store of kVec bytes, aligned as i is a multiple of kVec.
  unsigned long long packed = 0;
#pragma unroll
  for (int e = 0; e + 1 < kVec; e += 2)
    packed |= (unsigned long long)fp8_e4m3_pair(x[e], x[e + 1]) << (8 * e);
  if (kVec == 2)
    *reinterpret_cast<unsigned short*>(out + i) = (unsigned short)packed;
  else if (kVec == 4)
    *reinterpret_cast<unsigned*>(out + i) = (unsigned)packed;
  else
    *reinterpret_cast<unsigned long long*>(out + i) = packed;
}
