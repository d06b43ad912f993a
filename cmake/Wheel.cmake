# The Python wheel (pyproject.toml, scikit-build-core): `cmake --install <build> --component wheel`
# lays out the package's native part, beside the modules of python/collc:
#   collc/lib/libcollc.so, collc/lib/libcollc_compiler.so   RUNPATH $ORIGIN
#   collc/bin/collc                                         RUNPATH $ORIGIN/../lib; the `collc`
#                                                           command runs it (python/collc/_cli.py)
#   collc/stdlib/*.coll                                     the standard specs, to read and copy
# EXCLUDE_FROM_ALL: a plain `cmake --install` (cmake/Install.cmake) leaves these out.
install(TARGETS collc collc_compiler_shared LIBRARY DESTINATION collc/lib COMPONENT wheel
        EXCLUDE_FROM_ALL)
install(TARGETS collc-tool RUNTIME DESTINATION collc/bin COMPONENT wheel EXCLUDE_FROM_ALL)
file(GLOB _collc_wheel_specs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/stdlib/*.coll)
install(FILES ${_collc_wheel_specs} DESTINATION collc/stdlib COMPONENT wheel EXCLUDE_FROM_ALL)
