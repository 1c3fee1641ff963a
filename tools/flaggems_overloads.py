#!/usr/bin/env python3
"""Prints the ATen overloads a FlagGems checkout registers, one per line, as
torch.ops spells them ("add.Tensor", "abs" for abs.default), for
catalog/flaggems_overloads.txt.

Usage: tools/flaggems_overloads.py FLAGGEMS_SRC [COMMIT]

Reads ``_FULL_CONFIG`` in FLAGGEMS_SRC/flag_gems/__init__.py with ``ast``
(nothing is imported or run): a tuple of entries whose first element is the
overload's name. Exits 1 with a one-line message when the file or the tuple
is missing."""

import ast
import os
import sys


def overloads(src):
    path = os.path.join(src, "flag_gems", "__init__.py")
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except OSError as e:
        sys.exit("flaggems_overloads: cannot read %s: %s" % (path, e.strerror))
    for node in ast.walk(tree):
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if getattr(target, "id", None) == "_FULL_CONFIG" and isinstance(node.value, (ast.Tuple, ast.List)):
            names = []
            for item in node.value.elts:
                if isinstance(item, (ast.Tuple, ast.List)) and item.elts and isinstance(item.elts[0], ast.Constant):
                    name = item.elts[0].value
                    names.append(name[: -len(".default")] if name.endswith(".default") else name)
            return names
    sys.exit("flaggems_overloads: %s has no _FULL_CONFIG tuple" % path)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[1])
    names = overloads(sys.argv[1])
    commit = sys.argv[2] if len(sys.argv) == 3 else "unknown"
    unique = sorted(set(names))
    print("# ATen overloads FlagGems registers (_FULL_CONFIG), FlagGems commit %s:" % commit)
    print("# %d entries, %d distinct overloads, %d distinct ops. Made by tools/flaggems_overloads.py."
          % (len(names), len(unique), len({n.split(".")[0] for n in unique})))
    for n in unique:
        print(n)


if __name__ == "__main__":
    main()
