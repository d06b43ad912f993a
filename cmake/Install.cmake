# `cmake --install <build> --prefix P`: collc as a library other projects build on.
#   P/bin/collc                       the tool
#   P/lib/libcollc.so                 the runtime: JIT, worlds, instances, dispatch (no LLVM)
#   P/lib/libcollc_compiler.so        the compiler, LLVM's and clang's archives hidden inside it
#   P/include/collc/collc.hpp         the C++ API for applications: #include <collc/collc.hpp>
#   P/include/collc/<dir>/<header>    what collc.hpp includes, and nothing else, each including
#                                     the others as <collc/runtime/Status.h>
#   P/include/collc/collc.h           the C API: #include <collc/collc.h>
#   P/share/collc/stdlib/*.coll       the standard specs, to read and copy (the libraries and the
#                                     tool carry them embedded and never look them up on disk)
#   P/lib/cmake/collc/                find_package(collc) -> the imported targets collc::collc
#                                     (libcollc.so) and collc::compiler (libcollc_compiler.so)
# Nothing is installed in P/include but collc/: no folder of collc's (runtime/, abi/) can meet one
# of an application's.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(COLLC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/collc)

# What include/collc/collc.hpp includes, directly or not: plain C++17 and the CUDA runtime's
# headers, nothing of LLVM's, fmt's or NCCL's (tests/install compiles each with nothing else on
# the include path, and checks that the list is exactly collc.hpp's). The compiler's C++ API
# (compiler/Compile.h: load, check and compile a spec) is one of them; the compiler's other headers
# (its IR, passes, front end) stay in the tree.
set(COLLC_PUBLIC_HEADERS
    abi/CompiledCollective.h
    abi/SizeMath.h
    abi/Status.h
    abi/Types.h
    abi/collc_abi.h
    compiler/Compile.h
    pipeline/CompileDispatch.h
    runtime/BundleFile.h
    runtime/BundleFormat.h
    runtime/CollectiveInstance.h
    runtime/CudaCheck.h
    runtime/Devices.h
    runtime/DispatchPlan.h
    runtime/Dispatcher.h
    runtime/HeapSize.h
    runtime/Jit.h
    runtime/KernelCache.h
    runtime/LaunchEnvironment.h
    runtime/LoadedKernel.h
    runtime/LocalWorld.h
    runtime/ProcessWorld.h
    runtime/SharedGpuWorld.h
    runtime/Span.h
    runtime/Status.h
    runtime/SymmetricWorld.h
    runtime/TuningTable.h
    runtime/VersionInfo.h
    runtime/Watchdog.h)
# Each is installed as cmake/PrefixIncludes.cmake copies it, its includes under collc/; the
# copies are made at build time, in the build folder.
set(_collc_installed_headers)
foreach(header ${COLLC_PUBLIC_HEADERS} include/collc/collc.hpp)
  string(REGEX REPLACE "^include/collc/" "" installed ${header})
  set(copy ${PROJECT_BINARY_DIR}/installed-include/collc/${installed})
  add_custom_command(OUTPUT ${copy}
                     COMMAND ${CMAKE_COMMAND} -DIN=${PROJECT_SOURCE_DIR}/${header} -DOUT=${copy}
                             -P ${PROJECT_SOURCE_DIR}/cmake/PrefixIncludes.cmake
                     DEPENDS ${PROJECT_SOURCE_DIR}/${header}
                             ${PROJECT_SOURCE_DIR}/cmake/PrefixIncludes.cmake
                     VERBATIM)
  list(APPEND _collc_installed_headers ${copy})
  get_filename_component(dir ${installed} DIRECTORY)
  install(FILES ${copy} DESTINATION include/collc/${dir} COMPONENT development)
endforeach()
add_custom_target(collc_installed_headers ALL DEPENDS ${_collc_installed_headers})
# The C API includes nothing of collc's.
install(FILES ${PROJECT_SOURCE_DIR}/include/collc/collc.h DESTINATION include/collc
        COMPONENT development)

# Installed binaries find the libraries next to them, wherever the prefix is moved; NVRTC and NCCL
# come from the machine's loader path, as in the build tree. The build tree's tool has the same
# RUNPATH (CMAKE_BUILD_WITH_INSTALL_RPATH), so it keeps ../lib where the install's lib is elsewhere.
file(RELATIVE_PATH _collc_bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
set(_collc_tool_rpath "\$ORIGIN/${_collc_bin_to_lib}")
if(NOT _collc_bin_to_lib STREQUAL "../lib")
  list(APPEND _collc_tool_rpath "\$ORIGIN/../lib")
endif()
set_target_properties(collc-tool PROPERTIES INSTALL_RPATH "${_collc_tool_rpath}")
set_target_properties(collc collc_compiler_shared PROPERTIES INSTALL_RPATH "\$ORIGIN")

install(TARGETS collc collc_compiler_shared EXPORT collcTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
install(TARGETS collc-tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

file(GLOB _collc_stdlib_specs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/stdlib/*.coll)
install(FILES ${_collc_stdlib_specs} DESTINATION ${CMAKE_INSTALL_DATADIR}/collc/stdlib
        COMPONENT runtime)

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
