// The contract between the host runtime and every kernel collc generates.
//
// This one file is compiled into the host runtime and pasted verbatim at the top of each emitted
// CUDA source, so the two sides cannot drift apart. It must stay plain C that both g++ and NVRTC
// accept: no includes, no templates.
#ifndef COLLC_ABI_H
#define COLLC_ABI_H

#define COLLC_ABI_VERSION 3
// One NVLink domain of a GB200 NVL72. collc_params holds a heap pointer per rank and is passed by
// value: at 72 it is about 700 bytes, within the 4 KB of kernel parameters every architecture has
// (runtime/LoadedKernel.h checks it).
#define COLLC_MAX_RANKS 72
#define COLLC_MAX_SCRATCH 8
#define COLLC_MAX_BLOCKS 132
// A fused epilogue's user buffers: NVFP4's takes five (residual, residual_out, weight, block
// scales, global scale), and a sixth leaves room for an unquantized output beside a quantized one.
#define COLLC_MAX_AUX 6

// The last call (epoch) of an instance whose kernel sends LL packets: they carry the epoch's low
// 32 bits, so a later call would repeat a flag that a packet left in scratch may carry. Such a
// kernel refuses every later call (it returns at its head, touching no scratch) and records
// COLLC_WATCHDOG_OUT_OF_CALLS in the rank's watchdog: the instance must be recreated.
#define COLLC_LAST_PACKET_EPOCH 4294967295ull
#define COLLC_WATCHDOG_OUT_OF_CALLS 3

// Written by the first poll loop of a kernel that gives up waiting; read by the host after the
// launch. Lives in the rank's own device memory, zeroed once when the collective is created.
struct collc_watchdog {
  unsigned int tripped;        // 0 while all is well; the first waiter to time out sets it to 1;
                               // COLLC_WATCHDOG_OUT_OF_CALLS: a call past the instance's last
  int rank;                    // the rank whose kernel gave up
  int block;                   // its block
  int step;                    // index of the spec step the wait belongs to
  int sync_point;              // which barrier of the call (0, 1, ...); -1: a data poll
  int waiting_on_rank;         // the peer whose signal never came; -1: not known
  int buffer;                  // data polls: the scratch buffer (index), else -1
  int slot;                    // data polls: its slot
  long long element;           // data polls: the element waited for
  unsigned long long epoch;    // the call's epoch (1 for the first call)
  unsigned long long expected; // the flag value the waiter needed
  unsigned long long observed; // the value it last read
};

// Passed by value to every generated kernel: `extern "C" __global__ void <kernel>(collc_params)`.
struct collc_params {
  const void* in;           // this rank's input (user memory, any device allocation)
  void* out;                // this rank's output
  unsigned long long count; // elements per rank, as the collective kind defines it
  int rank;                 // this rank, 0 <= rank < nranks
  int nranks;               // must equal the rank count the kernel was compiled for
  // Base of each rank's symmetric heap as this device addresses it (peer mappings).
  char* heap[COLLC_MAX_RANKS];
  // Byte offset of each scratch buffer's parity-0 copy inside the heap (same on every rank).
  unsigned long long scratch_offset[COLLC_MAX_SCRATCH];
  // Bytes from one copy of the scratch region to the next: calls rotate through the copies by
  // epoch (two, by parity, unless the strategy needs more), so call k+1 never overwrites what a
  // slow peer still reads of call k.
  unsigned long long parity_stride;
  // Byte offset in the heap of this collective's flags: unsigned long long[blocks * nranks].
  unsigned long long flags_offset;
  // This rank's per-block epoch counters, local memory, unsigned long long[blocks], zeroed once.
  unsigned long long* epochs;
  struct collc_watchdog* watchdog;
  unsigned long long timeout_ns; // a poll gives up after this long; 0 means wait forever
  // User buffers after the input and the output (a fused epilogue's residual, weight, ...), in the
  // order the spec declares them; unused entries are null.
  void* aux[COLLC_MAX_AUX];
};

#endif // COLLC_ABI_H
