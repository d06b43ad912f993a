"""The package from this source tree and the C library from the build (COLLC_LIBRARY_DIR, else
build/lib of the tree), whatever directory pytest runs from; with COLLC_TEST_INSTALLED=1, the
package installed in this Python (a wheel) as it is."""

import os
import sys
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parent.parent
INSTALLED = os.environ.get("COLLC_TEST_INSTALLED") == "1"
if not INSTALLED:
    sys.path.insert(0, str(PYTHON_DIR))
    os.environ.setdefault("COLLC_LIBRARY_DIR", str(PYTHON_DIR.parent / "build" / "lib"))
