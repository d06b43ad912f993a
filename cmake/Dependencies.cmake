# Every dependency comes from the machine (Debian packages, the CUDA toolkit); nothing is downloaded.

# LLVM Support (SourceMgr diagnostics, SHA-256, FileCheck) and clang's Format library.
find_package(LLVM 14 REQUIRED CONFIG HINTS /usr/lib/llvm-14/lib/cmake/llvm)
message(STATUS "LLVM ${LLVM_PACKAGE_VERSION} in ${LLVM_LIBRARY_DIR}")
# Headers only, for code that links libcollc.so (which exports the LLVM symbols it contains).
add_library(collc_llvm_headers INTERFACE)
target_include_directories(collc_llvm_headers SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(collc_llvm_headers INTERFACE ${LLVM_DEFINITIONS})
# Headers and the static archives, for libcollc.so itself (and the fuzzer).
add_library(collc_llvm INTERFACE)
target_link_libraries(collc_llvm INTERFACE collc_llvm_headers)
# Link the static archives by name: Debian's ClangConfig.cmake insists on tools of other packages.
set(_collc_llvm_archives clangFormat clangToolingInclusions clangToolingCore clangRewrite clangLex
    clangBasic LLVMFrontendOpenMP LLVMSupport LLVMDemangle)
set(_collc_llvm_paths)
foreach(lib ${_collc_llvm_archives})
  find_library(COLLC_LIB_${lib} NAMES lib${lib}.a PATHS ${LLVM_LIBRARY_DIR} NO_DEFAULT_PATH REQUIRED)
  list(APPEND _collc_llvm_paths ${COLLC_LIB_${lib}})
endforeach()
find_package(ZLIB REQUIRED)
find_library(COLLC_TINFO NAMES tinfo REQUIRED)
target_link_libraries(collc_llvm INTERFACE -Wl,--start-group ${_collc_llvm_paths} -Wl,--end-group
                      ZLIB::ZLIB ${COLLC_TINFO} pthread)
# FileCheck as a library, for the golden tests only (its Support symbols come from libcollc.so).
find_library(COLLC_LIB_LLVMFileCheck NAMES libLLVMFileCheck.a PATHS ${LLVM_LIBRARY_DIR}
             NO_DEFAULT_PATH REQUIRED)

# fmt, header-only: the GPU machine has no libfmt.
find_package(fmt REQUIRED)
add_library(collc_fmt INTERFACE)
target_link_libraries(collc_fmt INTERFACE fmt::fmt-header-only)

# CUDA: the runtime library linked statically (CMakeLists.txt says why). It loads the driver lazily
# and reports "no driver" as an error code, so everything short of running a kernel works without a
# GPU.
if(NOT COLLC_FUZZ)
  find_package(CUDAToolkit 12.4 REQUIRED)
  message(STATUS "CUDA toolkit ${CUDAToolkit_VERSION} in ${CUDAToolkit_LIBRARY_DIR}")
  # NVRTC: its header only. The library is opened at run time (runtime/NvrtcLibrary.h), from the
  # toolkit, a pip wheel or wherever COLLC_NVRTC_LIBRARY points.
  add_library(collc_nvrtc INTERFACE)
  target_include_directories(collc_nvrtc SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS})
  find_path(COLLC_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include REQUIRED)
endif()

if(COLLC_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
