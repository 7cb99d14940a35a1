"""The writers under test (python/gigscope's verl and trl modules, numpy-only and TRL's own dependencies, not
the native extension) and the tests' helpers import from the source tree."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for path in (os.path.dirname(os.path.dirname(HERE)), HERE):
    if path not in sys.path:
        sys.path.insert(0, path)
