#!/usr/bin/env python3
"""What the stock control's switch costs: FlagGems' kernels unregistered
before the stock control's pass and registered again after it
(``flagprop.engine.ops._FlagGemsOff``), as a function of how many kernels
a process has registered.

A benchmark, not a test: it prints numbers and asserts nothing.

Usage::

    python3 bench/switch_cost.py                                 # synthetic kernels
    python3 bench/switch_cost.py --flaggems-src .targets/FlagGems/src   # a GPU host: FlagGems' own

It needs torch 2.x (``torch.library.Library._destroy``, which the switch
uses); with torch 1.x it says so and exits 2.

With ``--flaggems-src`` it registers FlagGems' kernels for the overloads of
``catalog/flaggems_overloads.txt`` (the first ``--ops N``, default all)
through ``flagprop.engine.ops.setup`` (FlagGems picks its device), as a
run of ``matrix/targets/h200-flaggems-all.json`` does in each of its
processes. Without it, it registers a do-nothing Python kernel at the CUDA
dispatch key for each of those overloads this torch has (nothing calls
them: no GPU is needed), recorded and replayed as setup's registrations
are. Then it times ``--repeat`` switches (default 20) at each of the sizes
``--sizes`` (default: 10, 100 and all), and prints per size the
registrations, the median ms to switch off (unregister), to switch on
(register again) and both, and µs per registration.

Every P5 / P6 case on a target with the stock control ("control":
"stock") and FlagGems' kernels registered pays one switch off and on for
its control's pass, whatever its number of calls (one to three), and a
lost device judged again in the op's place one more (docs/control.md); a run reports the share of
its cases' time these switches took as ``harness_share.flaggems_off``.
"""

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def overloads(limit=None):
    """The overloads of catalog/flaggems_overloads.txt, in file order."""
    names = []
    with open(os.path.join(ROOT, "catalog", "flaggems_overloads.txt")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and line not in names:
                names.append(line)
    return names[:limit] if limit else names


def register_flaggems(ops, src, names):
    """FlagGems' kernels for ``names`` registered by ``ops.setup``; returns
    how many registrations it recorded."""
    sys.path.insert(0, os.path.abspath(src))
    target = {"device": "cuda:0", "ops": {"kind": "aten", "enable": "flag_gems"},
              "flag_gems": {"kind": "source", "path": src}, "installer": {"mode": "none"}}
    ops.setup(target, names)
    return len(ops._STATE["gems"][2])


def register_synthetic(ops, torch, names):
    """A do-nothing Python kernel at the CUDA key for each overload of
    ``names`` this torch has, into one recording library that becomes the
    state ``ops._FlagGemsOff`` switches; returns how many it registered."""
    lib = ops._RecordingLibrary("aten", "IMPL")

    def kernel(*args, **kwargs):
        raise RuntimeError("not to be called")

    for name in names:
        try:
            lib.impl(name, kernel, "CUDA")
        except Exception:  # not an overload of this torch (or refused): left out
            pass
    ops._STATE["libs"] = [lib]
    ops._STATE["gems"] = (None, [], lib.recorded)
    return len(lib.recorded)


def time_switches(ops, repeat):
    """Medians over ``repeat`` switches: (off ms, on ms)."""
    off, on = [], []
    for _ in range(repeat):
        scope = ops._FlagGemsOff()
        t0 = time.perf_counter()
        scope.__enter__()
        t1 = time.perf_counter()
        scope.__exit__(None, None, None)
        t2 = time.perf_counter()
        off.append(1e3 * (t1 - t0))
        on.append(1e3 * (t2 - t1))
    return statistics.median(off), statistics.median(on)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--flaggems-src", help="FlagGems' src/ folder: its own kernels (a GPU host)")
    p.add_argument("--ops", type=int, default=None, help="at most this many overloads (default: all)")
    p.add_argument("--sizes", default=None, help="comma-separated registration counts to time (default 10,100,all)")
    p.add_argument("--repeat", type=int, default=20, help="switches per size (default 20)")
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import torch
    from flagprop.engine import ops

    if not hasattr(torch.library.Library, "_destroy"):
        print("switch cost: torch %s's Library has no _destroy, which the stock control's switch needs "
              "(torch 2.x)" % torch.__version__, file=sys.stderr)
        return 2
    names = overloads(args.ops)
    how = "FlagGems' kernels (%s)" % args.flaggems_src if args.flaggems_src else "synthetic Python kernels"
    print("switch cost: %s, torch %s, %d overloads listed" % (how, torch.__version__, len(names)))
    if args.flaggems_src:
        total = register_flaggems(ops, args.flaggems_src, names)
    else:
        total = register_synthetic(ops, torch, names)
    recorded = list(ops._STATE["gems"][2])
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [10, 100, total]
    print("%14s %12s %12s %12s %18s" % ("registrations", "off, ms", "on, ms", "both, ms", "per registration"))
    for size in sorted({min(s, total) for s in sizes if s > 0}):
        # The first `size` recorded registrations are the state switched.
        ops._STATE["gems"] = (None, [], recorded[:size])
        ops._FlagGemsOff().__enter__()  # every registration off ...
        ops._FlagGemsOff().__exit__(None, None, None)  # ... and the first `size` of them on again
        off, on = time_switches(ops, args.repeat)
        print("%14d %12.2f %12.2f %12.2f %15.1f us" % (size, off, on, off + on, 1e3 * (off + on) / size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
