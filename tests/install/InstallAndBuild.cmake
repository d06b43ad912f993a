# Installs a collc build and builds examples/external, and with it every example of the tree,
# against it (see CMakeLists.txt here):
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DEXAMPLE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#         -DCXX_COMPILER=... -DC_COMPILER=... -DCUDA_INCLUDE_DIRS="a|b" -P this
# Every step's failure names the step and shows its output.
cmake_policy(VERSION 3.22) # if(IN_LIST)
function(run_step what)
  if(NOT DEFINED step_directory)
    set(step_directory ${WORK_DIR})
  endif()
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${step_directory} RESULT_VARIABLE status
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status}):\n${out}${err}")
  endif()
  set(step_output "${out}${err}" PARENT_SCOPE)
endfunction()

string(REPLACE "|" ";" CUDA_INCLUDE_DIRS "${CUDA_INCLUDE_DIRS}")
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

foreach(file bin/collc lib/libcollc.so lib/libcollc_compiler.so include/collc/collc.h
        include/collc/collc.hpp include/collc/runtime/Dispatcher.h
        include/collc/runtime/CollectiveInstance.h include/collc/runtime/Status.h
        include/collc/pipeline/CompileDispatch.h include/collc/compiler/Compile.h
        include/collc/abi/collc_abi.h
        include/collc/abi/Types.h share/collc/stdlib/allreduce_oneshot.coll
        lib/cmake/collc/collcConfig.cmake lib/cmake/collc/collcConfigVersion.cmake
        lib/cmake/collc/collcTargets.cmake)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "the install has no ${file}")
  endif()
endforeach()
# Headers under collc/ only: nothing in P/include could meet a folder of the application's.
file(GLOB top RELATIVE ${prefix}/include ${prefix}/include/*)
if(NOT top STREQUAL "collc")
  message(FATAL_ERROR "P/include holds ${top}: everything installed there belongs under collc/")
endif()
# Of the compiler, its C++ API (compiler/Compile.h) alone: not its IR, passes or front end.
file(GLOB compiler_headers RELATIVE ${prefix}/include/collc/compiler
     ${prefix}/include/collc/compiler/*)
if(NOT compiler_headers STREQUAL "Compile.h" OR EXISTS ${prefix}/include/collc/dsl)
  message(FATAL_ERROR "the install has compiler headers past compiler/Compile.h: "
                      "${compiler_headers}")
endif()
# Every header includes collc's others as "collc/...", and each of those is installed.
file(GLOB_RECURSE headers RELATIVE ${prefix}/include ${prefix}/include/collc/*)
foreach(header ${headers})
  file(STRINGS ${prefix}/include/${header} includes REGEX "^#include \"")
  set(included_${header})
  foreach(line ${includes})
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
    if(NOT included MATCHES "^collc/")
      message(FATAL_ERROR "installed ${header} includes \"${included}\", not under collc/")
    endif()
    if(NOT EXISTS ${prefix}/include/${included})
      message(FATAL_ERROR "installed ${header} includes \"${included}\", which is not installed")
    endif()
    list(APPEND included_${header} ${included})
  endforeach()
endforeach()
# ... and every installed header is one that collc/collc.hpp needs: what it includes, directly or
# not.
set(needed collc/collc.hpp)
set(pending collc/collc.hpp)
while(pending)
  list(POP_FRONT pending header)
  foreach(included ${included_${header}})
    if(NOT included IN_LIST needed)
      list(APPEND needed ${included})
      list(APPEND pending ${included})
    endif()
  endforeach()
endwhile()
foreach(header ${headers})
  if(NOT header IN_LIST needed AND NOT header STREQUAL "collc/collc.h")
    message(FATAL_ERROR "installed ${header} is not one that collc/collc.hpp includes")
  endif()
endforeach()

# None includes LLVM, clang or fmt, and each compiles on its own (and all together) with nothing
# but P/include, the C++ library and the CUDA toolkit's headers: no LLVM include path is given.
set(system_includes)
foreach(dir ${CUDA_INCLUDE_DIRS})
  list(APPEND system_includes -isystem ${dir})
endforeach()
set(all_headers ${WORK_DIR}/all_headers.cpp)
file(WRITE ${all_headers} "// Every installed collc header, for a syntax check.\n")
foreach(header ${headers})
  file(STRINGS ${prefix}/include/${header} foreign REGEX "^#include [<\"](llvm|clang|fmt)/")
  if(foreign)
    message(FATAL_ERROR "installed ${header} includes ${foreign}")
  endif()
  set(one_header ${WORK_DIR}/one_header.cpp)
  file(WRITE ${one_header} "#include <${header}>\n")
  run_step("compiling installed ${header} on its own" ${CXX_COMPILER} -std=c++17 -fsyntax-only -Wall
           -Wextra -Werror -I${prefix}/include ${system_includes} ${one_header})
  file(APPEND ${all_headers} "#include <${header}>\n")
endforeach()
run_step("compiling every installed header" ${CXX_COMPILER} -std=c++17 -fsyntax-only -Wall
         -Wextra -Werror -I${prefix}/include ${system_includes} ${all_headers})
# The C API's header is plain C99 too, included as "collc/collc.h" from the prefix's include/.
file(WRITE ${WORK_DIR}/c_api.c "#include <collc/collc.h>\nint main(void) { return COLLC_OK; }\n")
run_step("compiling installed collc/collc.h as C99" ${C_COMPILER} -std=c99 -pedantic -fsyntax-only
         -Wall -Wextra -Werror -I${prefix}/include ${WORK_DIR}/c_api.c)

# The installed tool finds its libraries through its RPATH, from any directory, and the embedded
# standard library; the installed .coll files are the same specs.
set(ENV{COLLC_CACHE_DIR} ${WORK_DIR}/cache)
run_step("installed collc list" ${prefix}/bin/collc list)
if(NOT step_output MATCHES "allreduce_oneshot")
  message(FATAL_ERROR "installed collc list does not name allreduce_oneshot:\n${step_output}")
endif()
run_step("installed collc check" ${prefix}/bin/collc check
         ${prefix}/share/collc/stdlib/allreduce_oneshot.coll)

# The example, built as a user would: only the prefix is given.
set(build ${WORK_DIR}/external-build)
run_step("configuring examples/external" ${CMAKE_COMMAND} -S ${EXAMPLE_DIR} -B ${build}
         -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_C_COMPILER=${C_COMPILER}
         -DCMAKE_BUILD_TYPE=Release
         -DCMAKE_PREFIX_PATH=${prefix})
run_step("building examples/external" ${CMAKE_COMMAND} --build ${build})
# Every example of collc's tree is built there, against the prefix alone: none includes a header
# of the source tree or of LLVM.
foreach(example allreduce_app jit_allreduce procs_allreduce tuned_app tuned_allreduce c_allreduce)
  if(NOT EXISTS ${build}/${example})
    message(FATAL_ERROR "examples/external built no ${example}")
  endif()
endforeach()
file(GLOB examples ${EXAMPLE_DIR}/*.cpp ${EXAMPLE_DIR}/../*.cpp ${EXAMPLE_DIR}/../*.c)
foreach(example ${examples})
  file(STRINGS ${example} tree_includes REGEX "^#include [<\"](abi|compiler|dsl|pipeline|runtime|tools|llvm)/")
  if(tree_includes)
    message(FATAL_ERROR "${example} includes ${tree_includes}, which an install does not ship")
  endif()
endforeach()

# Runs the example built as `program` with the remaining arguments; its output must match
# `pattern`: what it compiled, then what it ran or why it ran nothing.
function(run_example program pattern)
  run_step("running ${program}" ${build}/${program} ${ARGN})
  message("${step_output}")
  if(NOT step_output MATCHES "${pattern}")
    message(FATAL_ERROR "${program} did not compile its spec, or neither ran nor said why not")
  endif()
endfunction()

# The compiler's C++ API from an installed program: a spec compiled and JIT-compiled, run where 2
# GPUs are visible (without them it says so and exits 0).
set(compiled "allreduce_oneshot for 2 ranks, kernel [A-Za-z0-9_]+, cubin [1-9][0-9]* bytes")
run_example(allreduce_app "${compiled}.*(nothing to run|correct)")
set(jit "compiled allreduce_oneshot for [0-9]+ ranks.*JIT: [1-9][0-9]*-byte cubin")
run_example(jit_allreduce "${jit}.*(nothing to run|graph of 10 calls per rank: correct)" 4096)

# Dispatch by size, with the built-in rule ("none": no table), so the plan is the same anywhere.
run_step("running tuned_app" ${build}/tuned_app none)
message("${step_output}")
if(NOT step_output MATCHES "built-in default rule.*[1-9][0-9]* variants compiled")
  message(FATAL_ERROR "tuned_app did not report its plan and compiled variants")
endif()
if(NOT step_output MATCHES "nothing to run|correct")
  message(FATAL_ERROR "tuned_app neither ran nor said why not")
endif()

# The C API from C, built against the prefix: it compiles its spec, then runs on 2 GPUs or says
# why not.
run_example(c_allreduce
            "compiled allreduce_oneshot for 2 ranks.*(no GPU|needs 2 GPUs|graph replay: correct)" 4096)

# The tutorial's table (docs/tutorial.md, section 6): its spec paths are relative to the
# repository root, as the tutorial runs it.
set(step_directory ${SOURCE_DIR})
run_step("running tuned_app on the tutorial's table" ${build}/tuned_app
         docs/tutorial/tuning-example.tsv)
unset(step_directory)
message("${step_output}")
set(plan "tuning table docs/tutorial/tuning-example.tsv.*")
string(APPEND plan "\\[0, 64K\\)  docs/tutorial/my_allreduce.coll/ll")
if(NOT step_output MATCHES "${plan}.*2 variants compiled")
  message(FATAL_ERROR "tuned_app did not follow the tutorial's table")
endif()
