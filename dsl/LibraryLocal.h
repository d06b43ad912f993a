// COLLC_LIBRARY_LOCAL keeps a function out of the shared library's exported symbols. The front end
// and the compiler speak LLVM's types inside (SMLoc, raw_ostream); LLVM lives hidden in
// libcollc_compiler.so, so no exported symbol may name one (tests/install checks with nm).
#ifndef COLLC_DSL_LIBRARYLOCAL_H
#define COLLC_DSL_LIBRARYLOCAL_H

#define COLLC_LIBRARY_LOCAL __attribute__((visibility("hidden")))

#endif // COLLC_DSL_LIBRARYLOCAL_H
