// The C API's devices and worlds (include/collc/collc.h): LocalWorld and ProcessWorld behind
// collc_world.
#include "abi/collc_abi.h"
#include "runtime/CApiSupport.h"
#include "runtime/Devices.h"
#include "runtime/LocalWorld.h"
#include "runtime/ProcessWorld.h"
#include "runtime/SharedGpuWorld.h"

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace collc;
using collc::capi::fail;
using collc::capi::guarded;

namespace {

static_assert(COLLC_NCCL_UNIQUE_ID_BYTES == std::tuple_size<NcclUniqueIdBytes>::value,
              "collc.h's NCCL id size must be ProcessWorld's");

constexpr uint64_t kDefaultHeapBytes = uint64_t(256) << 20;

uint64_t heapOrDefault(uint64_t heapBytes) {
  return heapBytes ? heapBytes : kDefaultHeapBytes;
}

collc_status publish(std::unique_ptr<SymmetricWorld> world, collc_world** out) {
  auto handle = std::make_unique<collc_world>();
  handle->world = std::move(world);
  *out = handle.release();
  return COLLC_OK;
}

/// What every rank hands the others through the caller's all-gather: who it thinks it is (so
/// that a callback that mixes up the ranks is caught), and from rank 0 the NCCL id or why there
/// is none. Plain bytes, the same layout in every process of one build.
struct BootstrapCard {
  char magic[8];
  int32_t rank;
  int32_t nranks;
  int32_t idMade; // rank 0: 1 if `id` holds an NCCL id, else `message` says why
  uint32_t flags; // COLLC_WORLD_* as this rank passed them
  uint64_t heapBytes;
  char id[COLLC_NCCL_UNIQUE_ID_BYTES];
  char message[512];
};
constexpr char kCardMagic[8] = "collcC2";

/// Rank, rank count and device checked before any collective step, so that a wrong argument is
/// reported as one (the other ranks then wait in their own all-gather or NCCL bootstrap).
collc_status checkRankArguments(const char* function, int rank, int nranks, int device) {
  if (nranks < 1 || nranks > COLLC_MAX_RANKS)
    return fail(COLLC_INVALID_ARGUMENT, std::string(function) + ": " + std::to_string(nranks) +
                                            " ranks; 1 to " + std::to_string(COLLC_MAX_RANKS) +
                                            " are supported");
  if (rank < 0 || rank >= nranks)
    return fail(COLLC_INVALID_ARGUMENT, std::string(function) + ": rank " + std::to_string(rank) +
                                            " of " + std::to_string(nranks) + " (ranks are 0.." +
                                            std::to_string(nranks - 1) + ")");
  Expected<int> gpus = gpuCount();
  if (!gpus)
    return fail(COLLC_CUDA_ERROR, function, gpus.takeError());
  if (device < 0 || device >= *gpus)
    return fail(COLLC_INVALID_ARGUMENT, std::string(function) + ": GPU " + std::to_string(device) +
                                            " asked for; " + std::to_string(*gpus) + " visible");
  return COLLC_OK;
}

constexpr unsigned kKnownWorldFlags = COLLC_WORLD_SHARE_GPU | COLLC_WORLD_CHECK_CALLS;

std::string describeWorldFlags(unsigned flags) {
  std::string text;
  if (flags & COLLC_WORLD_SHARE_GPU)
    text += "COLLC_WORLD_SHARE_GPU";
  if (flags & COLLC_WORLD_CHECK_CALLS)
    text += std::string(text.empty() ? "" : " | ") + "COLLC_WORLD_CHECK_CALLS";
  return text.empty() ? "no flags" : text;
}

collc_status createProcessWorld(const char* function, int rank, int nranks, int device,
                                const NcclUniqueIdBytes& id, uint64_t heapBytes, collc_world** out,
                                unsigned flags = 0) {
  ProcessWorldOptions options;
  options.heapBytes = heapOrDefault(heapBytes);
  options.shareGpu = flags & COLLC_WORLD_SHARE_GPU;
  options.checkCalls = flags & COLLC_WORLD_CHECK_CALLS;
  Expected<std::unique_ptr<ProcessWorld>> world =
      ProcessWorld::create(rank, nranks, device, id, options);
  if (!world)
    return fail(COLLC_NCCL_ERROR, function, world.takeError());
  return publish(std::move(*world), out);
}

const collc_world* checkedWorld(const collc_world* world) {
  return world && world->world ? world : nullptr;
}

} // namespace

extern "C" {

collc_status collc_device_count(int* count) {
  return guarded("collc_device_count", [&] {
    if (!count)
      return fail(COLLC_INVALID_ARGUMENT, "collc_device_count: count is null");
    *count = 0;
    Expected<int> gpus = gpuCount();
    if (!gpus)
      return fail(COLLC_CUDA_ERROR, toString(gpus.takeError())); // "no GPU: why"
    *count = *gpus;
    return COLLC_OK;
  });
}

collc_status collc_world_create_local(const int* devices, int ndevices, uint64_t heap_bytes,
                                      collc_world** out) {
  return guarded("collc_world_create_local", [&] {
    if (!out)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_create_local: out is null");
    *out = nullptr;
    if (!devices)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_create_local: devices is null");
    if (ndevices < 1 || ndevices > COLLC_MAX_RANKS)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_create_local: " + std::to_string(ndevices) +
                                              " devices; 1 to " + std::to_string(COLLC_MAX_RANKS) +
                                              " are supported");
    if (heap_bytes > SIZE_MAX)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_create_local: heap too large");
    Expected<std::unique_ptr<LocalWorld>> world = LocalWorld::create(
        std::vector<int>(devices, devices + ndevices), size_t(heapOrDefault(heap_bytes)));
    if (!world)
      return fail(COLLC_CUDA_ERROR, "collc_world_create_local", world.takeError());
    return publish(std::move(*world), out);
  });
}

collc_status collc_world_create_shared_gpu(int device, int nranks, uint64_t heap_bytes,
                                           collc_world** out) {
  return guarded("collc_world_create_shared_gpu", [&] {
    if (!out)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_create_shared_gpu: out is null");
    *out = nullptr;
    if (nranks < 1 || nranks > COLLC_MAX_RANKS)
      return fail(COLLC_INVALID_ARGUMENT,
                  "collc_world_create_shared_gpu: " + std::to_string(nranks) + " ranks; 1 to " +
                      std::to_string(COLLC_MAX_RANKS) + " are supported");
    if (heap_bytes > SIZE_MAX)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_create_shared_gpu: heap too large");
    // The program's environment, not the GPU, is what refuses here.
    if (std::string problem = workQueueProblem(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), nranks);
        !problem.empty())
      return fail(COLLC_UNSUPPORTED, "collc_world_create_shared_gpu: " + problem);
    Expected<std::unique_ptr<SharedGpuWorld>> world =
        SharedGpuWorld::create(nranks, device, size_t(heapOrDefault(heap_bytes)));
    if (!world)
      return fail(COLLC_CUDA_ERROR, "collc_world_create_shared_gpu", world.takeError());
    return publish(std::move(*world), out);
  });
}

collc_status collc_world_create_process(int rank, int nranks, int device, uint64_t heap_bytes,
                                        collc_allgather_fn allgather, void* user,
                                        collc_world** out) {
  return collc_world_create_process_flags(rank, nranks, device, heap_bytes, 0, allgather, user,
                                          out);
}

collc_status collc_world_create_process_flags(int rank, int nranks, int device, uint64_t heap_bytes,
                                              unsigned flags, collc_allgather_fn allgather,
                                              void* user, collc_world** out) {
  const char* function = flags ? "collc_world_create_process_flags" : "collc_world_create_process";
  return guarded(function, [&] {
    if (!out)
      return fail(COLLC_INVALID_ARGUMENT, std::string(function) + ": out is null");
    *out = nullptr;
    if (!allgather)
      return fail(COLLC_INVALID_ARGUMENT, std::string(function) + ": allgather is null");
    if (flags & ~kKnownWorldFlags)
      return fail(COLLC_INVALID_ARGUMENT,
                  std::string(function) + ": unknown flags " +
                      std::to_string(flags & ~kKnownWorldFlags) +
                      " (COLLC_WORLD_SHARE_GPU and COLLC_WORLD_CHECK_CALLS are known)");
    if (collc_status status = checkRankArguments(function, rank, nranks, device))
      return status;

    // Rank 0 makes the id; a failure there must still reach the others through the all-gather,
    // or they would wait in NCCL's bootstrap for a rank 0 that never comes.
    BootstrapCard mine{};
    std::memcpy(mine.magic, kCardMagic, sizeof mine.magic);
    mine.rank = rank;
    mine.nranks = nranks;
    mine.flags = flags;
    mine.heapBytes = heapOrDefault(heap_bytes);
    if (rank == 0) {
      // Ranks that share a GPU need no NCCL: their id only names a shared-memory segment.
      Expected<NcclUniqueIdBytes> id =
          (flags & COLLC_WORLD_SHARE_GPU)
              ? Expected<NcclUniqueIdBytes>(ProcessWorld::newSharedGpuId())
              : ProcessWorld::newUniqueId();
      if (id) {
        std::memcpy(mine.id, id->data(), sizeof mine.id);
        mine.idMade = 1;
      } else {
        std::string why = toString(id.takeError());
        std::strncpy(mine.message, why.c_str(), sizeof mine.message - 1);
      }
    }
    std::vector<BootstrapCard> all(nranks);
    if (int result = allgather(&mine, all.data(), sizeof(BootstrapCard), user))
      return fail(COLLC_INVALID_ARGUMENT, std::string(function) + ": rank " + std::to_string(rank) +
                                              ": the all-gather callback failed (returned " +
                                              std::to_string(result) + ")");
    for (int r = 0; r < nranks; ++r) {
      const BootstrapCard& card = all[r];
      if (std::memcmp(card.magic, kCardMagic, sizeof card.magic) != 0 || card.rank != r ||
          card.nranks != nranks)
        return fail(COLLC_INVALID_ARGUMENT,
                    std::string(function) + ": rank " + std::to_string(rank) +
                        ": the all-gather put something else than rank " + std::to_string(r) +
                        " of " + std::to_string(nranks) + "'s bytes at position " +
                        std::to_string(r) +
                        " (recv must hold every rank's bytes in rank order, every rank must "
                        "pass the same nranks, and every process must load the same collc)");
    }
    // Settings that must agree, checked alike on every rank before anything waits on a peer, so
    // that every rank fails at once and names the same difference.
    for (int r = 1; r < nranks; ++r) {
      if (all[r].flags != all[0].flags)
        return fail(COLLC_INVALID_ARGUMENT,
                    std::string(function) + ": rank " + std::to_string(rank) + ": rank " +
                        std::to_string(r) + " passed " + describeWorldFlags(all[r].flags) +
                        ", rank 0 " + describeWorldFlags(all[0].flags) +
                        ": every rank must pass the same flags");
      if (all[r].heapBytes != all[0].heapBytes)
        return fail(COLLC_INVALID_ARGUMENT,
                    std::string(function) + ": rank " + std::to_string(rank) + ": rank " +
                        std::to_string(r) + " asks for a heap of " +
                        std::to_string(all[r].heapBytes) + " bytes, rank 0 for " +
                        std::to_string(all[0].heapBytes) +
                        ": every rank must pass the same heap_bytes");
    }
    if (!all[0].idMade)
      return fail(COLLC_NCCL_ERROR,
                  std::string(function) + ": rank 0 could not make an NCCL id: " +
                      std::string(all[0].message, strnlen(all[0].message, sizeof all[0].message)));
    NcclUniqueIdBytes id;
    std::memcpy(id.data(), all[0].id, id.size());
    return createProcessWorld(function, rank, nranks, device, id, heap_bytes, out, flags);
  });
}

collc_status collc_nccl_unique_id(void* id, size_t bytes) {
  return guarded("collc_nccl_unique_id", [&] {
    if (!id)
      return fail(COLLC_INVALID_ARGUMENT, "collc_nccl_unique_id: id is null");
    if (bytes < COLLC_NCCL_UNIQUE_ID_BYTES)
      return fail(COLLC_INVALID_ARGUMENT, "collc_nccl_unique_id: " + std::to_string(bytes) +
                                              " bytes; an NCCL id needs " +
                                              std::to_string(COLLC_NCCL_UNIQUE_ID_BYTES));
    Expected<NcclUniqueIdBytes> made = ProcessWorld::newUniqueId();
    if (!made)
      return fail(COLLC_NCCL_ERROR, "collc_nccl_unique_id", made.takeError());
    std::memcpy(id, made->data(), made->size());
    return COLLC_OK;
  });
}

collc_status collc_world_create_process_nccl_id(int rank, int nranks, int device, const void* id,
                                                size_t bytes, uint64_t heap_bytes,
                                                collc_world** out) {
  const char* function = "collc_world_create_process_nccl_id";
  return guarded(function, [&] {
    if (!out)
      return fail(COLLC_INVALID_ARGUMENT, std::string(function) + ": out is null");
    *out = nullptr;
    if (!id)
      return fail(COLLC_INVALID_ARGUMENT, std::string(function) + ": id is null");
    if (bytes != COLLC_NCCL_UNIQUE_ID_BYTES)
      return fail(COLLC_INVALID_ARGUMENT, std::string(function) + ": an id of " +
                                              std::to_string(bytes) + " bytes; NCCL's has " +
                                              std::to_string(COLLC_NCCL_UNIQUE_ID_BYTES));
    if (collc_status status = checkRankArguments(function, rank, nranks, device))
      return status;
    NcclUniqueIdBytes copy;
    std::memcpy(copy.data(), id, copy.size());
    return createProcessWorld(function, rank, nranks, device, copy, heap_bytes, out);
  });
}

collc_status collc_world_adopt_nccl_comm(void* comm, uint64_t heap_bytes, collc_world** out) {
  return guarded("collc_world_adopt_nccl_comm", [&] {
    if (!out)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_adopt_nccl_comm: out is null");
    *out = nullptr;
    if (!comm)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_adopt_nccl_comm: comm is null");
    ProcessWorldOptions options;
    options.heapBytes = heapOrDefault(heap_bytes);
    Expected<std::unique_ptr<ProcessWorld>> world =
        ProcessWorld::adopt(static_cast<ncclComm_t>(comm), options);
    if (!world)
      return fail(COLLC_NCCL_ERROR, "collc_world_adopt_nccl_comm", world.takeError());
    return publish(std::move(*world), out);
  });
}

collc_status collc_world_nranks(const collc_world* world, int* nranks) {
  return guarded("collc_world_nranks", [&] {
    if (!checkedWorld(world) || !nranks)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_nranks: null world or nranks");
    *nranks = world->world->nranks();
    return COLLC_OK;
  });
}

collc_status collc_world_heap_bytes(const collc_world* world, uint64_t* bytes) {
  return guarded("collc_world_heap_bytes", [&] {
    if (!checkedWorld(world) || !bytes)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_heap_bytes: null world or bytes");
    *bytes = world->world->heapBytes();
    return COLLC_OK;
  });
}

collc_status collc_world_local_ranks(const collc_world* world, int* ranks, int capacity,
                                     int* nlocal) {
  return guarded("collc_world_local_ranks", [&] {
    if (!checkedWorld(world) || !nlocal)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_local_ranks: null world or nlocal");
    const std::vector<int>& local = world->world->localRanks();
    *nlocal = int(local.size());
    if (!ranks)
      return COLLC_OK;
    if (capacity < int(local.size()))
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_local_ranks: room for " +
                                              std::to_string(capacity) + " ranks, " +
                                              std::to_string(local.size()) + " needed");
    std::copy(local.begin(), local.end(), ranks);
    return COLLC_OK;
  });
}

static collc_status checkLocalRank(const char* function, const collc_world* world, int rank) {
  if (!world->world->isLocal(rank))
    return fail(COLLC_INVALID_ARGUMENT, std::string(function) + ": rank " + std::to_string(rank) +
                                            " is not driven by this process (world of " +
                                            std::to_string(world->world->nranks()) + " ranks)");
  return COLLC_OK;
}

collc_status collc_world_device(const collc_world* world, int rank, int* device) {
  return guarded("collc_world_device", [&] {
    if (!checkedWorld(world) || !device)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_device: null world or device");
    if (collc_status status = checkLocalRank("collc_world_device", world, rank))
      return status;
    *device = world->world->device(rank);
    return COLLC_OK;
  });
}

collc_status collc_world_stream(const collc_world* world, int rank, void** stream) {
  return guarded("collc_world_stream", [&] {
    if (!checkedWorld(world) || !stream)
      return fail(COLLC_INVALID_ARGUMENT, "collc_world_stream: null world or stream");
    if (collc_status status = checkLocalRank("collc_world_stream", world, rank))
      return status;
    *stream = static_cast<void*>(world->world->stream(rank));
    return COLLC_OK;
  });
}

collc_status collc_world_destroy(collc_world* world) {
  return guarded("collc_world_destroy", [&] {
    if (!world)
      return COLLC_OK;
    if (int users = world->users.load())
      return fail(COLLC_INVALID_ARGUMENT,
                  "collc_world_destroy: " + std::to_string(users) +
                      " instances or dispatchers still use this world; destroy them first");
    delete world;
    return COLLC_OK;
  });
}

} // extern "C"
