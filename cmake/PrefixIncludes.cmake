# A public header as it is installed: its includes of collc's headers moved under collc/.
#   cmake -DIN=<source header> -DOUT=<installed copy> -P this
# In the source tree the headers include each other by their folders ("runtime/Status.h"), with
# the tree's root on the include path. Installed, only <prefix>/include is on it and every header
# lies under collc/, so the same include reads "collc/runtime/Status.h" and never finds a
# runtime/ or abi/ folder of the application's.
file(READ ${IN} text)
string(REGEX REPLACE "#include \"(abi|compiler|pipeline|runtime)/" "#include \"collc/\\1/" text "${text}")
file(WRITE ${OUT} "${text}")
