"""Bug-report drafts: one Markdown file per distinct failure of a run.

``python3 -m flagprop.reporting.drafts REPORT_DIR`` reads ``REPORT_DIR/report.json``
(schema ``flagprop.report/1``) and writes ``REPORT_DIR/drafts/NN-<slug>.md``,
one per distinct failure, and ``REPORT_DIR/drafts/README.md``, their index.

Which failures are "the same" is decided by ``grouping_key``: every failing
result, and each entry of its ``observations.distinct_failures``, is keyed by
(property, op, finding kind, exception type, exception site); results with
one key -- however many dtypes, cases or targets (pins) they come from --
make one draft, which lists them all. Each draft holds what a maintainer of
the project under test needs: a title, the environment (versions, commits,
pins, SHA256s, device), the standalone reproducer (inline when small, else
its path), expected against actual, the exception site and shrunk
counterexample, and every target, pin and dtype that shares the failure.

Failures of fixture targets (labels contain "fixture") are planted on
purpose; they get drafts too, and the index says which failures their
manifests expected. Only results with status "fail" are drafted: target
errors and "error" results say that flagprop could not judge, and the index
counts them apart. Standard library only, besides ``flagprop.judging.verdicts``
(pure functions, no torch) and ``flagprop.reporting.htmlreport``.
"""

import hashlib
import json
import os
import re
import shlex
import sys

from flagprop.reporting.htmlreport import compact_json, replay_command, report_file, write_atomic
from flagprop.judging.verdicts import finding_kind, shapeless

SCHEMA = "flagprop.report/1"

#: What each property holds to (as ``flagprop properties`` prints it): the
#: "expected" half of a draft.
#: Properties whose failures are about the kernels (reported to FlagGems);
#: the others are about the installer and its fast path (Torch-FL).
KERNEL_PROPERTIES = {"P5", "P6"}

#: Reproducers up to this many bytes are inlined in a draft; larger ones are
#: named by path (with their size and SHA256) instead.
INLINE_LIMIT = 8 * 1024

#: A draft's counterexample JSON is cut at this many characters.
COUNTEREXAMPLE_LIMIT = 8000

#: How a finding kind reads in a title.
KIND_PHRASES = {
    "values": "values differ from CPU ATen beyond tolerance",
    "indices": "returns wrong indices",
    "dtype": "wrong result dtype",
    "shape": "wrong result shape",
    "aliases an input": "output shares storage with an input",
    "aliases an output": "output shares storage with another output",
    "not a view": "result is not a view of its input",
    "inplace result": "in-place variant does not return self",
    "writes an input": "writes an input in place",
    "relayouts an input": "changes an input's metadata",
    "reuses outputs": "reuses an earlier call's output storage",
    "output count": "returns the wrong number of outputs",
    "patched differs": "patched result differs bitwise from unpatched",
    "lost device": "device context lost",
    "silent-skip": "silently installs nothing",
    "partial": "silently installs only some components",
    "broken-wrap": "replaces functions without __wrapped__",
}

_DTYPE_WORDS = re.compile(r"\b(torch\.)?(b?float|u?int|complex)(\d+|#)(?!\w)")
_SCALAR_TYPES = re.compile(r"\b(Half|BFloat16|Float|Double|Int|Long|Short|Char|Byte|Bool|ComplexFloat|ComplexDouble)\b")


def _normalise(kind):
    """``kind`` (str) with dtype names (float16, int#, torch.float32, and
    ATen's scalar type names such as Half or BFloat16) replaced by
    ``<dtype>`` and whitespace collapsed, so that one finding in several dtypes has one kind. Returns a
    str."""
    kind = _DTYPE_WORDS.sub("<dtype>", kind)
    kind = _SCALAR_TYPES.sub("<dtype>", kind)
    kind = shapeless(kind)  # one check failing on several shapes is one failure
    return " ".join(kind.split())


def reason_kind(reason):
    """The finding kind read from a one-line ``reason`` (str) when the
    observations name none: without a leading "call N (...): " or
    "launch N (...): " and without what follows "; and " (the count of more
    distinct failures), the leading word when the reason starts "word:"
    (e.g. "silent-skip"); else the reason with quoted text as '...' and
    every number and parenthesised or bracketed part masked by
    ``verdicts.shapeless``, cut at the first ";" and at 120 characters.
    Returns a str."""
    text = re.sub(r"^(call|launch) \d+( \([^)]*\))?: ", "", (reason or "").strip())
    text = text.split("; and ")[0]
    m = re.match(r"^([a-z][a-z_-]*):", text)
    if m:
        return m.group(1)
    text = shapeless(re.sub(r"'[^']*'", "'\u2026'", text))  # parenthesised parts and numbers, as for a raise
    return " ".join(text.split(";")[0].split())[:120].strip()


def finding_kinds(prop, failure):
    """The finding kinds of one failure: ``failure`` is a result dict or an
    entry of its ``observations.distinct_failures`` (both have ``reason`` and
    ``observations``; a distinct failure also ``kinds``) of property ``prop``
    (e.g. "P6"). In order of preference: the kinds flagprop recorded
    (``kinds``, ``observations.kinds`` or ``observations.finding_kind``); a
    process crash ("crash: <why>"); for P5 / P6 ``flagprop.judging.verdicts.finding_kind``
    of each numerics / aliasing finding; else ``reason_kind`` of the reason.
    Each is normalised (dtype names become ``<dtype>``). Returns a sorted
    list of distinct str, never empty."""
    obs = failure.get("observations") if isinstance(failure.get("observations"), dict) else {}
    kinds = failure.get("kinds") or obs.get("kinds") or ([obs["finding_kind"]] if obs.get("finding_kind") else [])
    if not kinds and obs.get("crash"):
        kinds = ["crash: " + str(obs["crash"])]
    if not kinds and prop in KERNEL_PROPERTIES:
        kinds = [finding_kind(str(x)) for x in obs.get("numerics" if prop == "P5" else "aliasing") or []]
    if not kinds:
        kinds = [reason_kind(failure.get("reason", ""))]
    return sorted({_normalise(str(k)) for k in kinds})


def exception_site(failure):
    """The first exception flagprop saw caught inside the code under test
    (``observations.exceptions_caught[0]``) of ``failure`` (a result dict or
    a distinct failure). Returns (type, site, the exception dict): ``site`` is
    the last two components of its file path and its line ("dir/file.py:227"),
    so that one site in checkouts at different paths is one site; ("", "",
    None) when there is none."""
    obs = failure.get("observations") if isinstance(failure.get("observations"), dict) else {}
    caught = obs.get("exceptions_caught") or []
    if not caught or not isinstance(caught[0], dict):
        return "", "", None
    x = caught[0]
    parts = str(x.get("file") or "").replace("\\", "/").split("/")
    site = "/".join(p for p in parts[-2:] if p)
    if x.get("line") is not None:
        site += ":%s" % x.get("line")
    return str(x.get("type") or ""), site, x


def grouping_key(result, failure=None):
    """The key that says which failures are one: for the failing ``result``
    (a result dict) or, when given, one of its ``distinct_failures``
    (``failure``), the tuple (property, op or "", finding kinds joined by
    " + ", exception type or "", exception site or ""). Target, pin, dtype
    and case are not part of it, so a failure shared by several of them has
    one key. Deterministic: the same inputs give the same key. Returns a
    tuple of five str."""
    f = failure if failure is not None else result
    prop = str(result.get("property") or "")
    etype, site, _ = exception_site(f)
    return (prop, str(result.get("op") or ""), " + ".join(finding_kinds(prop, f)), etype, site)


def key_text(key):
    """A grouping key (tuple) as one line: its parts joined by " | ", an
    empty part shown as "-". Returns a str."""
    return " | ".join(p if p else "-" for p in key)


def _is_fixture(target):
    """Whether ``target`` (dict) is a fixture target (labels contain
    "fixture")."""
    return "fixture" in (target.get("labels") or [])


def _member(report, target, result, failure, index):
    """One occurrence of a failure: a dict with the target's name, labels,
    manifest, pin name, provenance, whether it is a fixture, and the
    failure's dtype, key, reason, counterexample, reproduce string,
    reproducer path, observations, expected status, ``as_expected`` and
    ``distinct`` (0 for the result itself, else its 2-based place among the
    distinct failures)."""
    f = failure if failure is not None else result
    prov = target.get("provenance") or {}
    pin = prov.get("pin") if isinstance(prov.get("pin"), dict) else {}
    return {
        "target": target.get("name", "?"),
        "labels": target.get("labels") or [],
        "manifest": target.get("manifest", ""),
        "pin": pin.get("name", ""),
        "provenance": prov,
        "unverified": list(target.get("unverified") or []) if (target.get("unverified") or result.get("unverified")) else [],
        "fixture": _is_fixture(target),
        "dtype": result.get("dtype", ""),
        "key": result.get("key", result.get("property", "")),
        "title": result.get("title", ""),
        "reason": f.get("reason", ""),
        "counterexample": f.get("counterexample"),
        "reproduce": f.get("reproduce", ""),
        "replay": f.get("replay", ""),
        "reproducer": f.get("reproducer") or "",
        "reproducer_error": result.get("reproducer_error", "") if failure is None else "",
        "observations": f.get("observations") if isinstance(f.get("observations"), dict) else {},
        "expected": result.get("expected", "pass or skip"),
        "as_expected": bool(result.get("as_expected", False)),
        "distinct": index,
        "control": ((target.get("target") or {}).get("ops") or {}).get("control", "none"),
        "device": prov.get("device") or (target.get("target") or {}).get("device", ""),
    }


def group(report):
    """The distinct failures of ``report`` (the parsed report.json, a dict).
    Every result with status "fail" and each of its
    ``observations.distinct_failures`` is keyed by ``grouping_key``; one
    group per key. Returns a list of dicts, unexpected groups first, then
    groups of non-fixture targets, then in order of first appearance: ``key``
    (tuple), ``key_text``, ``property``, ``property_title``, ``op``,
    ``kinds`` (list), ``exception`` (type), ``site``, ``exception_detail``
    (the first exception dict or None), ``members`` (list of occurrences,
    see ``_member``), ``targets``, ``pins``, ``dtypes`` (lists, in order of
    appearance), ``expected`` ("yes", "no" or "partly": whether the
    manifests expected these failures), ``fixture`` (bool: every occurrence
    is on a fixture target) and ``title``. Raises ValueError when ``report``
    is not a flagprop.report/1 dict."""
    if not isinstance(report, dict) or report.get("schema") != SCHEMA:
        raise ValueError("not a %s document" % SCHEMA)
    groups = {}
    order = []
    registry = {p["id"]: p for p in report.get("properties") or [] if isinstance(p, dict) and "id" in p}
    for t in report.get("targets") or []:
        if t.get("status") != "ok":
            continue
        for r in t.get("results") or []:
            if not isinstance(r, dict) or r.get("status") != "fail":
                continue
            obs = r.get("observations") if isinstance(r.get("observations"), dict) else {}
            if "crash" in obs and str(r.get("reason", "")).startswith("(as "):
                continue  # the same crash restated for the op's other property: drafted once, with the first
            failures = [(None, 0)] + [(d, i + 2) for i, d in enumerate(obs.get("distinct_failures") or [])
                                      if isinstance(d, dict)]
            for failure, index in failures:
                key = grouping_key(r, failure)
                if key not in groups:
                    etype, site, detail = exception_site(failure if failure is not None else r)
                    groups[key] = {"key": key, "key_text": key_text(key), "property": key[0],
                                   "property_title": r.get("title") or registry.get(key[0], {}).get("title", ""),
                                   "property_statement": registry.get(key[0], {}).get("statement", ""),
                                   "op": key[1], "kinds": key[2].split(" + "), "exception": etype, "site": site,
                                   "exception_detail": detail, "members": []}
                    order.append(key)
                groups[key]["members"].append(_member(report, t, r, failure, index))
    out = []
    for i, key in enumerate(order):
        g = groups[key]
        ms = g["members"]
        g["targets"] = _unique(m["target"] for m in ms)
        g["pins"] = _unique(m["pin"] for m in ms if m["pin"])
        g["dtypes"] = _unique(m["dtype"] for m in ms if m["dtype"])
        n_expected = sum(1 for m in ms if m["as_expected"])
        g["expected"] = "yes" if n_expected == len(ms) else ("no" if n_expected == 0 else "partly")
        g["fixture"] = all(m["fixture"] for m in ms)
        g["title"] = draft_title(g)
        g["_order"] = (g["expected"] == "yes", g["fixture"], i)
        out.append(g)
    out.sort(key=lambda g: g["_order"])
    for g in out:
        del g["_order"]
    return out


def _unique(items):
    """``items`` without repeats, in first-seen order. Returns a list."""
    seen, out = set(), []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def _tensors(counterexample):
    """Every tensor description (dicts with shape, how...) in an op
    counterexample (dict with ``calls[].tensors[]``). Returns a list."""
    out = []
    if isinstance(counterexample, dict):
        for c in counterexample.get("calls") or []:
            if isinstance(c, dict):
                out += [x for x in c.get("tensors") or [] if isinstance(x, dict)]
    return out


def input_context(counterexample):
    """A few words on what is special about an op counterexample's inputs:
    "on a zero-size input" when a tensor has a zero-length dimension, "on a
    non-contiguous input (<how>)" when one is not contiguous, else "".
    Returns a str."""
    ts = _tensors(counterexample)
    if any(0 in (x.get("shape") or []) for x in ts):
        return "on a zero-size input"
    for x in ts:
        how = x.get("how")
        if how and how != "contiguous":
            return "on a non-contiguous input (%s)" % how
    return ""


def _kind_phrase(kind):
    """How one finding kind reads in a title. Returns a str."""
    if kind in KIND_PHRASES:
        return KIND_PHRASES[kind]
    m = re.match(r"^raised ([A-Za-z_.]+): ?(.*)$", kind)
    if m:
        return "raises %s%s" % (m.group(1), ": " + m.group(2) if m.group(2) else "")
    if kind.startswith("crash: "):
        return kind[len("crash: "):].replace("target process died", "the process dies")
    return re.sub(r"( \(\u2026\))+$", "", kind)


def _with_numbers(kind, members):
    """``kind`` (a finding kind, numbers masked as "#" and parenthesised parts
    as "(\u2026)" for grouping) with them put back where every member's own
    text (its crash, reason or findings) has the same ones ("signal # (\u2026)"
    -> "signal 11 (Segmentation fault)"); else ``kind`` unchanged. Returns a
    str."""
    if "#" not in kind and "\u2026" not in kind:
        return kind
    pattern = (re.escape(kind).replace(r"\#", r"(-?\d+(?:\.\d+)?)").replace("\u2026", "([^()]*?)")
               .replace("<dtype>", r"\w+"))
    seen = set()
    for m in members:
        obs = m.get("observations") if isinstance(m.get("observations"), dict) else {}
        texts = (["crash: %s" % obs["crash"]] if obs.get("crash") else []) + [str(m.get("reason") or "")]
        texts += [str(x) for x in (obs.get("numerics") or []) + (obs.get("aliasing") or [])]
        found = next((hit.groups() for hit in (re.search(pattern, t) for t in texts) if hit), None)
        if found is None:
            return kind
        seen.add(found)
    if len(seen) != 1:
        return kind
    parts = iter(seen.pop())
    return re.sub("#|\u2026", lambda _: next(parts), kind)


def draft_title(g):
    """The title of group ``g`` (from ``group``): "[Project] subject: what
    (context)". The project is FlagGems for kernel properties (P5, P6) unless
    the finding is that patched and unpatched differ, else Torch-FL; a group
    of fixture targets only says "[fixture: ...]". The subject is the op, or
    the function the exception was caught in, or the property. Returns a
    str of at most about 150 characters."""
    project = "FlagGems" if g["property"] in KERNEL_PROPERTIES and g["kinds"] != ["patched differs"] else "Torch-FL"
    prefix = "[fixture: %s]" % project if g["fixture"] else "[%s]" % project
    detail = g.get("exception_detail") or {}
    subject = g["op"] or detail.get("function") or "%s %s" % (g["property"], g["property_title"])
    what = "; ".join(_kind_phrase(_with_numbers(k, g["members"])) for k in g["kinds"][:2])
    if len(g["kinds"]) > 2:
        what += " (and %d more kinds)" % (len(g["kinds"]) - 2)
    if g["exception"] and g["exception"] not in what:
        what += "; %s swallowed at %s" % (g["exception"], g["site"])
    ctx = input_context(g["members"][0]["counterexample"]) if g["op"] else ""
    if ctx:
        what += " " + ctx
    if len(g["dtypes"]) == 1:
        what += " (%s)" % g["dtypes"][0]
    title = "%s %s: %s" % (prefix, subject, what)
    return title if len(title) <= 150 else title[:149] + "\u2026"


def slug(text, limit=60):
    """A file-name part from ``text``: lower case, the leading "[...]" left
    out, every run of other than letters and digits one "-", at most
    ``limit`` characters. Returns a str (never empty)."""
    text = re.sub(r"^\[[^\]]*\]\s*", "", text).lower()
    s = re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:limit].strip("-")
    return s or "failure"


def _fence(text, lang=""):
    """``text`` in a Markdown code fence longer than any backtick run in
    it, tagged ``lang``. Returns a str."""
    longest = max([len(m) for m in re.findall(r"`+", text)] + [2])
    bar = "`" * (longest + 1)
    return "%s%s\n%s\n%s\n" % (bar, lang, text.rstrip("\n"), bar)


def _code(text):
    """``text`` as inline Markdown code, safe for backticks inside. Returns
    a str."""
    text = str(text)
    if "`" not in text:
        return "`%s`" % text
    return "`` %s ``" % text


def _environment(report, g):
    """The Environment section of group ``g``: per target (and pin) its
    device, versions, LibTorch, pin commits, SHA256s and native runtime, and
    the run's seed and command. Returns Markdown (str)."""
    prov = report.get("provenance") or {}
    lines = ["## Environment", ""]
    seen = set()
    for m in g["members"]:
        if m["target"] in seen:
            continue
        seen.add(m["target"])
        p = m["provenance"]
        lines.append("Target `%s`%s (manifest `%s`)%s:" % (
            m["target"], " through pin `%s`" % m["pin"] if m["pin"] else "", m["manifest"],
            " -- a fixture target: flagprop's own planted fault" if m["fixture"] else ""))
        lines.append("")
        rows = [("device", p.get("device"))]
        for k, v in sorted((p.get("versions") or {}).items()):
            rows.append((k, v if v is not None else "not installed"))
        rows.append(("LibTorch flagprop was built with", p.get("libtorch_compiled")))
        pin = p.get("pin") if isinstance(p.get("pin"), dict) else {}
        for k in ("torch_fl_commit", "flag_gems_commit", "torch", "triton"):
            if pin.get(k):
                rows.append(("pin %s" % k.replace("_", " "), pin[k]))
        if pin.get("path"):
            rows.append(("pin file", pin["path"]))
        for k in sorted(k for k in p if k.endswith("_sha256")):
            rows.append((k.replace("_", " "), p[k]))
        runtime = p.get("native_runtime")
        if isinstance(runtime, dict):
            for k, v in sorted(runtime.items()):
                rows.append(("native runtime %s" % k, v.get("status") if isinstance(v, dict) else v))
        lines.append("| | |")
        lines.append("|---|---|")
        for k, v in rows:
            if v not in (None, ""):
                lines.append("| %s | %s |" % (k, _code(v)))
        for u in m["unverified"]:
            lines.append("")
            lines.append("**Unverified run**: %s" % u)
        lines.append("")
    lines.append("flagprop run: seed %s, command %s." % (
        _code(prov.get("seed", "?")), _code(" ".join(shlex.quote(str(a)) for a in prov.get("command") or []))))
    lines.append("")
    return "\n".join(lines)


def _reproduce(report, g, report_dir):
    """The Reproduce section of group ``g``: the first occurrence's
    standalone reproducer inline (or its path when over ``INLINE_LIMIT``),
    and the flagprop replay command. Returns Markdown (str)."""
    prov = report.get("provenance") or {}
    m = g["members"][0]
    python = prov.get("python") or "python3"
    lines = ["## Reproduce", ""]
    found = report_file(m["reproducer"], report_dir, "reproducers")
    if found:
        size = os.path.getsize(found)
        with open(found, "rb") as f:
            data = f.read()
        lines.append("Standalone, with a python3 that has torch (flagprop not needed; exit 1: reproduced, 0: not "
                     "reproduced, 2: a file of the target is missing, 3: cannot run here):")
        lines.append("")
        shown = m["reproducer"]
        if os.path.abspath(found).startswith(os.path.abspath(report_dir) + os.sep):
            shown = os.path.relpath(found, report_dir)  # from the report folder, wherever it is
            lines.append("From the report folder:")
            lines.append("")
        lines.append(_fence("%s %s" % (os.path.basename(python) if shown != m["reproducer"] else python,
                                       shlex.quote(shown)), "sh"))
        if size <= INLINE_LIMIT:
            lines.append("The reproducer (`%s`, %d bytes):" % (os.path.basename(found), size))
            lines.append("")
            lines.append(_fence(data.decode("utf-8", "replace"), "python"))
        else:
            lines.append("The reproducer is %d KB, over the %d KB inlined here: attach the file %s "
                         "(SHA256 %s) instead; it embeds flagprop's Python modules." % (
                             (size + 1023) // 1024, INLINE_LIMIT // 1024, _code(shown),
                             _code(hashlib.sha256(data).hexdigest())))
            lines.append("")
    elif m["reproducer"]:
        lines.append("The reproducer %s named by the report was not found." % _code(m["reproducer"]))
        lines.append("")
    else:
        lines.append("No standalone reproducer was written%s." % (
            ": " + m["reproducer_error"] if m["reproducer_error"] else ""))
        lines.append("")
    if m["reproduce"]:
        lines.append("Inside flagprop (RapidCheck's replay of the shrunk case):")
        lines.append("")
        lines.append(_fence(m["replay"] or replay_command(prov, m["manifest"], m["key"], m["reproduce"]), "sh"))
    return "\n".join(lines)


def _reference_sentence(m, op):
    """Which reference occurrence ``m`` of op ``op`` was judged against: the
    same call with FlagGems off on the same device (the "stock" control),
    a control op file standing in for it, or CPU ATen. Returns one
    Markdown sentence (str)."""
    control = m.get("control")
    if control == "stock":
        return ("The reference for `%s` is the same call with FlagGems off: stock ATen on %s, on the same inputs; "
                "CPU ATen (float64) is a second opinion." % (op, _code(m.get("device") or "the same device")))
    if isinstance(control, dict):
        return ("The reference for `%s` is the control op file %s, standing in for the device's stock kernels; "
                "CPU ATen (float64) is a second opinion." % (op, _code(control.get("path", "?"))))
    return "CPU ATen is the reference for `%s`." % op


def _with_flaggems_off(m):
    """The "With FlagGems off" paragraph of occurrence ``m`` where its
    target has a control (docs/control.md): what the stock path gave on the
    same case, from the shrunk case's findings and notes. Returns Markdown
    lines (list of str); empty for a target without one."""
    if m.get("control") in (None, "", "none"):
        return []
    device = m.get("device") or "the same device"
    stock = "stock ATen on %s" % _code(device) if m.get("control") == "stock" else "the control"
    obs = m["observations"]
    said = []
    for f in obs.get("numerics") or []:
        if "differs from the stock path" in f:
            head, _, rest = f.partition(": differs from the stock path: ")
            said.append("%s gives another result for %s: the op's differs from it by %s" % (
                stock, head or "an output", rest or f))
        elif "the stock path returns" in f:
            said.append("%s returns where the op raises (%s)" % (stock, f))
    for n in obs.get("control") or []:
        if "no stock kernel" in n:
            said.append("there is no stock kernel on %s (%s), so the op was judged against CPU ATen" % (
                _code(device), n))
        elif "differs from CPU ATen" in n:
            said.append("%s itself differs from CPU ATen here (%s); that is not the finding" % (stock, n))
    if not said:
        return []
    lines = ["With FlagGems off, on the same case:", ""]
    lines += ["- %s." % x.rstrip(".") for x in _unique(said)[:6]]
    lines.append("")
    return lines


def _what_happens(g):
    """The Expected / Actual section of group ``g``, with the shrunk case's
    findings and the exception site. Returns Markdown (str)."""
    m = g["members"][0]
    title, statement = g["property_title"], g.get("property_statement", "")
    obs = m["observations"]
    lines = ["## Expected and actual", ""]
    lines.append("**Expected** (%s %s): %s." % (g["property"], title, statement or "the property holds"))
    if g["op"]:
        lines.append(_reference_sentence(m, g["op"]))
    lines.append("")
    lines.append("**Actual**: %s" % m["reason"])
    lines.append("")
    off = _with_flaggems_off(m)
    if off:
        lines += off
    findings = []
    for k in ("numerics", "aliasing"):
        findings += ["%s: %s" % (k, x) for x in (obs.get(k) or [])[:10]]
    if obs.get("crash"):
        findings.append("process: %s" % obs["crash"])
    crashed = bool(obs.get("crash"))
    if findings:
        lines.append("On the recorded case:" if crashed else "On the shrunk case:")
        lines.append("")
        lines += ["- %s" % x for x in findings]
        lines.append("")
    detail = g.get("exception_detail")
    if detail:
        lines.append("## Exception site")
        lines.append("")
        lines.append("`%s` raised at `%s:%s` in `%s()` and caught inside the code under test: %s" % (
            detail.get("type", ""), detail.get("file", ""), detail.get("line", ""), detail.get("function", ""),
            detail.get("message", "")))
        lines.append("")
    if m["counterexample"] not in (None, ""):
        text = compact_json(m["counterexample"], width=110)
        if len(text) > COUNTEREXAMPLE_LIMIT:
            text = text[:COUNTEREXAMPLE_LIMIT] + "\n... (%d more characters: see report.json)" % (
                len(text) - COUNTEREXAMPLE_LIMIT)
        lines.append("## Counterexample" if crashed else "## Shrunk counterexample")
        lines.append("")
        lines.append("%s (%s%s):" % (
            "The case that ended the process (not shrunk: the process that would shrink it was gone)" if crashed
            else "The smallest case RapidCheck found", m["target"], ", " + m["dtype"] if m["dtype"] else ""))
        lines.append("")
        lines.append(_fence(text, "json"))
        torch_lines = case_as_torch(m["counterexample"])
        if torch_lines:
            lines.append("The same case as torch calls (shapes, strides, storage offsets and arguments; the "
                         "values come from flagprop's seeded generator, which the reproducer prints):")
            lines.append("")
            lines.append(_fence(torch_lines, "python"))
    return "\n".join(lines)


def _torch_arg(value):
    """An argument of an op case's call as Python source: ``{"tensor": i}``
    as ``t<i>``, placeholders (``$dtype``, ``$out``...) by name, lists and
    dicts element by element, anything else as its ``repr``."""
    if isinstance(value, dict) and len(value) == 1:
        (key, v), = value.items()
        if key == "tensor":
            return "t%d" % v
        if key == "$out":
            return "out%d" % v
        if key == "$dtype":
            return "torch.%s" % v
        if key in ("$memory_format", "$layout"):
            return "torch.%s" % v
        if key == "$device":
            return "device"
    if isinstance(value, list):
        return "[%s]" % ", ".join(_torch_arg(v) for v in value)
    if isinstance(value, dict):
        return "{%s}" % ", ".join("%r: %s" % (k, _torch_arg(v)) for k, v in value.items())
    if isinstance(value, float) and value != value:
        return "float('nan')"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "float('%s')" % ("inf" if value > 0 else "-inf")
    return repr(value)


def case_as_torch(case):
    """An op case (``{"op", "calls": [{"tensors", "args", "kwargs"}]}``,
    flagprop.engine.ops' form) as a few lines of torch a maintainer reads
    at a glance: each tensor as ``torch.empty`` storage viewed with
    ``as_strided`` (its shape, strides and offset), its value kind and
    specials as a comment, then the ATen call. '' for any other case."""
    if not isinstance(case, dict) or not isinstance(case.get("calls"), list) or not case.get("op"):
        return ""
    base, _, overload = str(case["op"]).partition(".")
    lines = ["import torch", ""]
    for k, call in enumerate(case["calls"]):
        if not isinstance(call, dict):
            return ""
        for i, t in enumerate(call.get("tensors") or []):
            if not isinstance(t, dict):
                return ""
            note = "values: %s" % t.get("values", "?")
            if t.get("specials"):
                note += ", specials %s" % ", ".join("%s at %s" % (w, at) for at, w in t["specials"][:4])
            lines.append("t%d = torch.empty(%s, dtype=torch.%s).as_strided(%s, %s, %s)  # %s" % (
                i, t.get("storage"), t.get("dtype"), t.get("shape"), t.get("strides"), t.get("offset", 0), note))
        args = [_torch_arg(a) for a in call.get("args") or []]
        args += ["%s=%s" % (n, _torch_arg(v)) for n, v in (call.get("kwargs") or {}).items()]
        lines.append("%storch.ops.aten.%s.%s(%s)" % ("out = " if k == len(case["calls"]) - 1 else "",
                                                     base, overload or "default", ", ".join(args)))
    return "\n".join(lines)


def _occurrences(g):
    """The table of every occurrence of group ``g``: target, pin, dtype,
    result key, whether the manifest expected it, reason and reproducer.
    Returns Markdown (str)."""
    lines = ["## Where it occurs", "",
             "%d failing result(s) share this failure: dtypes %s; targets %s%s." % (
                 len(g["members"]), ", ".join(g["dtypes"]) or "-", ", ".join(g["targets"]),
                 "; pins " + ", ".join(g["pins"]) if g["pins"] else ""), "",
             "| target | pin | dtype | result | expected by the manifest | reason | reproducer |",
             "|---|---|---|---|---|---|---|"]
    for m in g["members"]:
        reason = " ".join(m["reason"].split()).replace("|", "\\|")
        if len(reason) > 160:
            reason = reason[:159] + "\u2026"
        result = m["key"] + (" (distinct failure %d)" % m["distinct"] if m["distinct"] else "")
        expected = ("yes (%s)" % m["expected"]) if m["as_expected"] else "**no** (expected %s)" % m["expected"]
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            m["target"], m["pin"] or "-", m["dtype"] or "-", result, expected, reason,
            _code(m["reproducer"]) if m["reproducer"] else "-"))
    lines.append("")
    return "\n".join(lines)


def render_draft(report, g, report_dir):
    """The Markdown text of the draft for group ``g`` (from ``group``) of
    ``report``; ``report_dir`` (str) is where reproducer paths are resolved.
    Returns a str."""
    m = g["members"][0]
    intro = "flagprop's property %s (%s) fails%s: %s." % (
        g["property"], g["property_title"], " for `%s`" % g["op"] if g["op"] else "",
        "; ".join(_kind_phrase(k) for k in g["kinds"]))
    if g["fixture"]:
        intro += (" All occurrences are on fixture targets, flagprop's own planted faults%s." %
                  (" that their manifests expect" if g["expected"] == "yes" else ""))
    elif g["expected"] != "no":
        intro += " The manifest(s) expected %s of these failures." % ("all" if g["expected"] == "yes" else "some")
    parts = ["# " + g["title"], "", intro, "",
             "| | |", "|---|---|",
             "| property | %s %s |" % (g["property"], g["property_title"]),
             "| op | %s |" % (_code(g["op"]) if g["op"] else "-"),
             "| finding kind | %s |" % "; ".join(_code(k) for k in g["kinds"]),
             "| exception | %s |" % (_code(g["exception"]) if g["exception"] else "-"),
             "| site | %s |" % (_code(g["site"]) if g["site"] else "-"),
             "| dtypes | %s |" % (", ".join(g["dtypes"]) or "-"),
             "| targets | %s |" % ", ".join(g["targets"]),
             "| pins | %s |" % (", ".join(g["pins"]) or "-"),
             "| occurrences | %d |" % len(g["members"]), "",
             _what_happens(g),
             _reproduce(report, g, report_dir),
             _environment(report, g),
             _occurrences(g),
             "---", "", "flagprop grouping key: %s" % _code(g["key_text"]), ""]
    del m
    return "\n".join(parts)


def render_index(report, groups, names):
    """drafts/README.md: what the drafts are, then one row per draft (file
    ``names[i]`` for ``groups[i]``) with its property, op, kind, dtypes,
    targets, occurrences and whether the manifests expected it, and what was
    not drafted. Returns Markdown (str)."""
    prov = report.get("provenance") or {}
    s = report.get("summary") or {}
    n_fail = sum(1 for t in report.get("targets") or [] if t.get("status") == "ok"
                 for r in t.get("results") or [] if isinstance(r, dict) and r.get("status") == "fail")
    n_err = sum(1 for t in report.get("targets") or [] if t.get("status") == "ok"
                for r in t.get("results") or [] if isinstance(r, dict) and r.get("status") == "error")
    occurrences = sum(len(g["members"]) for g in groups)
    lines = ["# Bug-report drafts", "",
             "From `report.json` of the flagprop run with seed %s (%s)." % (
                 _code(prov.get("seed", "?")), _code(" ".join(shlex.quote(str(a)) for a in prov.get("command") or []))),
             "",
             "One draft per distinct failure: %d draft(s) from %d failing result(s) (%d occurrence(s) counting "
             "their distinct failures). Failures are one when `flagprop.reporting.drafts.grouping_key` gives them one key: "
             "(property, op, finding kind, exception type, exception site); dtypes, cases and targets (pins) are "
             "not part of it. Unexpected failures come first." % (len(groups), n_fail, occurrences), "",
             "\"Expected\" says whether the target manifests expected these failures (`as_expected`): a fixture "
             "target fails on purpose, and its drafts are test data, not findings.", "",
             "| # | draft | property | op | kind | dtypes | targets | occurrences | expected by the manifest |",
             "|---|---|---|---|---|---|---|---|---|"]
    for i, (g, name) in enumerate(zip(groups, names)):
        expected = {"yes": "yes", "no": "**no: unexpected**", "partly": "**partly**"}[g["expected"]]
        if g["fixture"]:
            expected += " (fixture)"
        title = g["title"].replace("|", "\\|")
        lines.append("| %s | [%s](%s) | %s | %s | %s | %s | %s | %d | %s |" % (
            name.split("-")[0], title, name, g["property"], g["op"] or "-",
            "; ".join(k.replace("|", "\\|") for k in g["kinds"]), ", ".join(g["dtypes"]) or "-",
            ", ".join(g["targets"]), len(g["members"]), expected))
    lines.append("")
    errors = [t.get("name", "?") for t in report.get("targets") or [] if t.get("status") != "ok"]
    if errors or n_err:
        lines.append("Not drafted (flagprop could not judge; see report.html): %d target error(s)%s, %d result(s) "
                     "with status error." % (len(errors), " (" + ", ".join(errors) + ")" if errors else "", n_err))
        lines.append("")
    if not groups:
        lines.append("No failing result: nothing to draft.")
        lines.append("")
    del s
    return "\n".join(lines)


_DRAFT_FILE = re.compile(r"^\d+-[a-z0-9-]+\.md$")


def write(report_dir):
    """Reads ``report_dir``/report.json and writes ``report_dir``/drafts/:
    NN-<slug>.md per group (``group``), numbered from 01 in group order, and
    README.md, the index. Drafts of an earlier run there (files named like
    ours) are removed first. Returns the list of paths written: the drafts in
    order, then README.md. Raises OSError when a file cannot be read or
    written, ValueError when report.json is not a flagprop.report/1
    document."""
    with open(os.path.join(report_dir, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    groups = group(report)
    out_dir = os.path.join(report_dir, "drafts")
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):
        if _DRAFT_FILE.match(name) or name == "README.md":
            os.remove(os.path.join(out_dir, name))
    width = max(2, len(str(len(groups))))
    names, paths = [], []
    for i, g in enumerate(groups, 1):
        name = "%0*d-%s.md" % (width, i, slug(g["title"]))
        names.append(name)
        path = os.path.join(out_dir, name)
        write_atomic(path, render_draft(report, g, report_dir))
        paths.append(path)
    index = os.path.join(out_dir, "README.md")
    write_atomic(index, render_index(report, groups, names))
    paths.append(index)
    return paths


def main(argv=None):
    """Command line: ``python3 -m flagprop.reporting.drafts REPORT_DIR``. Prints the
    index's path and how many drafts were written, returns 0; prints the
    error and returns 2 when the report cannot be read or is not a flagprop
    report."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print("usage: python3 -m flagprop.reporting.drafts REPORT_DIR  (writes REPORT_DIR/drafts/ from report.json)")
        return 0 if args and args[0] in ("-h", "--help") else 2
    try:
        paths = write(args[0])
    except (OSError, ValueError) as e:
        print("flagprop.reporting.drafts: %s" % e, file=sys.stderr)
        return 2
    print("%s (%d draft(s))" % (paths[-1], len(paths) - 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
