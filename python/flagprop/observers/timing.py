"""P9: A/B timing of an op with the installer's patch on (A) and off (B),
in one process: raw samples, no verdicts (``flagprop.judging.verdicts.ab_timing``
summarises them).

The installer runs once; its patch is then switched off and on by putting
back the component objects seen before and after it (``observe.apply``).
After a warm-up in both states (compilations, cache fills), pairs are
measured interleaved, AB then BA (ABBA), unprofiled. Per measurement the op
is called ``reps`` times: *host* time is the enqueue time of those calls (no
synchronisation inside the timed loop), *device* time comes from events on
the current stream around them (a device only). Times are µs per call.
"""

import sys
import time

import torch

from . import hits
from ..engine import observe, ops


def _device_events(device):
    mod = getattr(torch, device.type, None)
    if device.type == "cpu" or mod is None or not hasattr(mod, "Event"):
        return None
    return mod


def observe_ab(target, case, gates, pairs=100, reps=10, warmup=5):
    """Measures the op of ``case`` (its first call, fixed inputs) with the
    patch on and off. Returns {"host_a", "host_b", "device_a", "device_b"
    (lists of µs per call, one per pair; device lists empty on the CPU),
    "pairs", "reps", "fast_path", "fast_hits" (fast LibEntry runs of two
    calls with the patch on, counted as P8 counts them)} or {"refused": why,
    "install"?}. B is the true stock path; A falls back to the stock run
    through P8's counting shim, a few hundred ns per fallback."""
    import sys

    runner = ops.Runner(target, case["op"], gates)
    before = observe.snapshot()
    cls = getattr(sys.modules.get("flag_gems.utils.libentry"), "LibEntry", None)
    counts = {}
    if cls is not None and runner.before is not None:
        cls.run = hits._counting(counts, cls.__dict__["run"], "run_stock")
        runner.before = observe.snapshot()
    inst = runner.install()
    if not inst["present"]:
        return {"refused": "the target has no installer: there is no patch to time"}
    if not inst["active"]:
        ex = inst["call"].get("exceptions") or []
        cause = "; caught inside it: %s: %s" % (ex[-1]["type"], ex[-1]["message"]) if ex else ""
        return {"refused": "P1 does not show the patch active: the installer did not install its fast path" + cause,
                "install": inst["call"]}
    after = observe.snapshot()
    device = torch.device(target["device"])
    call = case["calls"][0]
    inputs = ops.device_inputs(call, ops.build_cpu(call), device)
    events = _device_events(device)

    def once():
        runner.call(call, inputs)

    once()  # compile and fill the cache, then count two calls as P8 does
    if cls is not None:
        cls.run = hits._counting(counts, after["run"], "run")
        counts.clear()
        once()
        once()
        cls.run = after["run"]
    fast = sum(c["run"] - c["run_stock"] for c in counts.values())
    if fast <= 0:
        return {"refused": "P8 shows no fast hits: none of the op's LibEntry launches took the fast run (%s)"
                % ", ".join("%s %d/%d" % (n, c["run"] - c["run_stock"], c["run"]) for n, c in counts.items())}
    for snap in (before, after):
        observe.apply(snap)
        for _ in range(warmup):
            once()
    if events is not None:
        events.synchronize()
    out = {"host_a": [], "host_b": [], "device_a": [], "device_b": [], "pairs": pairs, "reps": reps,
           "fast_path": "active", "fast_hits": fast}
    for i in range(pairs):
        for side in ("ab" if i % 2 == 0 else "ba"):
            observe.apply(after if side == "a" else before)
            host, dev = _measure(once, reps, events)
            out["host_" + side].append(host)
            if dev is not None:
                out["device_" + side].append(dev)
    observe.apply(after)
    return out


def _measure(once, reps, events):
    """(host µs per call, device µs per call or None) of ``reps`` calls.
    Device time comes from the native runtime's events on the raw current
    stream where flagprop's witness has a device (``flagprop_native``), else
    from the framework's events."""
    native = sys.modules.get("flagprop_native")
    stream = getattr(events.current_stream(), "cuda_stream", None) if events is not None else None
    if native is not None and stream is not None:
        host = []

        def timed():
            t0 = time.perf_counter()
            for _ in range(reps):
                once()
            host.append((time.perf_counter() - t0) * 1e6 / reps)

        ms = native.event_ms(stream, timed)
        if ms is not None:
            return host[0], ms * 1e3 / reps
    start = end = None
    if events is not None:
        start, end = events.Event(enable_timing=True), events.Event(enable_timing=True)
        start.record()
    t0 = time.perf_counter()
    for _ in range(reps):
        once()
    host = (time.perf_counter() - t0) * 1e6 / reps
    if events is None:
        return host, None
    end.record()
    end.synchronize()
    return host, start.elapsed_time(end) * 1e3 / reps
