"""P7: whether an op's work follows the current stream: raw facts, no
verdicts (``flagprop.judging.verdicts.stream_semantics`` judges them).

On a device (``cuda:N``, ``flagos:N``) the facts come from timing witnesses
built with the device's own streams (``torch.cuda`` or the PrivateUse1
module): a long-running kernel is enqueued first, then the op, and the
results are read after synchronising one stream only, so work issued to
another stream than the intended one shows as wrong or unfinished results.
On flagprop's mocks the stream model (``flag_gems.runtime.torch_device_fn``)
logs the stream of every kernel launch, and the same four facts are read off
the log. The caller's sandbox undoes all of it.
"""

import sys

import torch

from ..engine import facts, ops

#: The facts P7 asks for, in order.
FACTS = ("ordered_after_earlier_work", "correct_after_syncing_the_stream", "default_stream_untouched",
         "switch_follows_the_stream")


def _mock_facts(runner, case, target):
    dfn = sys.modules["flag_gems.runtime"].torch_device_fn
    log = sys.modules["flag_gems.utils.libentry"].LAUNCH_LOG
    call = case["calls"][0]
    cpu = ops.build_cpu(call)

    def launches_under(stream):
        del log[:]
        with dfn.stream(stream):
            runner.call(call, ops.device_inputs(call, cpu, target["device"]))
        return list(log)

    launches_under(dfn.default_stream)  # warm-up: compilations and cache fills
    s1, s2 = dfn.Stream(), dfn.Stream()
    on_s1, on_s2 = launches_under(s1), launches_under(s2)
    return {
        "launches": {"first_stream": on_s1, "second_stream": on_s2, "stream_ids": [s1.id, s2.id]},
        "ordered_after_earlier_work": all(sid == s1.id for _k, sid in on_s1),
        "correct_after_syncing_the_stream": all(sid == s1.id for _k, sid in on_s1),
        "default_stream_untouched": all(sid != 0 for _k, sid in on_s1 + on_s2),
        "switch_follows_the_stream": all(sid == s2.id for _k, sid in on_s2),
    }


def _busy(mod, device):
    """Enqueue about 50 ms of device work on the current stream."""
    if hasattr(mod, "_sleep"):
        mod._sleep(100_000_000)
        return
    a = torch.randn(4096, 4096, device=device)
    for _ in range(8):
        a = a @ a / 64.0


def _outputs_under(runner, call, cpu, device, mod, stream, busy_before):
    """The op under ``stream`` on inputs that the stream itself writes after
    ``busy_before`` (a callable enqueueing long work): the inputs start
    zeroed and get their values by device-to-device copies on the stream, so
    an op whose kernels run elsewhere reads zeros. The outputs are copied to
    the host on the stream after synchronising it alone."""
    src = ops.device_inputs(call, cpu, device)
    dst = ops.device_inputs(call, cpu, device)
    for d in dst:
        st = facts.storage_of(d)
        if st is not None:
            st.zero_()
    mod.synchronize()
    with mod.stream(stream):
        busy_before()
        for d, s in zip(dst, src):
            st = facts.storage_of(d)
            if st is not None:
                st.copy_(facts.storage_of(s), non_blocking=True)
        outs = runner.call(call, dst)
        stream.synchronize()
        return [o.to("cpu", copy=True) for o in outs]


def _device_facts(runner, case, target, judging, differs):
    device = torch.device(target["device"])
    mod = getattr(torch, device.type)
    call = case["calls"][0]
    cpu = ops.build_cpu(call)
    expected = [o.to("cpu", copy=True) for o in runner.call(call, ops.device_inputs(call, cpu, device))]
    mod.synchronize()

    def same(host):
        if len(host) != len(expected):
            return False
        for a, e in zip(host, expected):  # within the op's tolerance: a kernel may not be bitwise deterministic
            if differs(a, e, judging, case["dtype"], call):
                return False
        return True

    s1, s2 = mod.Stream(device=device), mod.Stream(device=device)
    default = mod.current_stream(device)

    def busy_on(stream):
        def busy():
            with mod.stream(stream):
                _busy(mod, device)
        return busy

    ordered = same(_outputs_under(runner, call, cpu, device, mod, s1, lambda: _busy(mod, device)))
    # Long work on the default stream: an op that used it is not done when s1 is.
    untouched = same(_outputs_under(runner, call, cpu, device, mod, s1, busy_on(default)))
    mod.synchronize()
    # The same cached kernel, launched next under s2 while s1 is busy.
    switched = same(_outputs_under(runner, call, cpu, device, mod, s2, busy_on(s1)))
    mod.synchronize()
    return {"ordered_after_earlier_work": ordered, "correct_after_syncing_the_stream": ordered,
            "default_stream_untouched": untouched, "switch_follows_the_stream": switched}


def observe_streams(target, case, gates, judging, differs):
    """The four P7 facts for the op of ``case`` (its first call) on
    ``target``, with the installer run first when the target has one (P7
    judges the path users get); results on a device are compared within the
    catalog entry's tolerance (``judging``) by ``differs(actual, expected,
    judging, dtype, call)`` (``flagprop.judging.verdicts.stream_output_differs``,
    which the check table passes: the tolerance rules are the verdicts'). Returns
    {facts..., "fast_path", "model": "mock streams" | "device streams",
    "error"} or {"skipped": why}."""
    runner = ops.Runner(target, case["op"], gates)
    inst = runner.install()
    out = {"fast_path": "no installer" if not inst["present"] else "active" if inst["active"] else "inactive",
           "error": None}
    device = torch.device(target["device"])
    le = sys.modules.get("flag_gems.utils.libentry")
    try:
        if hasattr(le, "LAUNCH_LOG"):
            out["model"] = "mock streams"
            out.update(_mock_facts(runner, case, target))
        elif device.type != "cpu" and hasattr(getattr(torch, device.type, None), "Stream"):
            out["model"] = "device streams"
            out.update(_device_facts(runner, case, target, judging, differs))
        else:
            return {"skipped": "P7 needs a device with streams or flagprop's mock FlagGems"}
    except Exception as e:
        out["error"] = ops.describe_exception(e)
    return out
