# `cmake --install <build> --prefix P`: collc as a library other projects build on.
#   P/bin/collc                       the tool
#   P/lib/libcollc.so                 the library (LLVM's archives inside it, as in the build tree)
#   P/include/collc/<dir>/<header>    the public headers, with the in-tree include paths kept:
#                                     #include "runtime/CollectiveInstance.h" works unchanged
#   P/share/collc/stdlib/*.coll       the standard specs, to read and copy (the library and the
#                                     tool carry them embedded and never look them up on disk)
#   P/lib/cmake/collc/                find_package(collc) -> the imported target collc::collc
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(COLLC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/collc)
# The same directory as collc's INSTALL_INTERFACE include directory in CMakeLists.txt.
set(COLLC_INSTALL_INCLUDEDIR include/collc)

# The API a program uses, and every collc header these include. Headers that need <nccl.h>
# (NcclLibrary.h, NcclTypes.h) or describe the tool's internals stay out: the installed set must
# compile with LLVM's, fmt-free, and the CUDA runtime's headers alone (tests/install checks it).
set(COLLC_PUBLIC_HEADERS
    abi/Types.h
    compiler/Compile.h
    abi/CompiledCollective.h
    abi/collc_abi.h
    pipeline/CompileDispatch.h
    runtime/CollectiveInstance.h
    runtime/CudaCheck.h
    runtime/Devices.h
    runtime/DispatchPlan.h
    runtime/Dispatcher.h
    runtime/Jit.h
    runtime/KernelCache.h
    runtime/LoadedKernel.h
    runtime/LocalWorld.h
    runtime/Span.h
    runtime/Status.h
    runtime/ProcessWorld.h
    runtime/SymmetricWorld.h
    runtime/TuningTable.h
    runtime/VersionInfo.h
    runtime/Watchdog.h)
foreach(header ${COLLC_PUBLIC_HEADERS})
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${COLLC_INSTALL_INCLUDEDIR}/${dir}
          COMPONENT development)
endforeach()

# Installed binaries find libcollc.so next to them, wherever the prefix is moved; NVRTC, the CUDA
# runtime and NCCL come from the machine's loader path, as in the build tree.
file(RELATIVE_PATH _collc_bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
set_target_properties(collc-tool PROPERTIES INSTALL_RPATH "\$ORIGIN/${_collc_bin_to_lib}")
set_target_properties(collc PROPERTIES INSTALL_RPATH "\$ORIGIN")

install(TARGETS collc EXPORT collcTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
install(TARGETS collc-tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

file(GLOB _collc_stdlib_specs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/stdlib/*.coll)
install(FILES ${_collc_stdlib_specs} DESTINATION ${CMAKE_INSTALL_DATADIR}/collc/stdlib
        COMPONENT runtime)

# What collcConfig.cmake needs to know of the build's LLVM: where its headers were (a hint only,
# the prefix may move to another machine) and the definitions its headers expect.
list(GET LLVM_INCLUDE_DIRS 0 COLLC_LLVM_INCLUDE_HINT)
separate_arguments(COLLC_LLVM_DEFINITIONS UNIX_COMMAND "${LLVM_DEFINITIONS}")
list(TRANSFORM COLLC_LLVM_DEFINITIONS REPLACE "^-D" "")
install(EXPORT collcTargets NAMESPACE collc:: DESTINATION ${COLLC_INSTALL_CMAKEDIR}
        COMPONENT development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/collcConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/collcConfig.cmake
                              INSTALL_DESTINATION ${COLLC_INSTALL_CMAKEDIR}
                              PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_DATADIR)
# 0.x: a minor release may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/collcConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/collcConfig.cmake ${PROJECT_BINARY_DIR}/collcConfigVersion.cmake
        DESTINATION ${COLLC_INSTALL_CMAKEDIR} COMPONENT development)
