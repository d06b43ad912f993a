#include "runtime/LoadedKernel.h"

#include "runtime/CudaCheck.h"
#include "runtime/RankLaunch.h"

#include <fmt/format.h>

namespace collc {

namespace {

Error kernelError(const std::string& kernel, const std::string& message, Error cause) {
  return joinErrors(makeError("kernel '" + kernel + "': " + message), std::move(cause));
}

} // namespace

Expected<std::unique_ptr<LoadedKernel>> LoadedKernel::load(const std::vector<int>& devices,
                                                           const std::string& image,
                                                           const std::string& kernelName) {
  if (image.empty())
    return makeError(fmt::format("kernel '{}': the image to load is empty", kernelName));
  ScopedDevice restore;
  std::unique_ptr<LoadedKernel> loaded(new LoadedKernel());
  loaded->name_ = kernelName;
  loaded->devices_ = devices;
  for (size_t r = 0; r < devices.size(); ++r) {
    const std::string where =
        "on GPU " + std::to_string(devices[r]) + " (rank " + std::to_string(r) + ")";
    COLLC_CUDA_TRY(cudaSetDevice(devices[r]));
    cudaLibrary_t library = nullptr;
    // std::string keeps a NUL after its data, which a PTX image needs.
    if (Error err = COLLC_CUDA_CHECK(
            cudaLibraryLoadData(&library, image.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0)))
      return kernelError(kernelName,
                         "loading its " + std::to_string(image.size()) + "-byte image " + where +
                             " failed (an image built for another GPU architecture fails so)",
                         std::move(err));
    loaded->libraries_.push_back(library);
    cudaKernel_t kernel = nullptr;
    if (Error err = COLLC_CUDA_CHECK(cudaLibraryGetKernel(&kernel, library, kernelName.c_str())))
      return kernelError(kernelName, "no such entry point in the image " + where, std::move(err));
    loaded->kernels_.push_back(kernel);
    // Querying attributes with this device current loads the kernel into its context now (the
    // runtime loads modules lazily by default), and tells us its resource use.
    cudaFuncAttributes attributes{};
    if (Error err = COLLC_CUDA_CHECK(
            cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel))))
      return kernelError(kernelName, "loading it " + where + " failed", std::move(err));
    loaded->attributes_.push_back(attributes);
  }
  return loaded;
}

LoadedKernel::~LoadedKernel() {
  for (cudaLibrary_t library : libraries_)
    if (cudaLibraryUnload(library) != cudaSuccess)
      (void)cudaGetLastError();
}

Error LoadedKernel::launch(int rank, dim3 grid, dim3 block, const collc_params& params,
                           cudaStream_t stream, bool programmatic) const {
  if (rank < 0 || rank >= static_cast<int>(kernels_.size()))
    return makeError(
        fmt::format("kernel '{}': no rank {} (loaded for {} ranks)", name_, rank, kernels_.size()));
  DeviceForCall onDevice(devices_[rank]);
  if (Error err =
          cudaStatusToError(onDevice.status(), "cudaSetDevice(devices_[rank])", __FILE__, __LINE__))
    return err;
  // The kernel takes one argument, collc_params by value; the launch copies it from here.
  void* args[] = {const_cast<collc_params*>(&params)};
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = stream;
  // Lets this kernel's blocks be scheduled while the previous kernel on the stream finishes: its
  // launch latency hides behind that tail (the kernel waits for the previous one at its entry).
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = programmatic ? 1 : 0;
  if (Error err = COLLC_CUDA_CHECK(
          cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(kernels_[rank]), args)))
    return kernelError(name_,
                       "launch of " + std::to_string(grid.x) + " blocks x " +
                           std::to_string(block.x) + " threads on GPU " +
                           std::to_string(devices_[rank]) + " (rank " + std::to_string(rank) +
                           ") failed",
                       std::move(err));
  // A launch reports some failures only through the thread's last error.
  if (Error err = COLLC_CUDA_CHECK(cudaGetLastError()))
    return kernelError(name_, "after launching on rank " + std::to_string(rank), std::move(err));
  return Error::success();
}

Error LoadedKernel::launchRanks(const RankLaunchGrid& grid, const collc_rank_launch& argument,
                                cudaStream_t stream) const {
  if (kernels_.empty())
    return makeError(fmt::format("kernel '{}': not loaded", name_));
  DeviceForCall onDevice(devices_[0]);
  if (Error err =
          cudaStatusToError(onDevice.status(), "cudaSetDevice(devices_[0])", __FILE__, __LINE__))
    return err;
  void* args[] = {const_cast<collc_rank_launch*>(&argument)};
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid.blocksPerRank, grid.ranks);
  config.blockDim = dim3(grid.threads);
  config.stream = stream;
  // Every block waits on the others: CUDA must run all of them at once or refuse the launch.
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeCooperative;
  attribute.val.cooperative = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  if (Error err = COLLC_CUDA_CHECK(
          cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(kernels_[0]), args)))
    return kernelError(name_,
                       fmt::format("one cooperative launch of {} ranks x {} blocks x {} threads "
                                   "on GPU {} failed",
                                   grid.ranks, grid.blocksPerRank, grid.threads, devices_[0]),
                       std::move(err));
  if (Error err = COLLC_CUDA_CHECK(cudaGetLastError()))
    return kernelError(name_, "after launching every rank at once", std::move(err));
  return Error::success();
}

Expected<int> LoadedKernel::maxActiveBlocksPerMultiprocessor(int rank, int threadsPerBlock) const {
  ScopedDevice restore;
  COLLC_CUDA_TRY(cudaSetDevice(devices_[rank]));
  int blocks = 0;
  COLLC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, reinterpret_cast<const void*>(kernels_[rank]), threadsPerBlock, 0));
  return blocks;
}

} // namespace collc
