# The folders of tools/ include only themselves and the folders below them, so no include runs
# back up and none goes round (README.md, "Layout"):
#   collc/ -> bench/ -> command/ -> harness/, tune/, launch/
#   cmake -DROOT=<source root> -P this
cmake_policy(VERSION 3.22) # if(IN_LIST)
set(below_collc bench command harness tune launch)
set(below_bench command harness tune launch)
set(below_command harness tune launch)
set(below_harness)
set(below_tune)
set(below_launch)

set(wrong)
set(read 0)
foreach(dir collc bench command harness tune launch)
  file(GLOB sources ${ROOT}/tools/${dir}/*.h ${ROOT}/tools/${dir}/*.cpp ${ROOT}/tools/${dir}/*.cuh)
  foreach(source ${sources})
    math(EXPR read "${read} + 1")
    file(STRINGS ${source} includes REGEX "^#include \"tools/")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"tools/([^/]+)/.*" "\\1" target "${line}")
      if(NOT target STREQUAL dir AND NOT target IN_LIST below_${dir})
        file(RELATIVE_PATH name ${ROOT} ${source})
        list(APPEND wrong "${name}: ${line}")
      endif()
    endforeach()
  endforeach()
endforeach()

if(read LESS 50)
  message(FATAL_ERROR "read only ${read} files under ${ROOT}/tools: not collc's tree?")
endif()
if(wrong)
  list(JOIN wrong "\n  " text)
  message(FATAL_ERROR "includes that run up or across tools/ (collc/ -> bench/ -> command/ -> "
                      "harness/, tune/, launch/):\n  ${text}")
endif()
message(STATUS "${read} files of tools/, every include pointing down")
