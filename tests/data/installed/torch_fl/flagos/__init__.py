"""Installed-mode test double: the R5-shaped fixture body under the real
package name (flagprop's own code)."""

import os as _os

FAULTS = frozenset({"silent_skip"})
_SHARED = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "..", "..", "..", "..", "..",
                        "fixtures", "installers", "example_installer.py")
with open(_SHARED, "rb") as _f:
    exec(compile(_f.read(), _os.path.abspath(_SHARED), "exec"))
