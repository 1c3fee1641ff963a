#!/usr/bin/env python3
"""flagprop's findings side by side with a peer's: BackendBench's OpInfo suite.

BackendBench (meta-pytorch/BackendBench) judges an op implementation on the
sample inputs of PyTorch's OpInfo database: each sample whose OpInfo traces
to exactly one ATen overload is called through the stock op and through the
backend's function on the same inputs, and the two results must agree
within ``torch.testing.assert_close(atol=1e-2, rtol=1e-2)`` (NaN equal); an
exception is a failure. Its ``flag_gems`` backend maps about 250 ATen
overloads onto ``flag_gems.ops`` functions and calls them directly (not
through FlagGems' own registration, which flagprop's targets use).

What it prints:

1. a line on the peer's run: its commit, backend, device and dtype, torch,
   how many ops it judged in how many seconds and why it stopped early, if it
   did; the command of its (first) process; the ops of BackendBench's mapping
   that this torch or this FlagGems lacks (left out, not failed);
2. a Markdown table, one row per shared op, by verdict and then name:
   flagprop's status and the first 80 characters of its reason (and its
   failed explicit examples), the peer's status with its failing samples
   and message, and a verdict: ``both``, ``flagprop only``, ``peer only``,
   ``neither``, or ``not compared`` (with why: a side skipped it, the peer has
   no OpInfo sample for it, the peer's mapping has no function for it);
3. the totals, and for each op a side flags: flagprop's result key, reason and
   shrunk counterexample, the peer's message and the sample it failed on.

How it gets them:

- the peer runs in child processes of this same script (``--child``),
  ``--jobs`` at once, each on its share of the ops, all bounded by
  ``--minutes``; a child that dies inside an op (or loses the device) is
  started again without that op, which is judged ``died``. BackendBench's
  command line fixes the dtype at bfloat16, so a child calls its Python API
  as that command line does: ``BackendBench.suite.opinfo.build_op_tests(
  device, dtype, filter)``, the backend's mapping, then
  ``BackendBench.eval.eval_one_op`` per op, and writes one JSON line per
  event, so a run cut short keeps what it judged. Its device (``--device``,
  default ``cuda``) and dtype (``--dtype``, default ``float32``) are those of
  flagprop's run;
- flagprop's side is report.json (``--flagprop-report``, repeatable: e.g.
  the ``all`` and ``all-rest`` folders of ``matrix/run_gpu.sh``): each result
  ``P5/OP/DTYPE`` of ``--properties`` (default P5) in the dtype; an op's cell
  is its worst status;
- names: BackendBench names an op by its ATen overload (``add.Tensor``,
  ``abs.default``), flagprop by the same overload with the default
  overload's ``.default`` left off (``abs``); ``--ops`` takes either.

``--ops a,b`` compares those ops; ``--shared`` every op both flagprop's report
and the peer's backend have. ``--save-json FILE`` writes the peer's parsed
results (with the commands used); ``--from-json FILE`` reads them instead of
running the peer, so the table can be made without a GPU. ``--list-ops``
prints the flagprop names of the ops BackendBench's mapping names (read from
its source; ``--catalog FILE`` keeps those in a flagprop op list), for
``flagprop run --op``. Exit status: 0 when the table was printed, 1 when
the peer did not start or a report could not be read, 2 on bad usage.

Run on an NVIDIA host (bench/README.md, "The peer: BackendBench", has the
whole device command)::

    PYTHONPATH=.targets/BackendBench-stubs:.targets/BackendBench:.targets/FlagGems/src:/tmp/site \\
      python3 bench/peer_backendbench.py --flagprop-report OUT/args \\
      --backendbench .targets/BackendBench --stubs .targets/BackendBench-stubs \\
      --shared --jobs 8 --minutes 5 --save-json OUT/peer.json

and without a GPU, from a saved peer result::

    python3 bench/peer_backendbench.py --flagprop-report OUT/args --from-json OUT/peer.json --shared

Needs: for the peer, a Python with torch and ``expecttest`` (OpInfo's test
helpers import it), FlagGems and what it imports (SQLAlchemy), BackendBench's
checkout and stand-ins for the packages it imports only for its LLM and data
set features (``--stubs``); for the table alone, Python 3.
"""

import argparse
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

#: flagprop statuses, worst first: the op's cell shows the worst of its results.
FP_ORDER = ["error", "fail", "flaky", "pass", "skip"]
#: Statuses that flag an op, on either side.
FLAGGED = {"fail", "flaky", "error", "died"}
#: Statuses that judged the op, on either side.
JUDGED = FLAGGED | {"pass"}
VERDICTS = ["both", "flagprop only", "peer only", "neither", "not compared"]


def bb_name(fp_op):
    """BackendBench's name for a flagprop op: the default overload gets '.default'."""
    return fp_op if "." in fp_op else fp_op + ".default"


def fp_name(bb_op):
    """flagprop's name for a BackendBench op: '.default' is left off."""
    return bb_op[:-len(".default")] if bb_op.endswith(".default") else bb_op


def clip(text, n):
    """One line of at most n characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


# --- flagprop's side ---------------------------------------------------------

def explicit_failed(obs):
    """What observations.explicit.failed says, as text ('' when nothing failed)."""
    failed = (obs.get("explicit") or {}).get("failed")
    if not failed:
        return ""
    if isinstance(failed, list):
        names = [f if isinstance(f, str) else (f.get("name") or json.dumps(f)) for f in failed]
        return "%d explicit example(s) failed: %s" % (len(names), ", ".join(names))
    return "%s explicit example(s) failed" % failed


def summarize_counterexample(cx):
    """A short line for flagprop's shrunk case: each call's tensors and other arguments."""
    if not isinstance(cx, dict):
        return ""
    parts = []
    for i, call in enumerate(cx.get("calls") or []):
        tensors = []
        for t in call.get("tensors") or []:
            desc = "%s %s" % (t.get("dtype", "?"), t.get("shape"))
            if t.get("strides") is not None:
                desc += " strides %s" % (t.get("strides"),)
            if t.get("offset"):
                desc += " offset %s" % t["offset"]
            if t.get("specials"):
                desc += " specials %s" % (t["specials"],)
            tensors.append(desc)
        args = json.dumps(call.get("args"), separators=(",", ":"))
        kwargs = json.dumps(call.get("kwargs") or {}, separators=(",", ":"))
        parts.append("call %d: args %s kwargs %s; tensors: %s" % (i, args, kwargs, "; ".join(tensors) or "none"))
    return " | ".join(parts) or json.dumps(cx, separators=(",", ":"))


def read_flagprop(report_dirs, dtype, properties):
    """Per flagprop op name: its worst result over the properties in the dtype.

    Returns (ops, notes): ops maps the op to {status, reason, key, explicit,
    counterexample}; notes lists targets that did not load.
    """
    ops, notes = {}, []
    for d in report_dirs:
        path = d if d.endswith(".json") else os.path.join(d, "report.json")
        with open(path) as f:
            report = json.load(f)
        for t in report.get("targets", []):
            if t.get("status", "ok") != "ok":
                notes.append("%s: target %s did not load: %s" % (path, t.get("name"), clip(t.get("error", ""), 200)))
                continue
            for r in t.get("results", []):
                op = r.get("op")
                if not op or r.get("property") not in properties or r.get("dtype") != dtype:
                    continue
                status = r.get("status", "error")
                old = ops.get(op)
                rank = FP_ORDER.index(status) if status in FP_ORDER else 0
                if old is not None and FP_ORDER.index(old["status"]) <= rank:
                    continue
                obs = r.get("observations") or {}
                ops[op] = {"status": status, "reason": r.get("reason", ""), "key": r.get("key", ""),
                           "explicit": explicit_failed(obs), "counterexample": r.get("counterexample")}
    return ops, notes


# --- the peer, in a child process --------------------------------------------

def child_main(config_path):
    """Runs BackendBench's OpInfo suite as the config says, one JSON line per event."""
    with open(config_path) as f:
        cfg = json.load(f)
    out = open(cfg["events"], "a")

    def emit(**event):
        out.write(json.dumps(event) + "\n")
        out.flush()

    for p in reversed([cfg["stubs"], cfg["backendbench"]] + cfg.get("path", [])):
        if p and p not in sys.path:
            sys.path.insert(0, p)
    import torch
    emit(event="start", python=sys.version.split()[0], torch=torch.__version__,
         device_name=torch.cuda.get_device_name(0) if cfg["device"].startswith("cuda") and torch.cuda.is_available() else "cpu")
    from BackendBench.eval import eval_one_op
    from BackendBench.suite.opinfo import build_op_tests
    from BackendBench.utils import extract_operator_name

    def name_of(op):
        return extract_operator_name(str(op))

    backend, mapped, missing = make_backend(cfg["backend"], name_of)
    emit(event="backend", name=cfg["backend"], ops=mapped, missing=missing)
    wanted = cfg.get("ops")
    if cfg.get("shared_with") is not None:
        pool = set(cfg["shared_with"])
        wanted = sorted(pool if mapped is None else pool & set(mapped))
    skip = set(cfg.get("skip", []))
    if wanted is not None:
        wanted = [w for w in wanted if w not in skip]
    emit(event="wanted", ops=wanted)
    if wanted is not None and not wanted:  # BackendBench reads an empty filter as "every op"
        emit(event="suite", ops={}, seconds=0)
        emit(event="done")
        out.close()
        return
    t0 = time.time()
    tests = build_op_tests(cfg["device"], getattr(torch, cfg["dtype"]), filter=wanted)
    groups = {}
    for t in tests:
        groups.setdefault(name_of(t.op), []).append(t)
    emit(event="suite", ops={k: sum(len(t.indices) for t in v) for k, v in sorted(groups.items())},
         seconds=round(time.time() - t0, 1))
    for name, optests in sorted(groups.items()):
        if name in skip:
            continue
        if optests[0].op not in backend:
            emit(event="op", op=name, status="not in backend")
            continue
        emit(event="op_start", op=name)
        t1 = time.time()
        results, ref_errors = [], []
        for t in optests:
            try:
                results += eval_one_op(t.op, backend[t.op], t.correctness_tests, [])[2]
            except Exception as e:  # eval_one_op calls the reference outside its own try
                ref_errors.append("%s: %s" % (type(e).__name__, clip(e, 300)))
        emit(event="op", op=name, seconds=round(time.time() - t1, 2), ref_errors=ref_errors, **judge(results))
        if cfg["device"].startswith("cuda"):
            try:
                torch.cuda.synchronize()
            except Exception as e:  # a device fault poisons the context: every later op would fail
                emit(event="device_lost", op=name, error=clip(e, 300))
                out.close()
                os._exit(3)
    emit(event="done")
    out.close()


class Absent:
    """A name BackendBench's mapping uses that this torch or FlagGems lacks; calling it raises."""

    def __init__(self, label):
        self.label = label

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(self.label)


def make_backend(kind, name_of):
    """BackendBench's backend: (backend, {op: function} or None for all, {op: what is missing})."""
    if kind == "aten":
        from BackendBench.backends.aten import AtenBackend
        return AtenBackend(), None, {}
    import torch
    import BackendBench.backends.flag_gems as bbfg
    if bbfg.flag_gems is None:
        import flag_gems  # noqa: F401  (raises the real reason it is not importable)
    real_fg, real_torch = bbfg.flag_gems, bbfg.torch

    class Ops:
        """flag_gems.ops, with an Absent for a function this FlagGems lacks."""

        def __getattr__(self, attr):
            try:
                return getattr(real_fg.ops, attr)
            except AttributeError:
                return Absent("flag_gems.ops.%s is not in this FlagGems" % attr)

    class Overloads:
        """torch.ops.aten.NAME, with an Absent for an overload this torch lacks."""

        def __init__(self, name):
            self.name = name

        def __getattr__(self, overload):
            try:
                return getattr(getattr(torch.ops.aten, self.name), overload)
            except (AttributeError, RuntimeError):
                return Absent("torch.ops.aten.%s.%s is not in this torch" % (self.name, overload))

    class Aten:
        """torch.ops.aten as BackendBench's mapping reads it."""

        def __getattr__(self, name):
            return Overloads(name)

    class Ns:
        """A namespace of given attributes."""

        def __init__(self, **kw):
            self.__dict__.update(kw)

    bbfg.flag_gems, bbfg.torch = Ns(ops=Ops()), Ns(ops=Ns(aten=Aten()))
    try:
        backend = bbfg.FlagGemsBackend()
    finally:
        bbfg.flag_gems, bbfg.torch = real_fg, real_torch
    mapped, missing = {}, {}
    for op, fn in list(backend.ops.items()):
        if isinstance(op, Absent):
            missing[op.label.split()[0][len("torch.ops.aten."):]] = op.label
            del backend.ops[op]
        elif isinstance(fn, Absent):
            missing[name_of(op)] = fn.label
            del backend.ops[op]
        else:
            mapped[name_of(op)] = "%s.%s" % (getattr(fn, "__module__", "?"), getattr(fn, "__qualname__", repr(fn)))
    return backend, mapped, missing


def judge(results):
    """An op's verdict from BackendBench's CorrectnessTestResult list."""
    skipped = [r for r in results if not r.is_correct and r.error_msg.startswith("Skipped")]
    judged = [r for r in results if r not in skipped]
    failed = [r for r in judged if not r.is_correct]
    raised = [r for r in failed if r.error_msg]
    verdict = {"tests": len(judged), "failed": len(failed), "raised": len(raised)}
    if not judged:
        verdict.update(status="skip", message=skipped[0].error_msg if skipped else "no sample")
        return verdict
    if not failed:
        verdict["status"] = "pass"
        return verdict
    first = raised[0] if raised else failed[0]
    if first.error_msg:
        exc = [ln.strip()[4:].strip() for ln in first.error_msg.splitlines() if ln.strip().startswith("exc:")]
        message = "raised %s: %s" % (first.error_type.replace("<class '", "").rstrip("'>"), exc[0] if exc else first.error_msg)
        verdict["status"] = "error" if len(raised) == len(failed) else "fail"
    else:
        message = "values differ (max abs err %.3g, max rel err %.3g)" % (first.max_abs_error, first.max_rel_error)
        verdict["status"] = "fail"
    verdict.update(message=clip(message, 400), args=clip(first.args, 400))
    return verdict


def run_shard(args, shard, ops, shared_with, env, work, log, deadline):
    """One child, restarted without the op it died on while time is left: that shard's results."""
    res = {"runs": [], "ops": {}, "suite_ops": {}, "backend_ops": None, "backend_missing": {}, "suite_built": False,
           "stopped": None}
    skip = []
    for attempt in range(args.restarts + 1):
        events = os.path.join(work, "events-%d-%d.jsonl" % (shard, attempt))
        cfg = {"events": events, "stubs": os.path.abspath(args.stubs) if args.stubs else "",
               "backendbench": os.path.abspath(args.backendbench), "path": [os.path.abspath(p) for p in args.path],
               "backend": args.backend, "device": args.device, "dtype": args.dtype, "skip": skip,
               "ops": ops, "shared_with": shared_with}
        cfg_path = os.path.join(work, "config-%d-%d.json" % (shard, attempt))
        with open(cfg_path, "w") as f:
            json.dump(cfg, f, indent=1)
        cmd = [args.python, os.path.abspath(__file__), "--child", cfg_path]
        left = deadline - time.time()
        if left <= 1:
            res["stopped"] = "out of time (--minutes %g)" % args.minutes
            break
        with open(log, "a") as logf:
            logf.write("== %s\n" % " ".join(cmd))
            logf.flush()
            proc = subprocess.Popen(cmd, env=env, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                rc = proc.wait(timeout=left)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc = None
        run = {"command": " ".join(cmd), "config": cfg, "rc": rc}
        res["runs"].append(run)
        done, current, lost = False, None, False
        for line in open(events) if os.path.exists(events) else []:
            ev = json.loads(line)
            kind = ev.pop("event")
            if kind == "start":
                run.update(ev)
            elif kind == "backend":
                res["backend_ops"], res["backend_missing"] = ev["ops"], ev["missing"]
            elif kind == "suite":
                res["suite_built"] = True
                res["suite_ops"].update(ev["ops"])
                run["suite_seconds"] = ev["seconds"]
            elif kind == "op_start":
                current = ev["op"]
            elif kind == "op":
                res["ops"][ev.pop("op")] = ev
                current = None
            elif kind == "device_lost":
                res["ops"][ev["op"]]["device_lost"] = ev["error"]
                skip.append(ev["op"])
                lost = True
            elif kind == "done":
                done = True
        if done:
            break
        if rc is None:
            res["stopped"] = "out of time (--minutes %g)%s" % (args.minutes, " in %s" % current if current else "")
            if current:
                res["ops"][current] = {"status": "not reached", "message": "stopped by the time limit while judging it"}
            break
        if current:  # died inside an op: judged as a crash, the rest in a fresh process
            res["ops"][current] = {"status": "died", "message": "the peer's process died on it (exit %s; %s)" % (rc, log)}
            skip.append(current)
        elif not lost:
            res["stopped"] = "the peer's process ended without finishing (exit %s; %s)" % (rc, log)
            break
    else:
        res["stopped"] = "gave up after %d restarts" % args.restarts
    return res


def run_peer(args, fp_ops):
    """Runs the peer in --jobs children at once, each on its share of the ops; the peer's parsed results."""
    work = tempfile.mkdtemp(prefix="flagprop-peer-")
    jobs = max(1, args.jobs)
    logs = [args.log or os.path.join(work, "peer.log")] if jobs == 1 else \
        ["%s.%d" % (args.log, i) if args.log else os.path.join(work, "peer-%d.log" % i) for i in range(jobs)]
    commit_file = os.path.normpath(args.backendbench) + ".COMMIT"
    peer = {"peer": "BackendBench", "suite": "opinfo", "backend": args.backend, "device": args.device, "dtype": args.dtype,
            "backendbench": os.path.abspath(args.backendbench),
            "commit": open(commit_file).read().strip() if os.path.exists(commit_file) else None,
            "logs": logs, "jobs": jobs, "runs": [], "ops": {}, "suite_ops": {}, "backend_ops": None, "backend_missing": {},
            "suite_built": False, "stopped": None}
    env = dict(os.environ)
    front = [os.path.abspath(p) for p in [args.stubs, args.backendbench] + args.path if p]
    env["PYTHONPATH"] = os.pathsep.join(front + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONUNBUFFERED"] = "1"
    t0 = time.time()
    deadline = t0 + args.minutes * 60
    pool = sorted(bb_name(o) for o in (fp_ops if args.shared else args.ops))
    shares = [pool[i::jobs] for i in range(jobs)]
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        futures = [ex.submit(run_shard, args, i, None if args.shared else shares[i], shares[i] if args.shared else None,
                             env, work, logs[i], deadline) for i in range(jobs)]
        results = [f.result() for f in futures]
    stopped = []
    for res in results:
        peer["runs"] += res["runs"]
        peer["ops"].update(res["ops"])
        peer["suite_ops"].update(res["suite_ops"])
        peer["suite_built"] |= res["suite_built"]
        if res["backend_ops"] is not None:
            peer["backend_ops"] = dict(peer["backend_ops"] or {}, **res["backend_ops"])
        peer["backend_missing"].update(res["backend_missing"])
        if res["stopped"] and res["stopped"] not in stopped:
            stopped.append(res["stopped"])
    peer["stopped"] = "; ".join(stopped) or None
    peer["seconds"] = round(time.time() - t0, 1)
    peer["command"] = peer["runs"][0]["command"] if peer["runs"] else ""
    return peer


def list_ops(backendbench, catalog=None):
    """flagprop names of the ATen overloads BackendBench's flag_gems backend maps, read from its source."""
    with open(os.path.join(backendbench, "BackendBench", "backends", "flag_gems.py")) as f:
        source = f.read()
    ops = {fp_name("%s.%s" % m) for m in re.findall(r"torch\.ops\.aten\.(\w+)\.(\w+)\s*:", source)}
    if catalog:
        with open(catalog) as f:
            ops &= {ln.strip() for ln in f if ln.strip() and not ln.startswith("#")}
    return sorted(ops)


# --- the table ---------------------------------------------------------------

def verdict(fp, pr, suite_built=True):
    """(verdict, why not compared)."""
    if fp is None:
        return "not compared", "flagprop has no result in this dtype"
    if pr is None:
        return "not compared", "the peer has no OpInfo sample for it" if suite_built else "the peer did not run"
    if fp["status"] not in JUDGED:
        return "not compared", "flagprop: " + fp["status"]
    if pr["status"] not in JUDGED:
        return "not compared", "peer: " + pr["status"]
    a, b = fp["status"] in FLAGGED, pr["status"] in FLAGGED
    return ("both" if a and b else "flagprop only" if a else "peer only" if b else "neither"), ""


def fp_cell(fp):
    """flagprop's cell: status and the start of the reason."""
    if fp is None:
        return "-"
    if fp["status"] == "pass":
        return "pass"
    text = fp["status"] + ": " + clip(fp["reason"], 80)
    return text + (" (%s)" % clip(fp["explicit"], 60) if fp["explicit"] else "")


def peer_cell(pr):
    """The peer's cell: status, failing samples and message."""
    if pr is None:
        return "-"
    status = pr["status"]
    if pr.get("tests"):
        status += ", %d sample(s)" % pr["tests"] if status == "pass" else ", %d of %d sample(s)" % (pr["failed"], pr["tests"])
    return status + (": " + clip(pr["message"], 80) if pr.get("message") and pr["status"] != "pass" else "")


def table(fp_ops, peer, ops, args):
    """Prints the table, the totals and the disagreements; returns the counts."""
    rows, counts, why = [], {v: 0 for v in VERDICTS}, {}
    for op in ops:
        fp = fp_ops.get(op)
        pr = peer["ops"].get(bb_name(op))
        if bb_name(op) in peer.get("backend_missing", {}):
            pr = {"status": "missing", "message": peer["backend_missing"][bb_name(op)]}
        if pr is None and bb_name(op) in peer.get("suite_ops", {}):
            pr = {"status": "not reached", "message": "the peer stopped before it (%s)" % peer.get("stopped")}
        v, because = verdict(fp, pr, peer.get("suite_built", False))
        counts[v] += 1
        if because:
            why[because] = why.get(because, 0) + 1
        rows.append((op, fp, pr, v, because))
    rows.sort(key=lambda r: (VERDICTS.index(r[3]), r[4], r[0]))
    head = "BackendBench OpInfo (%s, %s, %s)" % (peer["backend"], peer["device"], peer["dtype"])
    print("| op | flagprop (%s, %s) | %s | verdict |" % ("+".join(args.properties), args.dtype, head))
    print("|---|---|---|---|")
    for op, fp, pr, v, because in rows:
        cells = [op, fp_cell(fp), peer_cell(pr), v + (" (%s)" % because if because else "")]
        print("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    print()
    print("totals over %d shared op(s): %s" % (len(rows), ", ".join("%s %d" % (v, counts[v]) for v in VERDICTS)))
    for because, n in sorted(why.items(), key=lambda kv: -kv[1]):
        print("  not compared, %s: %d" % (because, n))
    split = [r for r in rows if r[3] in ("flagprop only", "peer only", "both")]
    if split:
        print()
        print("Where a side flags the op:")
    for op, fp, pr, v, _ in split:
        print("- %s (%s)" % (op, v))
        if fp["status"] in FLAGGED:
            print("  flagprop %s %s: %s" % (fp["key"], fp["status"], clip(fp["reason"], 300)))
            if fp["counterexample"]:
                print("    counterexample: %s" % clip(summarize_counterexample(fp["counterexample"]), 300))
        if pr["status"] in FLAGGED:
            print("  peer %s: %s" % (peer_cell(dict(pr, message=None)), clip(pr.get("message", ""), 300)))
            if pr.get("args"):
                print("    sample: %s" % clip(pr["args"], 300))
    return counts


def main(argv=None):
    """Command line."""
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--child"] and len(argv) == 2:
        child_main(argv[1])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flagprop-report", action="append", metavar="DIR",
                    help="a flagprop report folder (or its report.json); repeatable")
    ap.add_argument("--backendbench", metavar="DIR", help="a BackendBench checkout (its BackendBench/ package inside)")
    ap.add_argument("--stubs", metavar="DIR", help="stand-ins for the LLM-only packages, put first on the path")
    ap.add_argument("--path", action="append", default=[], metavar="DIR",
                    help="a further folder for the peer's path (e.g. FlagGems' src/); repeatable")
    sel = ap.add_mutually_exclusive_group(required=True)
    sel.add_argument("--ops", type=lambda s: [o for o in s.split(",") if o], help="op1,op2 (flagprop's or BackendBench's names)")
    sel.add_argument("--shared", action="store_true", help="every op both flagprop's report and the peer's backend have")
    sel.add_argument("--list-ops", action="store_true",
                     help="print the flagprop names of the ops the peer's flag_gems mapping names (read from its source, "
                     "no torch needed), those in --catalog FILE only; for flagprop run --op")
    ap.add_argument("--catalog", metavar="FILE",
                    help="with --list-ops: a list of flagprop op names (catalog/flaggems_overloads.txt)")
    ap.add_argument("--minutes", type=float, default=8.0, help="bound on the peer's whole run (default 8)")
    ap.add_argument("--backend", default="flag_gems", choices=["flag_gems", "aten"], help="the peer's backend")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--properties", type=lambda s: s.split(","), default=["P5"], help="flagprop properties (default P5)")
    ap.add_argument("--jobs", type=int, default=1, help="peer processes at once, each on its share of the ops (default 1)")
    ap.add_argument("--restarts", type=int, default=4, help="restarts of a peer process after a crash (default 4)")
    ap.add_argument("--python", default=sys.executable, help="the Python the peer runs in")
    ap.add_argument("--log", help="the peer's console (with --jobs N: FILE.0 .. FILE.N-1; default: a scratch folder)")
    ap.add_argument("--save-json", metavar="FILE", help="write the peer's parsed results here")
    ap.add_argument("--from-json", metavar="FILE", help="read the peer's results from a --save-json file instead of running it")
    args = ap.parse_args(argv)
    if args.list_ops:
        if not args.backendbench:
            ap.error("--list-ops needs --backendbench DIR")
        for op in list_ops(args.backendbench, args.catalog):
            print(op)
        return 0
    if not args.flagprop_report:
        ap.error("--flagprop-report DIR is needed")
    if not args.from_json and not args.backendbench:
        ap.error("--backendbench DIR is needed unless --from-json FILE is given")
    if args.ops:
        args.ops = [fp_name(o) for o in args.ops]
    try:
        fp_ops, notes = read_flagprop(args.flagprop_report, args.dtype, set(args.properties))
    except (OSError, ValueError) as e:
        print("peer_backendbench: cannot read flagprop's report: %s" % e, file=sys.stderr)
        return 1
    for n in notes:
        print(n)
    if args.from_json:
        try:
            with open(args.from_json) as f:
                peer = json.load(f)
        except (OSError, ValueError) as e:
            print("peer_backendbench: cannot read %s: %s" % (args.from_json, e), file=sys.stderr)
            return 1
    else:
        peer = run_peer(args, fp_ops)
    if args.save_json:
        with open(args.save_json, "w") as f:
            json.dump(peer, f, indent=1)
    run = (peer.get("runs") or [{}])[0]
    print("peer: BackendBench %s, OpInfo suite, backend %s, %s (%s), %s; torch %s; %d op(s) judged in %s s%s" % (
        (peer.get("commit") or "?")[:12], peer["backend"], peer["device"], run.get("device_name", "?"), peer["dtype"],
        run.get("torch", "?"), len([o for o in peer["ops"].values() if o["status"] in JUDGED]), peer.get("seconds", "?"),
        "; stopped: " + peer["stopped"] if peer.get("stopped") else ""))
    if peer.get("command"):
        print("peer command: %s" % peer["command"])
    if peer.get("backend_missing"):
        print("BackendBench's mapping has %d op(s) this stack lacks (left out): %s" % (
            len(peer["backend_missing"]), "; ".join(v for _, v in sorted(peer["backend_missing"].items())[:12])
            + ("; ..." if len(peer["backend_missing"]) > 12 else "")))
    if not peer.get("runs") and not args.from_json:
        return 1
    if args.shared:
        pool = set(fp_ops)
        if peer.get("backend_ops") is not None:
            pool &= {fp_name(o) for o in list(peer["backend_ops"]) + list(peer.get("backend_missing", {}))}
        ops = sorted(pool)
    else:
        ops = args.ops
    print()
    table(fp_ops, peer, ops, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
