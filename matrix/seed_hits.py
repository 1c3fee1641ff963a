#!/usr/bin/env python3
"""P8's counts on the published seed input (native_layer_norm, float32
[101, 3, 320], strides [320, 32320, 1]) for a target of an earlier flagprop
report: how often the op entered LibEntry's run and key, fast and stock.

Usage: python3 matrix/seed_hits.py FLAGPROP REPORT_JSON TARGET_NAME
(FLAGPROP: the flagprop binary, which prints the seed case; the target's
FlagGems must be importable as the report's run had it.)
"""

import json
import os
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(root, "python"), os.path.join(root, "mocks")]

from flagprop.observers import hits  # noqa: E402
from flagprop.engine import loader, ops  # noqa: E402


def main(flagprop, report_path, name):
    target = next(t["target"] for t in json.load(open(report_path))["targets"] if t.get("name") == name)
    case = json.loads(subprocess.check_output([flagprop, "seed-case"]))
    if target["flag_gems"]["kind"] == "source":
        loader.add_flag_gems_source(target["flag_gems"]["path"])
    ops.setup(target, [case["op"]])
    obs = hits.observe_hits(target, case, target["default_gates"])
    print("seed input on %s: fast path %s" % (name, obs["fast_path"]))
    for c in obs["kernels"]:
        print("  kernel %s: run %d (stock %d), key %d (stock %d)" % (c["name"], c["run"], c["run_stock"], c["key"],
                                                                     c["key_stock"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
