// collc's C++ API for applications, in one header: #include <collc/collc.hpp>, and link
// collc::compiler (or collc::collc where nothing is compiled at run time). Installed, it and
// everything it includes lie under include/collc/, so none of collc's folder names (runtime/,
// abi/) meets one of the application's. Plain C++17 and the CUDA runtime's headers: no LLVM, no
// NCCL, no fmt. The reference is docs/api.md; the C API (collc/collc.h, included here) is
// docs/c-api.md.
//
// Specs are compiled by libcollc_compiler.so: one variant through the compiler's C++ API
// (collc/compiler/Compile.h: loadSpec, compileCollective, checkSpec) or the C API
// (collc_compile), a size-dispatched plan through compileDispatchProgram.
#ifndef COLLC_COLLC_HPP
#define COLLC_COLLC_HPP

// The C API: the version macros, compiling one variant, the NVRTC library to use.
#include "collc/collc.h"

// Errors: Error, Expected<T>, ExitOnError.
#include "runtime/Status.h"
// GPUs: gpuCount, gpuArch; CUDA calls as Errors (COLLC_CUDA_CHECK), the current device kept.
#include "runtime/CudaCheck.h"
#include "runtime/Devices.h"
// Symmetric memory: one process over its GPUs (and DeviceBuffer), one process per GPU (and the
// launcher's variables it reads), many ranks on one GPU.
#include "runtime/LaunchEnvironment.h"
#include "runtime/LocalWorld.h"
#include "runtime/ProcessWorld.h"
#include "runtime/SharedGpuWorld.h"
// A compiled collective made ready in a world and launched; the heap it needs.
#include "runtime/CollectiveInstance.h"
#include "runtime/HeapSize.h"
// The compiler: a spec loaded, checked, compiled to a CompiledCollective (CUDA source and ABI).
#include "compiler/Compile.h"
// NVRTC: CUDA source to a cubin, through the disk cache.
#include "runtime/Jit.h"
#include "runtime/KernelCache.h"
// Ahead-of-time bundles: a compiled variant and its cubins, loaded without compiler or NVRTC.
#include "runtime/BundleFile.h"
// Dispatch by message size: the tuning table, the plan, its variants compiled, the dispatcher.
#include "pipeline/CompileDispatch.h"
#include "runtime/Dispatcher.h"
#include "runtime/TuningTable.h"
// What collc was built with and what it loaded.
#include "runtime/VersionInfo.h"

#endif // COLLC_COLLC_HPP
