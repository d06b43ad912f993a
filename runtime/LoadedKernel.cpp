#include "runtime/LoadedKernel.h"

#include "runtime/CudaCheck.h"

namespace collc {

namespace {

llvm::Error kernelError(const std::string& kernel, const llvm::Twine& message, llvm::Error cause) {
  return llvm::joinErrors(llvm::createStringError(llvm::inconvertibleErrorCode(),
                                                  "kernel '" + kernel + "': " + message.str()),
                          std::move(cause));
}

} // namespace

llvm::Expected<std::unique_ptr<LoadedKernel>> LoadedKernel::load(const std::vector<int>& devices,
                                                                 const std::string& image,
                                                                 const std::string& kernelName) {
  if (image.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "kernel '%s': the image to load is empty", kernelName.c_str());
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
    if (llvm::Error err = COLLC_CUDA_CHECK(
            cudaLibraryLoadData(&library, image.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0)))
      return kernelError(kernelName,
                         "loading its " + llvm::Twine(image.size()) + "-byte image " + where +
                             " failed (an image built for another GPU architecture fails so)",
                         std::move(err));
    loaded->libraries_.push_back(library);
    cudaKernel_t kernel = nullptr;
    if (llvm::Error err =
            COLLC_CUDA_CHECK(cudaLibraryGetKernel(&kernel, library, kernelName.c_str())))
      return kernelError(kernelName, "no such entry point in the image " + where, std::move(err));
    loaded->kernels_.push_back(kernel);
    // Querying attributes with this device current loads the kernel into its context now (the
    // runtime loads modules lazily by default), and tells us its resource use.
    cudaFuncAttributes attributes{};
    if (llvm::Error err = COLLC_CUDA_CHECK(
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

llvm::Error LoadedKernel::launch(int rank, dim3 grid, dim3 block, const collc_params& params,
                                 cudaStream_t stream, bool programmatic) const {
  if (rank < 0 || rank >= static_cast<int>(kernels_.size()))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "kernel '%s': no rank %d (loaded for %zu ranks)", name_.c_str(),
                                   rank, kernels_.size());
  ScopedDevice restore;
  COLLC_CUDA_TRY(cudaSetDevice(devices_[rank]));
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
  if (llvm::Error err = COLLC_CUDA_CHECK(
          cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(kernels_[rank]), args)))
    return kernelError(name_,
                       "launch of " + llvm::Twine(grid.x) + " blocks x " + llvm::Twine(block.x) +
                           " threads on GPU " + llvm::Twine(devices_[rank]) + " (rank " +
                           llvm::Twine(rank) + ") failed",
                       std::move(err));
  // A launch reports some failures only through the thread's last error.
  if (llvm::Error err = COLLC_CUDA_CHECK(cudaGetLastError()))
    return kernelError(name_, "after launching on rank " + llvm::Twine(rank), std::move(err));
  return llvm::Error::success();
}

llvm::Expected<int> LoadedKernel::maxActiveBlocksPerMultiprocessor(int rank,
                                                                   int threadsPerBlock) const {
  ScopedDevice restore;
  COLLC_CUDA_TRY(cudaSetDevice(devices_[rank]));
  int blocks = 0;
  COLLC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, reinterpret_cast<const void*>(kernels_[rank]), threadsPerBlock, 0));
  return blocks;
}

} // namespace collc
