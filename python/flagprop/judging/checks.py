"""One generated case, observed and judged: the pairing of each property's
observer and verdict, written once.

``observe(kind, target, case, ...)`` runs the observer for ``kind`` on
``case`` (its JSON form) against ``target`` (``Target::toJson``);
``judge`` judges what it saw with ``flagprop.judging.verdicts``. The C++ suites call
``observe`` once per generated case inside a sandbox and ``judge`` after the
sandbox has restored the interpreter; a standalone reproducer calls
``check`` (both) once on the shrunk counterexample. ``describe`` turns a result into the lines a
reproducer prints.

Kinds: ``install`` (P1), ``install2`` (P2), ``launch`` (P3), ``key`` (P4),
``op`` (P5 and P6 together: one observation holds both properties' findings),
``streams`` (P7), ``hits`` (P8), ``timing`` (P9: a measurement; it
always passes, or says why it refused).

The dispatch on the kind (``_observe``, ``_judge``, ``describe``) is a
chain of ``if kind == "..."`` on purpose: ``flagprop.tools.slim``, which cuts the
code a reproducer carries, follows only the branches the reproducer's kind
can take, so a P1 reproducer carries no op machinery. A table of functions
would hide the branches from it and pull every observer into every
reproducer; a new kind is one more ``if`` in each of the three.
"""

import collections
import os
import sys
import threading
import time
import types

from ..observers import hits, streams, timing
from ..engine import facts, ops, session
from . import verdicts


def _flagprop_functions():
    """[(function, its code)] of every function and method flagprop's own
    modules define."""
    out = []
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == "flagprop" or name.startswith("flagprop.")):
            continue
        for value in list(vars(mod).values()):
            members = vars(value).values() if isinstance(value, type) and value.__module__ == name else (value,)
            for fn in members:
                if isinstance(fn, types.FunctionType) and fn.__module__ == name:
                    out.append((fn, fn.__code__))
    return out


_BASELINE = {}  # what ``tampered`` compares with: "functions" and "impls", taken by ``baseline``
# Dispatch keys whose kernels CPU ATen (the reference) or its meta kernels run.
_REFERENCE_KEYS = ("CPU", "Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd", "Autograd", "AutogradCPU",
                   "CompositeExplicitAutogradNonFunctional", "")


def baseline():
    """Takes what ``tampered`` compares with: the code of flagprop's
    functions and the kernels registered through ``torch.library`` (a set of
    "namespace/op/dispatch key"). The C++ session calls it once, before any
    code under test loads."""
    import torch

    if not _BASELINE:
        _BASELINE["functions"] = _flagprop_functions()
        _BASELINE["impls"] = set(getattr(torch.library, "_impls", ()) or ())
        _BASELINE["impls_seen"] = set(_BASELINE["impls"])  # as the last case left them (``tampered``)
        _BASELINE["modes"] = facts.mode_depths()


# The ATen ops flagprop's verdicts and the reference's comparisons call
# (``verdicts``, ``facts``, ``ops``): a kernel the code under test registers
# on one of them for a key CPU ATen runs would answer inside the judging
# (``aten::equal`` answering True passes every value comparison).
_JUDGING_OPS = frozenset((
    "equal", "allclose", "isclose", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "isneginf",
    "isposinf", "abs", "sub", "add", "mul", "div", "neg", "maximum", "minimum", "where", "logical_and",
    "logical_or", "logical_not", "logical_xor", "any", "all", "sum", "max", "min", "amax", "amin", "argmax",
    "argmin", "nonzero", "masked_select", "sort", "gather", "clone", "copy_", "_copy_from", "_to_copy", "to",
    "view", "as_strided", "contiguous", "reshape", "flatten", "empty_like", "zeros_like", "ones_like",
    "full_like", "index_select", "cat", "stack", "count_nonzero", "view_as_real", "bitwise_and", "bitwise_or",
    "bitwise_xor", "signbit", "sign", "nan_to_num", "select", "slice", "item", "_local_scalar_dense",
    "is_nonzero", "expand", "broadcast_to", "fill_", "zero_", "resize_", "set_"))


def _modes_left():
    """The torch function and dispatch modes the code under test left
    pushed (past the baseline; those the op's own calls left were popped as
    they returned, ``ops``): popped, so that no verdict runs under them, and
    named; [] when there are none."""
    facts.pop_modes_left(_BASELINE.get("modes", (0, 0)))
    return facts.take_modes_left()


def tampered(op=None):
    """Why the judging itself cannot be trusted, or '': the code under test
    changed the code of one of flagprop's functions (put back here, and
    said), left a torch function or dispatch mode pushed (popped here), or
    registered a kernel that CPU ATen would run for the op under test or for
    an op the judging calls (``_JUDGING_OPS``). After such a case, or any
    change of ``torch.library``'s registrations since the last call, it
    empties the meta answers the reference keeps (``ops._META_CACHE``).
    The C++ session asks it after each sandbox restore, before ``judge``
    (a standalone reproducer has no sandbox and does not)."""
    if not _BASELINE:
        return ""
    import torch

    impls = getattr(torch.library, "_impls", ()) or ()
    unchanged = impls == _BASELINE["impls_seen"]
    if not unchanged:
        _BASELINE["impls_seen"] = set(impls)
        _BASELINE["clean"] = set()  # the ops found clean were found so under other registrations
    why = _tampered(op)
    if why or not unchanged:
        # The meta kernels' answers kept from case to case (ops._META_CACHE)
        # may have been taken under what the code under test did: none
        # outlives a case that tampered, or a change of the registrations.
        ops._META_CACHE.clear()
    return why


def _tampered(op):
    """``tampered``'s reason, or ''."""
    changed = [(fn, code) for fn, code in _BASELINE["functions"] if fn.__code__ is not code]
    for fn, code in changed:
        fn.__code__ = code
    changed = [fn for fn, _code in changed]
    import torch

    left = _modes_left()
    if changed:
        return "the code under test replaced the code of flagprop's %s (put back)" % ", ".join(
            "%s.%s" % (f.__module__, f.__qualname__) for f in changed[:3])
    if left:
        return ("the code under test left %s pushed (popped now): the judging would have run under it, so no "
                "verdict of this case can be trusted" % ", ".join(left[:3]))
    if not op:  # installer cases run no CPU reference
        return ""
    base = op.split(".")[0]
    # A kernel for the op under test compromises its reference, one for an op
    # the judging calls every verdict (FlagGems itself registers Autograd
    # kernels for some ops, e.g. ctc_loss, which judge no other op's reference).
    impls = getattr(torch.library, "_impls", ()) or ()
    if impls == _BASELINE["impls"]:  # the common case: no kernel registered or removed since the baseline
        return ""
    # The same registrations as when this op was last found clean (``tampered``
    # empties the set whenever they change): the same answer, without the
    # walk over them (with FlagGems' kernels registered, most of this check's
    # time on a GPU host).
    clean = _BASELINE.setdefault("clean", set())
    if base in clean and impls == _BASELINE["impls_seen"]:
        return ""
    new = sorted(i for i in set(impls) - _BASELINE["impls"]
                 if i.startswith("aten/") and i.rsplit("/", 1)[-1] in _REFERENCE_KEYS
                 and i.split("/")[1].split(".")[0] in _JUDGING_OPS | {base})
    if new:
        return ("the code under test registered kernels that CPU ATen, the reference, runs (torch.library: %s): "
                "no verdict against it can be trusted" % ", ".join(new[:3]))
    if impls == _BASELINE["impls_seen"]:
        clean.add(base)
    return ""


# The kinds ``observe`` and ``judge`` take, one per branch of their chains;
# every check kind of flagprop's property registry (suites/registry.cpp) is
# one of them (tests/unit/test_registry.cpp).
KINDS = ("install", "install2", "launch", "key", "op", "hits", "streams", "timing")


def _gates_open(target, gates):
    return verdicts.gates_open(gates, target["gate_builds"])


# Each kind has an observer (``_observe_*``: runs the code under test, inside
# the sandbox) and a verdict (``_judge_*``: plain judging of what was seen,
# run after the sandbox has put back everything the case rebound, so that
# code under test that rebinds ``torch.equal`` or ``flagprop.judging.verdicts`` cannot
# reach the functions that judge it).


def _observe_install(target, case):
    return session.install_case(target, case["mock"], case["gates"], 1)


def _judge_install(target, case, obs):
    v = verdicts.install_status(obs, _gates_open(target, case["gates"]))
    return {"pass": v["pass"], "reason": v["reason"], "tag": v["install"],
            "evidence": verdicts.install_evidence(obs, v)}


def _observe_install2(target, case):
    return session.install_case(target, case["mock"], case["gates"], 2)


def _judge_install2(target, case, obs):
    v = verdicts.idempotence(obs, _gates_open(target, case["gates"]), target["reports_once"])
    evidence = {"first": obs["components"][0], "second": obs["components"][1], "identities": obs["identities"],
                "calls": obs["calls"], "helper": obs["helper"], "claims": obs["claims"]}
    return {"pass": v["pass"], "reason": v["reason"], "tag": v["reason"], "evidence": evidence}


def _inactive(obs):
    call = obs.get("call") or {}
    return call.get("note") or "the fast path is not active on this target (see P1), so there is nothing to compare"


def _observe_launch(target, case):
    return session.launch_case_json(target, target["default_gates"], case)


def _judge_launch(target, case, obs):
    if not obs["active"]:
        return {"inactive": _inactive(obs), "evidence": {"install": obs.get("call")}}
    v = verdicts.stock_fallback(case, obs)
    return {"pass": v["pass"], "reason": v["reason"], "tag": "", "evidence": obs}


def _observe_key(target, case):
    return session.key_case_json(target, target["default_gates"], case)


def _judge_key(target, case, obs):
    if not obs["active"]:
        return {"inactive": _inactive(obs), "evidence": {"install": obs.get("call")}}
    v = verdicts.key_equivalence(obs)
    return {"pass": v["pass"], "reason": v["reason"], "tag": "", "evidence": obs}


def _unstable_reference(case, obs, tries=5):
    """Why CPU ATen's answer cannot be trusted for ``case`` (it gives other
    bits on the same inputs in one of ``tries`` more calls: an op that does
    not check its arguments reads memory it does not own), or ''. Where the
    op under test is CPU ATen itself (``obs["op_is_reference"]``: stock ATen
    on the CPU), its own output having other bits than the reference's
    same-dtype call on the same inputs and layout shows that too (LibTorch
    1.13's ``linalg_lstsq`` gives two answers on one input, the second in 63
    of 1,000 calls here). Asked only of a failing case, so it costs nothing
    when the op agrees."""
    if obs.get("op_is_reference"):
        for k, rec in enumerate(obs["passes"][-1]["calls"]):
            for first, out in zip(obs["expected"][k], rec["outputs"] if not rec["error"] else ()):
                if "same_dtype" in first and not facts.same_bits(first["same_dtype"], out):
                    return "CPU ATen gives other bits on the same inputs (the op under test is CPU ATen)"
    for _ in range(tries):
        for k, call in enumerate(case["calls"]):
            if not any("same_dtype" in first for first in obs["expected"][k]):
                # CPU ATen has no kernel in the run's dtype (LibTorch 1.13's
                # tanh in float16): the reference is the float64 call, and
                # nothing of the same-dtype call's can be unstable. (Called
                # again, it raises: that is no sign of unchecked arguments.)
                continue
            try:
                again, _moved, _wrote = ops.reference(case["op"], call, obs["cpu_inputs"][k], False)
            except Exception as e:
                return "CPU ATen rejects call %d on a second try: %s" % (k, ops.describe_exception(e))
            for first, now in zip(obs["expected"][k], again):
                if "same_dtype" in first and not facts.same_bits(first["same_dtype"], now.get("same_dtype")):
                    return ("CPU ATen gives other bits on the same inputs "
                            "(unchecked arguments: it reads memory it does not own)")
    return ""


def observe_judged(target, case, gates, judging):
    """``ops.observe_case`` with the options ``judging`` (the catalog entry's
    judging spec) asks for; the code under test runs here."""
    judging = verdicts.judging_for(judging, case["dtype"])
    rule = judging.get("tolerance", {}).get("rule")
    magnitude = rule in verdicts.ACCUMULATING and (True if rule != "schema" else "if_reducing")
    return ops.observe_case(target, case, gates, judging.get("upcast", True), judging.get("reference") == "either",
                            magnitude)


def findings_of(case, obs, judging):
    """``verdicts.op_findings`` of an ``observe_judged`` observation: the
    plain-data findings of one case (with ``discard``, ``compilations`` and
    ``time_us`` from the observation). No code under test runs here."""
    if "discard" in obs:
        return obs
    t0 = time.perf_counter()
    judging = verdicts.judging_for(judging, case["dtype"])
    out = verdicts.op_findings(obs, case, judging)
    if "discard" not in out and out["numerics"] and judging.get("reference") == "either":
        unstable = _unstable_reference(case, obs)
        if unstable:
            out = {"discard": unstable}
    if "discard" not in out:  # (a discard: the control rejects the sample, or the reference is unstable)
        out["compilations"] = obs["compilations"]
    out["time_us"] = dict(obs["time_us"], verdicts=1e6 * (time.perf_counter() - t0))
    return out


def _op_lost(obs):
    """The error of the first call of ``obs``'s passes of the op under test
    that lost the device context, or ''."""
    for p in obs.get("passes") or ():
        for rec in p["calls"]:
            if rec["error"] and facts.device_lost(rec["error"]):
                return rec["error"]
    return ""


def _observe_op(target, case, judging):
    spent = collections.Counter()  # µs per part of the earlier calls: this case's time too
    for k, earlier in enumerate(case.get("history") or ()):  # P10: the calls before it in this process, not judged
        before = observe_judged(target, earlier, target["default_gates"], judging)
        spent.update(before.get("time_us") or {})
        # Not judged, but a lost device context is never dropped: the stock
        # path's ends the case as its discard, the op's as the op's loss.
        if "stock_lost" in before:
            return dict(before, discard="history call %d: %s" % (k, before["discard"]), time_us=dict(spent))
        lost = _op_lost(before)
        if lost:
            raise RuntimeError("the op lost the device context in history call %d: %s" % (k, lost))
    obs = observe_judged(target, case, target["default_gates"], judging)
    if spent:
        spent.update(obs.get("time_us") or {})
        obs["time_us"] = dict(spent)
    return obs


def _judge_op(target, case, obs, judging):
    findings = findings_of(case, obs, judging)
    if "discard" in findings:
        return {"discard": findings["discard"], "evidence": findings}
    tag = findings["fast_path"]
    if findings.get("patched_vs_unpatched") == "equal":
        tag += ", patched == unpatched"
    if findings["calls_raised"]:
        tag += ", the op raised (outputs unchecked)"
    if findings.get("overlap_refusals"):  # ATen's own refusal: information, never a finding
        tag += ", refused to write an overlapping input"
    if findings.get("fresh_where_aten_views"):  # within the schema: information, never a finding
        tag += ", fresh storage where ATen's output is a view"
    if findings.get("control"):  # information, never a finding (docs/control.md)
        tag += ", the stock path differs from CPU ATen" if any(
            "differs from CPU ATen" in n for n in findings["control"]) else ", no stock kernel"
    judged = {p: verdicts.op_verdict(findings, p, case) for p in ("P5", "P6")}
    if "history" in case:  # P10: P5's verdict on the case after its history
        judged["P10"] = judged["P5"]
    return {"verdicts": judged, "tag": tag, "evidence": findings}


def _observe_hits(target, case):
    return hits.observe_hits(target, case, target["default_gates"])


def _judge_hits(target, case, obs):
    v = verdicts.fast_path_hits(obs)
    if not v.get("judged", True):  # nothing counted: not judged (a run of such cases skips)
        return {"inactive": v["reason"], "evidence": obs}
    t = verdicts.hit_totals(obs["kernels"])
    tag = obs["fast_path"] if obs["fast_path"] != "active" else ("fast" if t["fast"] else "stock only")
    return {"pass": v["pass"], "reason": v["reason"], "tag": tag, "evidence": obs}


def _observe_streams(target, case, judging):
    return streams.observe_streams(target, case, target["default_gates"], judging, verdicts.stream_output_differs)


def _judge_streams(target, case, obs):
    if "skipped" in obs:
        return {"inactive": obs["skipped"], "evidence": obs}
    v = verdicts.stream_semantics(obs)
    if not v.get("judged", True):
        return {"inactive": v["reason"], "evidence": obs}
    return {"pass": v["pass"], "reason": v["reason"], "tag": obs["fast_path"], "evidence": obs}


def _observe_timing(target, case):
    return timing.observe_ab(target, case, target["default_gates"])


def _judge_timing(target, case, obs):
    v = verdicts.ab_timing(obs)
    evidence = dict(obs, summary={"host": v.get("host"), "device": v.get("device")})
    out = {"pass": True, "reason": v["reason"], "tag": "refused" if "refused" in v else "measured",
           "evidence": evidence}
    if "refused" in v:
        out["refused"] = v["refused"]
    return out


_COMMANDS = {}  # (pid, start time) -> command line, of the child processes _children has read


def _children():
    """{pid: command line} of this process's live child processes, from
    /proc/self/task/TID/children of the calling thread (Linux; the code under
    test runs on it); {} where the kernel does not offer the file."""
    try:
        # No child at all (the common case) in one system call: waitid with
        # WNOWAIT reaps nothing, and raises ChildProcessError without children.
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return {}
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/task/%d/children" % threading.get_native_id()) as f:
            pids = [int(p) for p in f.read().split()]
    except (OSError, ValueError, AttributeError):
        return {}
    out = {}
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if fields[0] == "Z":
                continue  # ended, not yet reaped: not running
            # A child that runs across cases (a compiler's worker pool) is read
            # once: known by its pid and start time (field 22 of stat), so a
            # reused pid is read again.
            key = (pid, fields[19])
            command = _COMMANDS.get(key)
            if command is None:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
                if command:  # (between fork and exec it has none yet, and its name only: read again next time)
                    _COMMANDS[key] = command
                else:
                    with open("/proc/%d/comm" % pid) as f:
                        command = "[%s]" % f.read().strip()
            out[pid] = command
        except (OSError, IndexError):
            pass  # ended meanwhile
    return out


def _left_running(threads_before, children_before):
    """What the case started and left running: a list of {"kind": "thread",
    "name", "daemon"} and {"kind": "process", "pid", "command"} (threads by
    ``threading.enumerate``, processes by ``_children``)."""
    out = []
    for t in threading.enumerate():
        if t.ident not in threads_before and t.is_alive():
            out.append({"kind": "thread", "name": t.name, "daemon": t.daemon})
    for pid, command in _children().items():
        if pid not in children_before:
            out.append({"kind": "process", "pid": pid, "command": command[:200]})
    return out


def observe(kind, target, case, judging=None):
    """Runs the observer for ``kind`` on ``case`` (the code under test runs
    here: call it inside the sandbox). Returns ``{"seen": the observation,
    "left_running": a thread or child process the code under test started and
    did not end (see ``_left_running``)}``, for ``judge``."""
    threads_before = {t.ident for t in threading.enumerate()}
    children_before = _children()  # not the last case's "after": a child may start between cases
    seen = _observe(kind, target, case, judging)
    return {"seen": seen, "left_running": _left_running(threads_before, children_before)}


def ends_batch(observed):
    """Whether a batch of cases (the C++ session's ``checkBatch``) stops after
    the case ``observe`` returned ``observed`` for: the case is a discard (CPU
    ATen or the stock path rejected it, or the stock path lost the device
    context), or the op under test lost the device context. The search
    draws the cases after a discard at other sizes, and nothing runs on a
    lost context."""
    seen = observed.get("seen") if isinstance(observed, dict) else None
    if not isinstance(seen, dict):
        return False
    return "discard" in seen or "stock_lost" in seen or bool(_op_lost(seen))


def judge(kind, target, case, observed, judging=None):
    """Judges what ``observe`` returned with ``flagprop.judging.verdicts`` (call it
    after the sandbox is restored: nothing the code under test rebound
    reaches the verdict). Returns ``_check``'s dict, with ``left_running``
    (which the C++ session gathers per target and the report lists) when
    the case left something running."""
    result = _judge(kind, target, case, observed["seen"], judging)
    left = observed["left_running"]
    if left and isinstance(result, dict):
        result["left_running"] = left
    return result


def check(kind, target, case, judging=None):
    """``observe`` then ``judge`` in one call (a standalone reproducer,
    which has no sandbox)."""
    return judge(kind, target, case, observe(kind, target, case, judging), judging)


def _observe(kind, target, case, judging=None):
    """The observation of one case, for ``_judge`` (kinds as ``_judge``)."""
    if kind == "install":
        return _observe_install(target, case)
    if kind == "install2":
        return _observe_install2(target, case)
    if kind == "launch":
        return _observe_launch(target, case)
    if kind == "key":
        return _observe_key(target, case)
    if kind == "op":
        return _observe_op(target, case, judging)
    if kind == "hits":
        return _observe_hits(target, case)
    if kind == "streams":
        return _observe_streams(target, case, judging)
    if kind == "timing":
        return _observe_timing(target, case)
    raise ValueError("unknown check kind %r" % kind)


def _judge(kind, target, case, obs, judging=None):
    """Judge one case's observation. Returns a dict: ``pass`` and ``reason``
    (the verdict), ``tag`` (the case's class, for the distribution of passing
    runs) and ``evidence`` (what a finding shows); for ``op`` instead
    ``verdicts`` {"P5": verdict, "P6": verdict}. ``inactive`` (P3, P4: the
    fast path is not installed; the reason) or ``discard`` (P5, P6: CPU ATen
    rejects the arguments; the reason) replace the verdict when the case
    cannot be judged. ``judging`` is the catalog entry's judging spec (op)."""
    if kind == "install":
        return _judge_install(target, case, obs)
    if kind == "install2":
        return _judge_install2(target, case, obs)
    if kind == "launch":
        return _judge_launch(target, case, obs)
    if kind == "key":
        return _judge_key(target, case, obs)
    if kind == "op":
        return _judge_op(target, case, obs, judging)
    if kind == "hits":
        return _judge_hits(target, case, obs)
    if kind == "streams":
        return _judge_streams(target, case, obs)
    if kind == "timing":
        return _judge_timing(target, case, obs)
    raise ValueError("unknown check kind %r" % kind)


def verdict_of(result, prop):
    """The verdict in a ``check`` result for property ``prop``."""
    if "verdicts" in result:
        return result["verdicts"][prop]
    return {"pass": result["pass"], "reason": result["reason"]}


def _describe_install(ev):
    lines = ["helper _descriptor_cache_key: %s" % ev["helper"],
             "components the installer has: %s" % (ev["claims"] if ev["claims"] is not None else "all (source not read)")]
    for e in ev["exceptions_seen"]:
        lines.append("exception raised inside the installer: %s at %s:%d in %s(): %s"
                     % (e["type"], e["file"], e["line"], e["function"], e["message"]))
    lines.append("installer returned normally: %s %s" % (ev["returned_normally"], ev["raised"]))
    for name, cls in ev["components"].items():
        lines.append("  %-20s %-15s unchanged=%-5s markers=%s" % (name, cls, ev["unchanged"][name],
                                                                   ev["markers"][name] or "none"))
    lines.append("warnings: %s" % ([w["message"] for w in ev["warnings"]] or "none"))
    lines.append("log records: %s" % ([r["message"] for r in ev["logs"]] or "none"))
    lines.append("status API: %s" % (ev["status"] or "none"))
    return lines


def _describe_op(ev):
    lines = ["fast path: %s; patched vs unpatched: %s" % (ev["fast_path"], ev["patched_vs_unpatched"])]
    for k, c in enumerate(ev["calls"]):
        for i, a in enumerate(c["actual"]):
            e = c["expected"][i] if i < len(c["expected"]) else {}
            lines.append("call %d output %d: actual %s %s on %s; ATen: %s %s" % (
                k, i, a["dtype"], a["shape"], a["device"], e.get("dtype"), e.get("shape")))
        if c.get("error"):
            lines.append("call %d raised %s" % (k, c["error"]))
    lines += ["numerics: " + f for f in ev["numerics"]]
    lines += ["aliasing: " + f for f in ev["aliasing"]]
    lines += ["control (the stock path): " + n for n in ev.get("control") or []]
    lines += ["note: " + n for n in ev.get("overlap_refusals") or []]
    lines += ["note: " + n for n in ev.get("fresh_where_aten_views") or []]
    return lines


def _preview(t, limit):
    """The first ``limit`` elements of CPU tensor ``t`` (flattened) as text,
    with its dtype and shape."""
    flat = t.reshape(-1)
    head = flat[:limit].tolist()
    return "%s %s %s%s" % (str(t.dtype).replace("torch.", ""), list(t.shape), head,
                           " ... (%d elements)" % flat.numel() if flat.numel() > limit else "")


def describe_values(obs, limit=8):
    """Lines of an op observation (``observe("op", ...)["seen"]``) for a person: per
    call and output, the first ``limit`` elements the op gave, the stock
    path gave (the control, where the target has one) and CPU ATen gave (its
    reference, float64 where upcast). Returns a list of str; empty for a
    discarded observation."""
    if "passes" not in obs:
        return []
    lines = []
    judged = obs["passes"][-1]
    control = obs.get("control")
    for k, rec in enumerate(judged["calls"]):
        ctl = control["calls"][k] if control else None
        expected = obs["expected"][k]
        n = max(len(rec["after"]), len(expected), len(ctl["after"]) if ctl and not ctl["error"] else 0)
        for i in range(n):
            lines.append("call %d output %d:" % (k, i))
            lines.append("  the op       : %s" % (_preview(rec["after"][i], limit) if i < len(rec["after"])
                                                   else "raised %s" % rec["error"] if rec["error"] else "-"))
            if ctl is not None:
                lines.append("  stock path   : %s" % (_preview(ctl["after"][i], limit) if i < len(ctl["after"])
                                                       else "raised %s" % ctl["error"] if ctl["error"] else "-"))
            ref = expected[i].get("values") if i < len(expected) else None
            lines.append("  CPU ATen     : %s" % (_preview(ref, limit) if ref is not None else "-"))
    return lines


def describe(kind, result):
    """Lines a person reads about a ``check`` result."""
    ev = result.get("evidence") or {}
    if "inactive" in result:
        return ["not judged: " + result["inactive"]]
    if "discard" in result:
        return ["not judged: " + result["discard"]]
    if kind == "install":
        return _describe_install(ev)
    if kind == "install2":
        deep = [k for k, f in ev["second"].items() if f["chain_depth"] > 1]
        ids = ev["identities"]
        replaced = [k for k in ids[0] if ids[0][k] != ids[1][k]]
        return ["replaced by the second install: %s" % (replaced or "none"),
                "__wrapped__ chains deeper than one: %s" % (deep or "none")]
    if kind == "launch":
        return ["launch %d %-13s stock run entered %d time(s); patched %s, stock %s%s" % (
            i, l["kind"], l["stock_calls"], l["a_out"], l["b_out"], "" if l["equal"] else "  <-- differs")
            for i, l in enumerate(ev["launches"])]
    if kind == "key":
        return ["fast key : %s" % ev["fast"], "stock key: %s" % ev["stock"]] + list(ev.get("memo_mismatches") or [])
    if kind == "streams":
        return ["%s: %s" % (f, ev.get(f)) for f in streams.FACTS] + ["launches: %s" % ev.get("launches")]
    if kind == "hits":
        return ["fast path: %s" % ev["fast_path"]] + [
            "kernel %s: run %d (stock %d), key %d (stock %d)" % (k["name"], k["run"], k["run_stock"], k["key"],
                                                                k["key_stock"])
            for k in ev["kernels"]]
    return _describe_op(ev)
