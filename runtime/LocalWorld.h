// The single-process backend of symmetric memory (see SymmetricWorld.h): one process drives ranks
// 0..R-1, rank r on GPU devices[r]. Every pair of GPUs has peer access, and every rank owns a heap
// of the same size in which allocations sit at the same offset on every rank. With peer access in
// one process a peer's heap is addressed by the very pointer its owner uses (unified virtual
// addressing), so the peer-pointer table a kernel receives is simply every rank's heapBase().
#ifndef COLLC_RUNTIME_LOCALWORLD_H
#define COLLC_RUNTIME_LOCALWORLD_H

#include "runtime/Status.h"
#include "runtime/SymmetricWorld.h"

#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>
#include <memory>
#include <vector>

namespace collc {

/// Device memory on one GPU, freed (on that GPU) when the owner goes away. For the per-rank user
/// buffers and bookkeeping that live outside the symmetric heap.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// cudaMalloc of `bytes` on `device` (at least 1 byte, so that the pointer is never null).
  static Expected<DeviceBuffer> allocate(int device, size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  void* get() const { return pointer_; }
  template <typename T> T* as() const { return static_cast<T*>(pointer_); }
  size_t bytes() const { return bytes_; }
  int device() const { return device_; }
  void reset();

private:
  int device_ = -1;
  void* pointer_ = nullptr;
  size_t bytes_ = 0;
};

class LocalWorld final : public SymmetricWorld {
public:
  /// Enables peer access both ways between every pair of `devices` (distinct device ordinals; an
  /// error names the first pair that cannot), allocates and zeroes a heap of `heapBytesPerRank`
  /// on each, and creates one non-blocking stream per rank.
  static Expected<std::unique_ptr<LocalWorld>> create(std::vector<int> devices,
                                                      size_t heapBytesPerRank);
  /// Frees the heaps and streams. Nothing may still run on them: cudaFree waits for the device.
  ~LocalWorld() override;

  int nranks() const override { return static_cast<int>(devices_.size()); }
  const std::vector<int>& localRanks() const override { return ranks_; }
  int device(int rank) const override { return devices_[rank]; }
  cudaStream_t stream(int rank) const override { return streams_[rank]; }
  char* heapBase(int rank) const override { return heaps_[rank]; }
  /// The owner's pointer: with peer access in one process it is valid on every GPU.
  char* peerHeap(int rank, int /*viewer*/) const override { return heaps_[rank]; }
  std::string pathDescription() const override;

private:
  explicit LocalWorld(size_t heapBytesPerRank) : SymmetricWorld(heapBytesPerRank) {}

  std::vector<int> devices_;
  std::vector<int> ranks_; // 0..R-1: this process drives them all
  std::vector<char*> heaps_;
  std::vector<cudaStream_t> streams_;
};

} // namespace collc

#endif // COLLC_RUNTIME_LOCALWORLD_H
