// The scalar types of every generated kernel, pasted first: the code generator then prints
// `typedef <float, f16 or bf16> T;` and the variant's constants (kRanks, kVec, Word, ...).
typedef unsigned long long u64;

// Half-precision elements are only stored, never computed with: arithmetic is in float
// (element_*.cuh), so the kernel needs no toolkit header such as cuda_fp16.h.
struct alignas(2) f16 {
  unsigned short bits;
};
struct alignas(2) bf16 {
  unsigned short bits;
};
