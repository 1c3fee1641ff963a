"""flagprop's verdicts: every property's judgement, written once.

Each function here is pure: it takes the observations that
``flagprop.engine.session`` (P1-P4) and ``flagprop.engine.ops`` (P5, P6) record and returns
a verdict, a dict with at least ``pass`` (bool) and ``reason`` (one line).
The C++ suites, the tests and the standalone reproducers all call these same
functions, so a reproducer can never judge a case differently from the suite
that found it. Nothing here imports the code under test; only the P5 / P6
judgement needs torch (for the tensors it compares). The facts it judges
with (storage, bits, what an exception says) are ``flagprop.engine.facts``',
which the engine reads too.

The rules are documented in docs/design.md ("Verdicts").
"""

import math

from ..engine.facts import bits, control_rejects, overlap, same_bits, same_layout_meta, storage_of

# --------------------------------------------------------------------------
# P1 install status
# --------------------------------------------------------------------------

#: Log levels a user sees by default.
VISIBLE_LEVELS = ("WARNING", "ERROR", "CRITICAL")


def reported(call, component):
    """Whether the installer call ``call`` (``observe.call_installer``)
    reported ``component`` skipped: its status API names the component (or
    ``*`` / ``all``) with anything but ``"active"``; without a status API, a
    warning that installer code issued in a category Python shows by default,
    or a WARNING+ log record emitted from installer code."""
    status = call.get("status") or {}
    if status:
        return any(k in status and status[k] != "active" for k in (component, "*", "all"))
    if any(w.get("from_installer") and w.get("visible") for w in call.get("warnings", ())):
        return True
    return any(r.get("from_installer") and r.get("level") in VISIBLE_LEVELS for r in call.get("logs", ()))


def replaced_properly(facts):
    """Whether a changed component is a proper wrapper: marked, and
    ``__wrapped__`` is the object it replaced (or it did not exist before,
    e.g. a helper the installer supplies)."""
    supplied = not facts["present_before"] and facts["present_after"]
    return bool(facts["markers"]) and (facts["wrapped_is_original"] or supplied)


def component_class(name, facts, call, gates_open, claimed):
    """The P1 class of one component after one install.

    ``facts`` is ``observe.components_after(...)[name]``; ``claimed`` says
    whether the installer version under test has this component at all.
    Classes: ``active``, ``broken-wrap`` (changed without a marker or without
    ``__wrapped__`` being the original), ``not-applicable`` (unchanged and the
    installer does not have it), ``reported-skip``, ``gated-off`` (unchanged,
    gates closed), ``silent-skip``."""
    if facts["changed"]:
        return "active" if replaced_properly(facts) else "broken-wrap"
    if not claimed:
        return "not-applicable"
    if reported(call, name):
        return "reported-skip"
    if not gates_open:
        return "gated-off"
    return "silent-skip"


def _broken_why(name, facts):
    if not facts["markers"]:
        return name + " replaced without a _torch_fl_ marker"
    if not facts["has_wrapped"]:
        return name + " replaced without __wrapped__"
    return name + " has __wrapped__ that is not the original"


def _exception_line(e):
    return "%s at %s:%d (%s)" % (e["type"], e["file"], e["line"], e["message"])


def _overall(classes, raised, gates_open):
    counts = {}
    for c in classes.values():
        counts[c] = counts.get(c, 0) + 1
    active, broken, silent = counts.get("active", 0), counts.get("broken-wrap", 0), counts.get("silent-skip", 0)
    applicable = len(classes) - counts.get("not-applicable", 0)
    if raised:
        return "raised"
    if not gates_open and (active or broken):
        return "outside-gates"
    if broken:
        return "broken-wrap"
    if active and silent:
        return "partial"
    if silent:
        return "silent-skip"
    if applicable and active == applicable:
        return "active"
    if active:
        return "partial-reported"
    if counts.get("reported-skip"):
        return "reported-skip"
    return "gated-off"


def install_status(obs, gates_open, index=0):
    """P1: the verdict on install number ``index`` of ``obs``
    (``session.install_case``).

    Returns ``{"pass", "install", "components", "reason"}``: ``components``
    maps each component to its class (``component_class``); ``install`` is the
    overall class: ``active``, ``partial-reported``, ``reported-skip``,
    ``gated-off`` (all pass) or ``raised`` (an exception escaped the
    installer: device init would fail), ``outside-gates`` (something changed
    although the gates are closed), ``broken-wrap``, ``partial`` (some active,
    the rest silent), ``silent-skip`` (all fail). Components the installer
    version does not claim (``obs["claims"]``) are ``not-applicable``."""
    call = obs["calls"][index]
    comps = obs["components"][index]
    claims = obs.get("claims")
    classes = {
        name: component_class(name, facts, call, gates_open, claims is None or name in claims)
        for name, facts in comps.items()
    }
    raised = call["raised"]
    install = _overall(classes, raised, gates_open)
    ok = install in ("active", "partial-reported", "reported-skip", "gated-off")
    if ok:
        reason = install
    elif install == "raised":
        reason = "raised: the installer let %s escape (device init would fail)" % raised
    elif install == "outside-gates":
        changed = sum(1 for c in classes.values() if c in ("active", "broken-wrap"))
        reason = "outside-gates: the installer changed %d component(s) although its gates are closed for this case" % changed
    elif install == "broken-wrap":
        name = next(n for n, c in classes.items() if c == "broken-wrap")
        reason = "broken-wrap: " + _broken_why(name, comps[name])
    else:
        silent = [n for n, c in classes.items() if c == "silent-skip"]
        active = sum(1 for c in classes.values() if c == "active")
        reason = "%s: %s not installed and nothing reported (no warning, log record or status)" % (
            install, ", ".join(silent))
        if active:
            reason += "; %d other component(s) active" % active
        # The last exception before the installer gave up is the likeliest cause.
        if call["exceptions"]:
            reason += "; caught inside the installer: " + _exception_line(call["exceptions"][-1])
        if call.get("trace_lost"):
            reason += "; the installer replaced the trace function, so exceptions may be missing"
        if call["returned_normally"]:
            reason += "; the installer returned normally"
    return {"pass": ok, "install": install, "components": classes, "reason": reason}


def install_evidence(obs, verdict, index=0):
    """What a P1 finding shows: the published facts (helper present,
    exceptions caught with file:line, returned normally, components unchanged,
    markers) and the raw reports (warnings, log records, status)."""
    call = obs["calls"][index]
    comps = obs["components"][index]
    return {
        "install": verdict["install"],
        "components": verdict["components"],
        "claims": obs.get("claims"),
        "helper": obs["helper"],
        "exceptions_caught": list(call["exceptions"]) if call["returned_normally"] else [],
        "exceptions_seen": list(call["exceptions"]),
        "returned_normally": call["returned_normally"],
        "raised": call["raised"],
        "unchanged": {n: not f["changed"] for n, f in comps.items()},
        "markers": {n: f["markers"] for n, f in comps.items()},
        "warnings": call["warnings"],
        "logs": call["logs"],
        "status": call["status"],
        "trace_lost": bool(call.get("trace_lost")),
        "witness": obs.get("witness", {}),
    }


# --------------------------------------------------------------------------
# P2 idempotence
# --------------------------------------------------------------------------


def idempotence(obs, gates_open, reports_once):
    """P2 on a two-install observation (``session.install_case(..., 2)``):
    the second install leaves every component the same object, no
    ``__wrapped__`` chain is deeper than one, a reported skip is reported
    again (unless the installer documents reporting once per process:
    ``reports_once``), and the second install does not raise when the first
    did not. Returns ``{"pass", "reason"}``."""
    ids1, ids2 = obs["identities"]
    second = obs["components"][1]
    for name in ids1:
        if ids2[name] != ids1[name]:
            return {"pass": False, "reason": "re-install replaced %s (a different object after the second call)" % name}
        if second[name]["chain_depth"] > 1:
            return {"pass": False, "reason": "%s has a __wrapped__ chain %d deep after two installs"
                    % (name, second[name]["chain_depth"])}
    v1 = install_status(obs, gates_open, 0)
    v2 = install_status(obs, gates_open, 1)
    if not reports_once and v1["install"] == "reported-skip" and v2["install"] != "reported-skip":
        return {"pass": False, "reason": "the first install reported a skip, the second was %s "
                "(a repeated install must stay skipped and report again)" % v2["install"]}
    raised1, raised2 = obs["calls"][0]["raised"], obs["calls"][1]["raised"]
    if raised2 and not raised1:
        return {"pass": False, "reason": "the second install raised: " + raised2}
    return {"pass": True, "reason": v2["install"]}


# --------------------------------------------------------------------------
# P3 stock fallback
# --------------------------------------------------------------------------


def stock_fallback(case, obs):
    """P3 on a launch sequence (``session.launch_case``): every launch of the
    patched entry raises when the stock one raises, writes bitwise the same
    output, returns the same (kernel type, constexprs) and launches the same
    grid; a launch the fast path cannot express (keyword arguments beyond
    grid / warmup, a partial argument list, a callable grid, an entry with
    tuner / heuristic constexprs, launch hooks or a flagtune tuner, a cache
    miss) enters the stock ``run`` (witnessed). Returns ``{"pass", "reason"}``
    and ``launch`` (the index of the first bad launch)."""
    mock = case["mock"]
    case_needs_stock = bool(mock.get("wrappers")) or bool(mock.get("flagtune_tuner"))
    for i, l in enumerate(obs["launches"]):
        entry_needs_stock = l.get("entry_needs_stock", case_needs_stock)  # a real FlagGems says which kernel it built
        at = "launch %d (%s)" % (i, l["kind"])
        ra, rb = l["raised_a"], l["raised_b"]

        def bad(why):
            return {"pass": False, "launch": i, "reason": at + ": " + why}

        if bool(ra) != bool(rb):
            return bad("patched raised '%s', stock raised '%s'" % (ra, rb))
        if not l["equal"]:
            return bad("result differs from the stock path (patched %r, stock %r)" % (l["a_out"], l["b_out"]))
        if not ra and not l.get("return_equal", True):
            return bad("run returned %s, the stock path returned %s" % (l.get("return_a"), l.get("return_b")))
        if not ra and not l.get("grid_equal", True):
            return bad("launched with grid %s, the stock path with %s" % (l.get("grid_a"), l.get("grid_b")))
        must_stock = l["kind"] != "positional" or entry_needs_stock or l["cache_grew"]
        if must_stock and not ra and l["stock_calls"] < 1:
            return bad("the fast path cannot express this launch but the stock run was not entered")
    return {"pass": True, "reason": "all launches matched"}


# --------------------------------------------------------------------------
# P4 key equivalence
# --------------------------------------------------------------------------


def key_equivalence(obs):
    """P4 on a key observation (``session.key_case``): after a warm-up key,
    the fast key equals the stock key (and hashes alike), and the installed
    descriptor helper and memos answer as the originals do. Returns
    ``{"pass", "reason"}``."""
    if not obs["equal"]:
        why = obs["raised"] or "fast key %s != stock key %s" % (obs["fast"], obs["stock"])
        return {"pass": False, "reason": why}
    if obs.get("memo_mismatches"):
        return {"pass": False, "reason": obs["memo_mismatches"][0]}
    return {"pass": True, "reason": "keys, helper and memos equal"}


# --------------------------------------------------------------------------
# P5 numerics and P6 aliasing / metadata
# --------------------------------------------------------------------------

#: rtol per floating dtype: FlagGems' own accuracy-test figures (its
#: tests/accuracy_utils.py, RESOLUTION).
RESOLUTION = {"float16": 1e-3, "float32": 1.3e-6, "bfloat16": 0.016, "float64": 1e-7}
FLOATING = ("float16", "float32", "bfloat16", "float64")
POINTWISE_ATOL = 1e-4

#: Dtypes whose CPU ATen kernels compute in the dtype itself (or round
#: intermediates to it): LibTorch's own bfloat16 ``gelu``, ``_log_softmax``,
#: ``native_layer_norm`` and float16 ``sum`` on the CPU differ from the
#: float64 answer rounded to the dtype by more than its RESOLUTION on some
#: inputs, and ``native_layer_norm``'s CPU kernel gives float32 statistics
#: where its meta kernel says bfloat16.
HALF_PRECISION = ("float16", "bfloat16")


def judging_for(judging, dtype):
    """The judging spec a run in ``dtype`` uses: the catalog entry's
    ``judging``, with ``reference`` "either" in a HALF_PRECISION dtype (an
    output is within the contract when it is close to CPU ATen in float64 or
    to CPU ATen in the run's own dtype, and its metadata may be the meta
    kernel's or the CPU kernel's): PyTorch's own CPU kernel in that dtype is
    an answer PyTorch gives, so an op as close to it is no finding. Without
    it, stock ATen judged against itself failed in both dtypes."""
    if dtype in HALF_PRECISION and judging.get("reference") != "either":
        return dict(judging, reference="either")
    return judging


def _norm_dim(d, rank):
    r = max(rank, 1)
    return (d % r + r) % r


def tolerance(rule, dtype, out_dtype, call, out_shape=None):
    """(rtol, atol) for an output of dtype ``out_dtype`` of an op run in
    ``dtype`` on ``call`` (its layouts and arguments), by the catalog entry's
    tolerance ``rule``:

    * ``exact``: (0, 0).
    * ``pointwise``: rtol = RESOLUTION of the run's dtype (of the output's
      when the run is integral), atol 1e-4.
    * ``reduction`` / ``scan``: like pointwise, but atol 1e-4 * sqrt(n) for n
      elements reduced into one output element (``dims_arg``: the argument
      holding the dim list, or ``dim_arg``: the one dim a scan runs along):
      rounding errors of an accumulation grow like sqrt(n) for N(0, 1) inputs,
      and FlagGems' own bound linear in n would hide a dropped element. To
      that, per output element, ``accumulation_bound`` adds the worst-case
      rounding error of a float32 sum of those n elements in any order
      (``_judge_pass``): inputs of one sign (an expanded tensor repeats one
      value n times) accumulate their rounding errors linearly, not like
      sqrt(n).
    * ``normalization``: rtol max(RESOLUTION, 1e-5), atol 1e-4.
    * ``schema`` (entries derived from a schema, which says nothing of what
      the op reduces): like pointwise, but atol 1e-4 * sqrt(n) with n the
      largest input's elements per element of the output (``out_shape``),
      at least 1.

    Integral and bool outputs are always exact."""
    kind = rule["rule"]
    if out_dtype in ("complex64", "complex128") and kind != "exact":
        out_dtype = {"complex64": "float32", "complex128": "float64"}[out_dtype]  # per part
    if kind == "exact" or out_dtype not in FLOATING:
        return 0.0, 0.0
    rtol = RESOLUTION[dtype if dtype in FLOATING else out_dtype]
    if kind == "pointwise":
        return rtol, POINTWISE_ATOL
    if kind == "normalization":
        return max(rtol, 1e-5), POINTWISE_ATOL
    if kind in ACCUMULATING:
        return rtol, POINTWISE_ATOL * math.sqrt(max(_accumulated(rule, call, out_shape), 1))
    raise ValueError("unknown tolerance rule %r" % kind)


#: Tolerance rules of ops that may accumulate (sums, means, scans; schema-
#: derived entries that have fewer output than input elements, e.g.
#: ``sum.default``, ``mm``): their reference carries the op on |inputs|
#: (``ops.reference``'s ``magnitude``).
ACCUMULATING = ("reduction", "scan", "schema")


def _accumulated(rule, call, out_shape=None):
    """n, the input elements one output element accumulates, by tolerance
    ``rule``: ``reduction``, the product of the reduced dims of the first
    input (``dims_arg``); ``scan``, the length of its scanned dim
    (``dim_arg``); ``schema``, the largest input's elements per element of
    the output (``out_shape``). A float (schema) or int, at least 0."""
    if rule["rule"] == "schema":
        largest = max([_numel(t["shape"]) for t in call["tensors"]] or [1])
        return largest / max(_numel(out_shape or []), 1)
    shape = call["tensors"][0]["shape"] if call["tensors"] else []
    if rule["rule"] == "reduction":
        dims = _argument(call, rule["dims_arg"], "dim")
        if dims is None or dims == []:  # ATen reduces every dim
            return _numel(shape)
        n = 1
        for d in (dims if isinstance(dims, list) else [dims]):
            if shape:
                n *= shape[_norm_dim(d, len(shape))]
        return n
    d = _argument(call, rule["dim_arg"], "dim")
    return shape[_norm_dim(d, len(shape))] if shape and d is not None else 1


def _argument(call, position, name):
    """Argument ``position`` of ``call``, or keyword ``name`` where the call
    passes fewer positional arguments (OpInfo's samples pass ``dim`` by
    keyword); None when it passes neither (the schema's default)."""
    args = call.get("args", [])
    if position < len(args):
        return args[position]
    return call.get("kwargs", {}).get(name)


def accumulation_bound(rule, dtype, call, out_shape=None):
    """gamma_(n-1) = (n-1) u / (1 - (n-1) u): the factor that, times the sum
    of |x| of the n elements one output element accumulates, bounds the
    rounding error of their sum computed in any order (Higham, *Accuracy and
    Stability of Numerical Algorithms*, 2nd ed., sections 3.1 and 4.2; for
    a product of matrices, times |A| |B|, the op on |inputs|). u is the unit
    roundoff of the accumulation: 2^-24 (float32; float16 and bfloat16
    kernels accumulate in float32 too), 2^-53 for float64 runs. n from
    ``_accumulated``; 0.0 for rules that do not accumulate or n <= 1."""
    if rule["rule"] not in ACCUMULATING:
        return 0.0
    n = int(_accumulated(rule, call, out_shape))
    u = 2.0 ** -53 if dtype == "float64" else 2.0 ** -24
    m = max(n - 1, 0) * u
    return m / (1 - m) if m < 1 else float("inf")


def _numel(shape):
    n = 1
    for x in shape:
        n *= x
    return n


def _torch():
    import torch

    return torch


def _index_text(i, shape):
    out = []
    for s in reversed(list(shape)):
        out.append(i % s if s else 0)
        i = i // s if s else 0
    return list(reversed(out))


def _num(v):
    return "%.9g" % v


def _mismatched(a, e, rtol, atol):
    """Per element of flat float64 tensors ``a`` and ``e``: whether they
    differ by compare_close's rule (NaN against a number, infinities other
    than equal, |a - e| > atol + rtol * |e|)."""
    an, en = a.isnan(), e.isnan()
    infs = a.isinf() | e.isinf()
    finite = ~(an | en | infs)
    return (an ^ en) | (infs & (a != e) & ~an) | (finite & ((a - e).abs() > e.abs() * rtol + atol))


def settled(expected, other, actual, rtol, atol):
    """``expected`` with its elements where ``other`` (the same reference
    computed at another precision) differs from it by compare_close's rule
    replaced by ``actual``'s: an element whose value CPU ATen's own answer
    changes on between two compute precisions is not settled at them (a sign
    of x - mean next to 0 times an infinite weight), so it cannot be a
    finding. Returns (tensor, how many were replaced)."""
    torch = _torch()
    if list(other.shape) != list(expected.shape) or expected.numel() == 0 or expected.is_complex():
        return expected, 0
    per = atol.double().reshape(-1) if isinstance(atol, torch.Tensor) else atol
    ill = _mismatched(other.double().reshape(-1), expected.double().reshape(-1), rtol, per).reshape(expected.shape)
    n = int(ill.sum())
    return (torch.where(ill, actual.to(expected.dtype), expected), n) if n else (expected, 0)


def compare_close(actual, expected, rtol, atol):
    """'' when ``actual`` matches ``expected`` (CPU tensors): the same shape,
    NaN in the same places, infinities equal, and |a - e| <= atol + rtol * |e|
    elsewhere; else the first finding, one line. ``atol``: a number, or a
    float64 tensor of ``expected``'s shape (one atol per element)."""
    if list(actual.shape) != list(expected.shape):
        return "shape %s, expected %s" % (list(actual.shape), list(expected.shape))
    if actual.numel() == 0 or (actual.dtype == expected.dtype and same_bits(actual, expected)):
        return ""
    if actual.is_complex() or expected.is_complex():  # real and imaginary parts, each within the tolerance
        torch = _torch()

        def as_real(t):
            return torch.view_as_real(t.to(torch.complex128) if t.is_complex() else t.double().to(torch.complex128))

        return compare_close(as_real(actual), as_real(expected), rtol, atol)
    a = actual.double().reshape(-1)
    e = expected.double().reshape(-1)
    torch = _torch()
    # torch.allclose with equal_nan is the same rule in one call (the common case): NaN where
    # the other has NaN, infinities only equal to themselves, |a - e| <= atol + rtol * |e|.
    per_element = isinstance(atol, torch.Tensor)
    if per_element:
        atol = atol.double().reshape(-1)
    elif torch.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True):
        return ""
    bad = _mismatched(a, e, rtol, atol)
    finite = ~(a.isnan() | e.isnan() | a.isinf() | e.isinf())
    diff = (a - e).abs()
    count = int(bad.sum())
    if count == 0:
        return ""
    i = int(bad.nonzero()[0, 0])
    worst = float(diff[finite].max()) if bool(finite.any()) else 0.0
    atol_text = ("%g (at that element, with the accumulation's rounding bound)" % float(atol[i])) if per_element \
        else "%g" % atol
    return "%d of %d elements beyond rtol %g atol %s; first at %s: actual %s, expected %s (max abs error %s)" % (
        count, a.numel(), rtol, atol_text, _index_text(i, actual.shape), _num(float(a[i])), _num(float(e[i])),
        _num(worst))


def _selected(inp, idx, dim, keepdim, unordered=False):
    """The elements of ``inp`` that indices ``idx`` select along ``dim``
    (None: over the flattened input), as a flat tensor; with ``unordered``,
    sorted along ``dim`` first (the selection as a multiset per row)."""
    torch = _torch()
    if dim is None:
        return inp.reshape(-1).index_select(0, idx.reshape(-1).long())
    if inp.dim() == 0:
        return inp.reshape(1).index_select(0, idx.reshape(-1).long())
    d = _norm_dim(dim, inp.dim())
    i = idx.long()
    if not keepdim and i.dim() < inp.dim():
        i = i.unsqueeze(d)
    got = torch.gather(inp, d, i)
    return _sorted_along(got, d).reshape(-1) if unordered else got.reshape(-1)


def _sorted_along(t, dim):
    """``t`` sorted along ``dim`` (NaN last), for comparing as multisets;
    ``t`` itself when it has no elements or no dims."""
    torch = _torch()
    if t.dim() == 0 or t.numel() == 0:
        return t
    if t.dtype == torch.bool:
        return torch.sort(t.to(torch.uint8), dim=dim).values.to(torch.bool)
    return torch.sort(t, dim=dim).values


def compare_unordered(actual, expected, dim, rtol, atol):
    """'' when ``actual`` holds the same values as ``expected`` along ``dim``
    in any order (each row compared as a multiset, within ``rtol`` /
    ``atol``): the judgement of ``topk(sorted=False)``'s values. Else the
    first finding, one line."""
    if list(actual.shape) != list(expected.shape):
        return "shape %s, expected %s" % (list(actual.shape), list(expected.shape))
    d = _norm_dim(dim, actual.dim()) if actual.dim() else 0
    f = compare_close(_sorted_along(actual, d), _sorted_along(expected, d), rtol, atol)
    return f and f + " (compared as a multiset along dim %d: the order is free)" % d


def compare_indices(actual, expected, inp, dim, keepdim, unordered=False):
    """'' when indices ``actual`` select, along ``dim`` of ``inp``, values
    equal to those ``expected`` selects (-0.0 equal to 0.0, any NaN to any
    NaN; with ``unordered``, the same multiset of values per row) do:
    the judgement for outputs that may legally differ among ties (max.dim,
    an unstable sort, topk; docs/aten-freedom.md). Else the first finding,
    one line."""
    torch = _torch()
    if list(actual.shape) != list(expected.shape):
        return "shape %s, expected %s" % (list(actual.shape), list(expected.shape))
    if actual.numel() == 0 or torch.equal(actual.long(), expected.long()):
        return ""
    size = inp.numel() if dim is None else (1 if inp.dim() == 0 else inp.shape[_norm_dim(dim, inp.dim())])
    a = actual.long().reshape(-1)
    out_of_range = (a < 0) | (a >= size)
    if bool(out_of_range.any()):
        i = int(out_of_range.nonzero()[0, 0])
        return "index %d at %s is out of range [0, %d)" % (int(a[i]), _index_text(i, actual.shape), size)
    got = _selected(inp, actual, dim, keepdim, unordered)
    want = _selected(inp, expected, dim, keepdim, unordered)
    both_nan = got.isnan() & want.isnan() if got.is_floating_point() else torch.zeros_like(got, dtype=torch.bool)
    # By value: -0.0 and 0.0 are equal values, so either is a right pick among ties.
    differ = (got != want) & ~both_nan
    if not bool(differ.any()):
        return ""
    i = int(differ.nonzero()[0, 0])
    return "%d of %d indices select other values; first at %s: index %d selects %s, ATen's index %d selects %s" % (
        int(differ.sum()), a.numel(), _index_text(i, actual.shape), int(a[i]), _num(float(got[i])),
        int(expected.reshape(-1)[i]), _num(float(want[i])))


def _rule_arg(call, rule, key, default=None):
    """The argument output rule ``rule`` names under ``key`` (``dim_arg``,
    ``keepdim_arg``, ...) in ``call``: by keyword where the rule names a
    keyword; else by position, else (the call passes it by keyword or not
    at all) by the name and default the rule records from the schema
    (``catalog::out::namedArgs``: topk's dim is -1 when left out); else
    ``default``."""
    index = rule.get(key)
    if isinstance(index, str):
        return (call.get("kwargs") or {}).get(index, default)
    args = call.get("args", [])
    if index is not None and index < len(args):
        return args[index]
    name = rule.get(key + "_name")
    kwargs = call.get("kwargs") or {}
    if name is not None and name in kwargs:
        return kwargs[name]
    return rule.get(key + "_default", default)


OVERLAP_REFUSAL = "more than one element of the written-to tensor refers to a single memory location"


def _refused_overlapping_write(rec, written):
    """The index of an input in ``written`` whose elements overlap (a dim of
    size > 1 with stride 0) when the op raised ATen's refusal to write such
    a tensor, else None. ``OVERLAP_REFUSAL`` is the message of ATen's
    ``at::assert_no_internal_overlap`` (TensorIterator and many in-place
    kernels): an in-place write to such a tensor is unsupported in ATen, so
    raising it is within ATen's contract even where the stock kernel writes
    anyway (LibTorch 1.13's CPU ``triu_`` does; its ``abs_`` refuses). A
    note then, not a finding."""
    if OVERLAP_REFUSAL in (rec.get("error") or ""):
        for j in sorted(written):
            snap = rec["inputs"][j] if j < len(rec["inputs"]) else {"shape": [], "strides": []}
            if any(st == 0 and n > 1 for n, st in zip(snap["shape"], snap["strides"])):
                return j
    return None


def _check_inputs(rec, where, aliasing, written=(), relaid=None):
    """Inputs unchanged (P6): metadata, or as ATen changes it (``relaid[j]``:
    [shape, strides, offset] after ATen's call, e.g. unsqueeze_); values and
    version counter but for the inputs in ``written`` (an in-place op's
    self)."""
    for j, snap in enumerate(rec["inputs"]):
        t = snap["tensor"]
        what = "%s: input %d" % (where, j)
        now = [list(t.shape), list(t.stride()), t.storage_offset()]
        moved = relaid[j] if relaid and j < len(relaid) else None
        if moved is not None:
            if not same_layout_meta(now, moved):
                aliasing.append("%s has sizes %s, strides %s, storage offset %d after the call; ATen's has %s, %s, %d" % (
                    what, now[0], now[1], now[2], moved[0], moved[1], moved[2]))
        elif not same_layout_meta(now, [snap["shape"], snap["strides"], snap["offset"]]):
            aliasing.append("%s metadata changed: sizes %s -> %s, strides %s -> %s, storage offset %d -> %d" % (
                what, snap["shape"], list(t.shape), snap["strides"], list(t.stride()), snap["offset"], t.storage_offset()))
        if j in written:
            continue
        if t._version != snap["version"]:
            aliasing.append("%s version counter %d -> %d (written in place)" % (what, snap["version"], t._version))
        before, now = snap["storage"], storage_of(t)
        nb, nn = (0 if before is None else before.numel()), (0 if now is None else now.numel())
        if nb != nn:
            aliasing.append("%s storage resized from %d to %d elements" % (what, nb, nn))
        elif before is not None:
            now_cpu = now.cpu()
            if not same_bits(before, now_cpu):
                at = int((bits(before) != bits(now_cpu)).nonzero()[0, 0])
                aliasing.append("%s values changed: storage element %d was %s, now %s" % (
                    what, at, _num(float(before[at].double())), _num(float(now_cpu[at].double()))))


def _check_alias(o, inputs, aten_aliases, mode, out, aliasing, fresh_ok, fresh):
    """An output shares storage with exactly the inputs ATen's output shares
    (``aten_aliases``: its views, in-place results and reshapes that could
    be views; CPU ATen's, or the stock path's where the target has a
    control), else it is fresh; an in-place op returns self itself.
    ``fresh_ok``: the op's schema returns a new tensor (no alias annotation
    on its returns), so fresh storage is within its contract even where
    ATen's output happens to be a view (CUDA's ``channel_shuffle`` with one
    group returns a view of its input): that goes to ``fresh``, a note, not
    to ``aliasing``."""
    for j, snap in enumerate(inputs):
        t = snap["tensor"]
        shares = overlap(o, t)
        if shares and j not in aten_aliases:
            aliasing.append("%s shares storage with input %d (no fresh storage)" % (out, j))
        elif not shares and j in aten_aliases and o.numel() and t.numel():
            if fresh_ok:
                fresh.append("%s is fresh storage where ATen's is a view of input %d; the schema returns a new "
                             "tensor, so either is within it" % (out, j))
            else:
                aliasing.append("%s does not share storage with input %d; ATen's output is a view of it" % (out, j))
    if mode == "inplace" and inputs:
        self_ = inputs[0]["tensor"]
        if not (o.data_ptr() == self_.data_ptr() and list(o.shape) == list(self_.shape)
                and list(o.stride()) == list(self_.stride())):
            aliasing.append("%s is not self (an in-place op returns the tensor it wrote)" % out)


def _compare_output(obs, case, judging, k, rule, snap, ex, want=None):
    """'' when output ``snap`` (a CPU copy) of call ``k`` is right by the
    entry's rule ``rule`` against CPU ATen's reference ``ex`` (or, given,
    against ``want``: another result of the same call, e.g. the control's,
    with ``ex``'s tolerance); else the finding, one line."""
    call = case["calls"][k]
    target = ex["values"] if want is None else want
    if list(snap.shape) != list(target.shape):  # (the control's shape may differ from CPU ATen's: lstsq's residuals)
        return "shape %s, expected %s" % (list(snap.shape), list(target.shape))
    # ATen's documented freedom (docs/aten-freedom.md): where the rule's
    # condition holds, the order along the dim is free (topk(sorted=False)),
    # or the index ATen gives is the contract (stable=True).
    unordered = "unordered_if_not" in rule and _rule_arg(call, rule, "unordered_if_not", True) is False
    exact_index = "exact_if" in rule and _rule_arg(call, rule, "exact_if") is True
    dim = _rule_arg(call, rule, "dim_arg", -1 if isinstance(rule.get("dim_arg"), str) else None)
    if rule.get("kind") == "indices" and not exact_index:
        inp = obs["cpu_inputs"][k][rule.get("input", 0)]
        keepdim = bool(_rule_arg(call, rule, "keepdim_arg", rule.get("keepdim", True)))
        return compare_indices(snap, target, inp, dim, keepdim, unordered)
    rtol, atol = tolerance(judging["tolerance"], case["dtype"], ex["dtype"], call, ex["shape"])
    if unordered:
        return compare_unordered(snap, target, -1 if dim is None else dim, rtol, atol)
    if "magnitude" in ex and rtol and list(ex["magnitude"].shape) == list(target.shape):
        # + the rounding bound of the accumulation, per output element
        atol = atol + accumulation_bound(judging["tolerance"], case["dtype"], call, ex["shape"]) * ex["magnitude"]
    f = compare_close(snap, target, rtol, atol)
    # An element CPU ATen answers otherwise computing in float32 (as CUDA's
    # and Triton's kernels compute float32, float16 and bfloat16 inputs) than
    # in float64 is not settled at that precision: no finding. Half-precision
    # runs carry the float32 answer (values_f32); a float32 run's is CPU
    # ATen's own in the run's dtype (same_dtype): native_layer_norm with an
    # infinite weight is -inf in float32 and +inf in float64.
    f32 = ex.get("values_f32")
    if f32 is None and case["dtype"] == "float32" and isinstance(ex.get("same_dtype"), _torch().Tensor):
        f32 = ex["same_dtype"]
    if f and want is None and f32 is not None:
        target, unsettled = settled(target, f32, snap, rtol, atol)
        if unsettled:
            f = compare_close(snap, target, rtol, atol)
            if not f:
                return ""
    if f and want is None and judging.get("reference") == "either" and "same_dtype" in ex:
        # Schema-derived entries: CPU ATen in float64 or in the run's own dtype.
        if not compare_close(snap, ex["same_dtype"], rtol, atol):
            return ""
        f += " (CPU ATen in %s differs from it as well)" % case["dtype"]
    return f


def _judge_against_control(obs, case, judging, k, i, rule, snap, ctl, out, numerics, notes):
    """Output ``i`` of call ``k`` against the control's (the same call
    through the device's stock path): equal within the entry's rule is no
    finding, whatever CPU ATen says (its difference is a note); so is a
    difference where the op agrees with CPU ATen and the stock path does
    not (ATen's kernels differ among themselves; a note). Any other
    difference is a finding whose reason says which side CPU ATen takes."""
    expected = obs["expected"][k]
    ex = expected[i] if i < len(expected) else None
    theirs = ctl["after"][i]
    if ex is None:  # CPU ATen has no such output: no tolerance rule to read; bitwise
        if not same_bits(snap, theirs):
            numerics.append("%s: differs from the stock path (bitwise; CPU ATen gives no such output)" % out)
        return
    f = _compare_output(obs, case, judging, k, rule, snap, ex, theirs)
    stock_vs_cpu = _compare_output(obs, case, judging, k, rule, theirs, ex)
    if not f:
        if stock_vs_cpu:
            notes.append("%s: the stock path differs from CPU ATen: %s" % (out, stock_vs_cpu))
        return
    # Against CPU ATen's float64 reference only: the run's-dtype answer
    # (which schema-derived entries otherwise also accept) would let a
    # low-precision kernel pass that the stock path shows wrong.
    op_vs_cpu = _compare_output(obs, case, dict(judging, reference="float64"), k, rule, snap, ex)
    if not op_vs_cpu:
        # The op gives what CPU ATen gives and the stock path does not: two
        # of ATen's own kernels differ (cuDNN's TF32 convolutions, the
        # shape of an auxiliary output such as native_batch_norm's saved
        # statistics in inference); the op follows ATen's reference, which
        # is no fault of the op. A note, never a finding.
        if stock_vs_cpu:
            notes.append("%s: the stock path differs from CPU ATen (%s), and the op agrees with CPU ATen" % (out, f))
        else:  # both within the tolerance of CPU ATen, not of each other
            notes.append("%s: within the tolerance of CPU ATen, as the stock path is, though not of the stock "
                         "path (%s)" % (out, f))
        return
    side = "CPU ATen sides with the stock path" if not stock_vs_cpu else "CPU ATen differs from both"
    numerics.append("%s: differs from the stock path: %s (%s)" % (out, f, side))


def _judge_pass(obs, case, judging, pas, tag, numerics, aliasing, notes, refusals, fresh):
    """P5 / P6 findings of one pass (unpatched or patched) over the calls:
    against the control (the same call through the device's stock path,
    docs/control.md) where the target has one and it returned, else against
    CPU ATen. ``notes`` gets what is information, not a finding: the stock
    path differing from CPU ATen, or having no kernel; ``refusals`` the
    calls that refused to write an overlapping input
    (``_refused_overlapping_write``), with or without a control; ``fresh``
    the outputs in fresh storage where ATen's happens to be a view though
    the schema returns a new tensor (``_check_alias``). Returns how many
    calls raised."""
    raised = 0
    for k in range(len(pas["calls"])):
        raised += _judge_call(obs, case, judging, pas, k, tag, numerics, aliasing, notes, refusals, fresh)
    # Earlier outputs unchanged by later calls (compared at the end).
    for k, rec in enumerate(pas["calls"][:-1]):
        for i, o in enumerate(rec["outputs"]):
            if i < len(rec["after"]) and not same_bits(rec["after"][i], o.cpu()):
                aliasing.append("call %d%s: output %d was changed by a later call" % (k, tag, i))
    return raised


def _judge_call(obs, case, judging, pas, k, tag, numerics, aliasing, notes, refusals, fresh):
    """P5 / P6 findings of call ``k`` of pass ``pas`` (``_judge_pass``, whose
    lists they go to): its inputs, then what it raised (``_judge_raised``)
    or each of its outputs (``_judge_output``). Returns 1 when the op raised
    on the call, else 0."""
    rec = pas["calls"][k]
    expected = obs["expected"][k]
    where = "call %d%s" % (k, tag)
    control = obs.get("control")
    ctl = control["calls"][k] if control else None
    if ctl is not None and ctl["error"]:  # no stock kernel (control_rejects discarded the rest)
        notes.append("call %d: no stock kernel on this device (%s); judged against CPU ATen"
                     % (k, ctl["error"][:160]))
        ctl = None
    # Also when the op raised: it may have written first.
    relaid = obs["relaid"][k] if obs.get("relaid") else None
    # Inputs ATen writes too (an in-place op's self; un-annotated writes
    # such as native_batch_norm's running stats) may change.
    inplace = judging.get("mode", "functional") == "inplace"
    written = set(obs["writes"][k] if obs.get("writes") else ()) | ({0} if inplace else set())
    _check_inputs(rec, where, aliasing, written, relaid)
    if rec["error"]:
        _judge_raised(case, rec, ctl, expected, where, written, numerics, notes, refusals)
        return 1
    outs = rec["outputs"]
    for i, name in rec.get("subclass") or ():
        aliasing.append("%s: output %d is a %s, not a torch.Tensor (ATen returns plain tensors)" % (where, i, name))
    want = len(ctl["outputs"]) if ctl is not None else len(expected)
    if len(outs) != want:
        f = "%s: %d output(s), %s gives %d" % (where, len(outs), "the stock path" if ctl is not None else "ATen",
                                                 want)
        aliasing.append(f)
        numerics.append(f)
        return 0
    for i in range(len(outs)):
        _judge_output(obs, case, judging, pas, k, i, ctl, where, numerics, aliasing, notes, fresh)
    return 0


def _judge_raised(case, rec, ctl, expected, where, written, numerics, notes, refusals):
    """What the op raising on a call (``rec``) is: a refusal to write an
    overlapping input (``refusals``, a note), a finding where the stock path
    (``ctl``) or CPU ATen (``expected``) returns, or a note where CPU ATen
    raises in the run's dtype too."""
    refused = _refused_overlapping_write(rec, written)
    if refused is not None:
        refusals.append("%s: the op refused to write input %d, whose elements overlap, as ATen may" % (where, refused))
        return
    if ctl is not None:
        numerics.append("%s: the op raised %s; the stock path returns %d output(s)"
                        % (where, rec["error"], len(ctl["outputs"])))
        return
    if expected and "same_dtype_error" in expected[0]:
        # CPU ATen raises in the run's dtype too (it returns only in
        # float64): no evidence that the op must take this dtype.
        notes.append("%s: the op raised %s; so does CPU ATen in %s (%s)" % (
            where, rec["error"][:120], case["dtype"], expected[0]["same_dtype_error"][:120]))
        return
    numerics.append("%s: the op raised %s; CPU ATen returns %d output(s)" % (where, rec["error"], len(expected)))


def _judge_output(obs, case, judging, pas, k, i, ctl, where, numerics, aliasing, notes, fresh):
    """P5 / P6 findings of output ``i`` of call ``k`` of pass ``pas``: its
    metadata, device and storage (``aliasing``, ``fresh``), then its values
    against the control's output (``ctl``, where there is one) or CPU
    ATen's (``numerics``, ``notes``)."""
    rec = pas["calls"][k]
    o = rec["outputs"][i]
    expected = obs["expected"][k]
    ex = expected[i] if i < len(expected) else None
    out = "%s: output %d" % (where, i)
    _check_output_metadata(o, ex, ctl["outputs"][i] if ctl is not None else None, judging, out, aliasing)
    _check_output_device(rec, i, out, aliasing)
    _check_output_storage(pas, k, i, ex, ctl, judging, out, aliasing, fresh)
    outputs_rule = judging.get("outputs") or []
    rule = outputs_rule[i] if i < len(outputs_rule) else {"kind": "values"}
    snap = rec["after"][i]
    if ctl is not None:
        _judge_against_control(obs, case, judging, k, i, rule, snap, ctl, out, numerics, notes)
        return
    if ex is None:
        return
    f = _compare_output(obs, case, judging, k, rule, snap, ex)
    if f:
        numerics.append("%s: %s" % (out, f))


def _check_output_metadata(o, ex, c, judging, out, aliasing):
    """Output ``o`` has the dtype and shape of the control's output ``c``
    (where the target has a control), else of CPU ATen's reference ``ex``.
    With a control, CPU ATen's metadata counts too (two of ATen's kernels
    may differ); with ``judging``'s reference "either", so does the CPU
    kernel's where it differs from the meta kernel's (``cpu_dtype``,
    ``cpu_shape``)."""
    dtype = str(o.dtype).replace("torch.", "")
    either = judging.get("reference") == "either"  # the meta kernel's or the CPU kernel's metadata
    if c is not None:  # metadata as the device's stock kernel gives it
        # ... or as CPU ATen gives it: where the two of ATen's kernels
        # differ (native_batch_norm's saved statistics in inference),
        # following ATen's reference is no fault of the op.
        as_cpu_dtype = ex is not None and (dtype == ex["dtype"] or (either and dtype == ex.get("cpu_dtype")))
        as_cpu_shape = ex is not None and (list(o.shape) == ex["shape"] or (
            either and list(o.shape) == ex.get("cpu_shape")))
        if o.dtype != c.dtype and not as_cpu_dtype:
            aliasing.append("%s has dtype %s, the stock path gives %s" % (
                out, dtype, str(c.dtype).replace("torch.", "")))
        if list(o.shape) != list(c.shape) and not as_cpu_shape:
            aliasing.append("%s has shape %s, the stock path gives %s" % (out, list(o.shape), list(c.shape)))
    elif ex is not None:
        if dtype != ex["dtype"] and not (either and dtype == ex.get("cpu_dtype")):
            aliasing.append("%s has dtype %s, ATen gives %s" % (out, dtype, ex["dtype"]))
        if list(o.shape) != ex["shape"] and not (either and list(o.shape) == ex.get("cpu_shape")):
            aliasing.append("%s has shape %s, ATen gives %s" % (out, list(o.shape), ex["shape"]))


def _check_output_device(rec, i, out, aliasing):
    """Output ``i`` of call record ``rec`` is on the device of the call's
    first input, and its memory is device (or unified) memory of that
    device where the native runtime says what it is (``rec["native"]``)."""
    o = rec["outputs"][i]
    first_device = rec["inputs"][0]["tensor"].device if rec["inputs"] else None
    if first_device is not None and o.device != first_device:
        aliasing.append("%s is on %s, the inputs on %s" % (out, o.device, first_device))
    native = (rec.get("native") or [None] * len(rec["outputs"]))[i]
    if native is not None and (native["memory_type"] not in ("device", "unified")
                               or native["device"] != o.device.index):
        aliasing.append("%s: the %s runtime says its memory is %s on device %d; torch says %s" % (
            out, native["runtime"], native["memory_type"], native["device"], o.device))


def _check_output_storage(pas, k, i, ex, ctl, judging, out, aliasing, fresh):
    """Output ``i`` of call ``k`` of pass ``pas`` shares storage with the
    inputs the control's output (``ctl``) or CPU ATen's (``ex``) shares
    (``_check_alias``), with no earlier output of the call but those ATen's
    shares, and with no output of an earlier call."""
    rec = pas["calls"][k]
    o, outs = rec["outputs"][i], rec["outputs"]
    mode = judging.get("mode", "functional")
    # A schema-derived entry's "functional": no return carries an alias
    # annotation (catalog/schema_ops.cpp). Hand-written entries have no schema.
    fresh_ok = mode == "functional" and bool(judging.get("schema"))
    if ctl is not None:  # the inputs the stock path's output shares storage with, as it runs on this device
        aliases = [j for j, s in enumerate(ctl["inputs"]) if overlap(ctl["outputs"][i], s["tensor"])]
    else:
        aliases = (ex or {}).get("aliases", [])
    _check_alias(o, rec["inputs"], aliases, mode, out, aliasing, fresh_ok, fresh)
    for j in range(i):
        if overlap(o, outs[j]) and j not in ex.get("shares_outputs", []):
            aliasing.append("%s shares storage with output %d" % (out, j))
    for kk in range(k):
        for j, earlier in enumerate(pas["calls"][kk]["outputs"]):
            if overlap(o, earlier):
                aliasing.append("%s shares storage with output %d of call %d" % (out, j, kk))


def _patched_vs_unpatched(unpatched, patched, numerics):
    differ = False
    for k, (u, p) in enumerate(zip(unpatched["calls"], patched["calls"])):
        where = "call %d" % k
        if u["error"] != p["error"]:
            differ = True
            numerics.append("%s: unpatched %s, patched %s" % (
                where, "returned" if not u["error"] else "raised " + u["error"],
                "returned" if not p["error"] else "raised " + p["error"]))
            continue
        if len(u["after"]) != len(p["after"]):
            differ = True
            numerics.append("%s: patched returned %d output(s), unpatched %d" % (where, len(p["after"]), len(u["after"])))
        for i, (a, b) in enumerate(zip(p["after"], u["after"])):
            if same_bits(a, b):
                continue
            differ = True
            if a.dtype != b.dtype:
                f = "dtype %s, unpatched %s" % (a.dtype, b.dtype)
            elif a.shape != b.shape:
                f = "shape %s, unpatched %s" % (list(a.shape), list(b.shape))
            else:
                f = compare_close(a, b, 0.0, 0.0) or "bit patterns differ (e.g. NaN payload or the sign of zero)"
            numerics.append("%s: output %d: patched differs bitwise from unpatched: %s" % (where, i, f))
    return differ


def _nothing_judged(obs):
    """Why a case judged nothing, or '': the op raised on every call of every
    pass, and on each CPU ATen has no kernel in the run's dtype either (its
    call in that dtype raised; only its float64 call returned). Such a case
    is no evidence either way, whatever the op raised: a discard, counted as
    CPU ATen's rejection of the dtype (a run of only such cases is "not run
    in DTYPE"), never a held case."""
    expected = obs.get("expected") or []
    if not expected or not expected[0] or not obs["passes"]:
        return ""
    for pas in obs["passes"]:
        for k, rec in enumerate(pas["calls"]):
            ex = expected[k] if k < len(expected) else []
            if not rec["error"] or not ex or "same_dtype_error" not in ex[0]:
                return ""
    return "CPU ATen rejects call 0 in its dtype (the op raised too: nothing judged): %s" % (
        expected[0][0]["same_dtype_error"][:300])


def op_findings(obs, case, judging):
    """P5 and P6 on one op case (``ops.observe_case``).

    ``case`` is the case's JSON form (op, dtype, calls); ``judging`` the
    catalog entry's judging spec: ``tolerance`` (a rule for ``tolerance``) and
    ``outputs`` (per output: ``{"kind": "values"}``, the default, or
    ``{"kind": "indices", "input": i, "dim_arg": a, "keepdim_arg": b}`` for
    indices judged by the values they select).

    Returns ``{"numerics": [...], "aliasing": [...], "fast_path",
    "patched_vs_unpatched", "calls", "calls_raised"}``: the findings of P5
    (values within tolerance of the CPU ATen reference, NaN in the same
    places; the op raising where ATen returns; patched and unpatched bitwise
    equal when the installer is active) and of P6 (outputs with ATen's dtype,
    shape and the inputs' device, in fresh storage; inputs unchanged in values,
    sizes, strides, storage offset and version counter; earlier outputs
    unchanged by later calls). Both paths are judged when the installer is
    active: a fault on the unpatched path is as real as one on the patched
    path. Fresh storage is judged against the aliasing ATen shows; for a
    schema-derived entry of mode "functional" (no return carries an alias
    annotation), fresh storage where ATen's output happens to be a view is
    within the schema: a note, not a finding.

    Notes, information and never findings, where there are any:
    ``control`` (what the stock path did that CPU ATen does not),
    ``overlap_refusals`` (ATen's own refusal to write an overlapping input),
    ``fresh_where_aten_views`` (the rule above)."""
    rejected = control_rejects(obs)
    if rejected:  # the sample is invalid on this device: no finding either way
        return {"discard": "the stock path rejects call %d: %s" % rejected}
    unjudged = _nothing_judged(obs)
    if unjudged:
        return {"discard": unjudged}
    numerics, aliasing, notes, refusals, fresh = [], [], [], [], []
    passes = obs["passes"]
    active = obs["fast_path"] == "active"
    raised = 0
    for pas in passes:
        tag = " (%s)" % pas["name"] if active else ""
        raised += _judge_pass(obs, case, judging, pas, tag, numerics, aliasing, notes, refusals, fresh)
    out = {"numerics": numerics, "aliasing": aliasing, "fast_path": obs["fast_path"], "calls_raised": raised}
    if obs.get("control") is not None:
        out["control"] = sorted(set(notes))[:10]  # what the stock path did that CPU ATen does not
    if refusals:
        out["overlap_refusals"] = sorted(set(refusals))[:10]
    if fresh:
        out["fresh_where_aten_views"] = sorted(set(fresh))[:10]
    if active:
        differ = _patched_vs_unpatched(passes[0], passes[1], numerics)
        out["patched_vs_unpatched"] = "differ" if differ else "equal"
    elif obs["fast_path"] == "inactive":
        out["patched_vs_unpatched"] = "not compared: the installer did not install its fast path (see P1)"
        out["install"] = obs.get("install")
    else:
        out["patched_vs_unpatched"] = "not compared: the target has no installer"
    judged = passes[-1]
    calls = []
    for k, rec in enumerate(judged["calls"]):
        c = {"expected": [{"dtype": e["dtype"], "shape": e["shape"]} for e in obs["expected"][k]],
             "actual": [{"dtype": str(o.dtype).replace("torch.", ""), "shape": list(o.shape),
                         "strides": list(o.stride()), "device": str(o.device)} for o in rec["outputs"]],
             "metadata_from": obs["expected"][k][0]["source"] if obs["expected"][k] else "meta"}
        if rec["error"]:
            c["error"] = rec["error"]
        calls.append(c)
    out["calls"] = calls
    return out


def shapeless(message):
    """``message`` with numbers as ``#`` and every shape or tuple in it
    (``torch.Size([2, 3])``, ``(2,)``, ``[4]``) as ``(…)``: one check that
    fails on several shapes is one kind of failure."""
    import re

    message = re.sub(r"torch\.Size\(", "(", message)
    message = re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", message)
    while True:
        collapsed = re.sub(r"\([^()\[\]]*\)|\[[^()\[\]]*\]", "(\u2026)", message)
        collapsed = collapsed.replace("((\u2026))", "(\u2026)")
        if collapsed == message:
            return collapsed
        message = collapsed


def finding_kind(text):
    """The class of one P5 / P6 finding, for telling failures apart: the
    exception type and message (numbers and shapes dropped: ``shapeless``)
    for a raise, else what kind of finding it is (values, shape, dtype, NaN,
    aliasing...)."""
    import re

    text = re.sub(r"^call \d+( \([a-z]+\))?: ", "", text)
    raised = re.search(r"the op raised ([A-Za-z_.]+): ?(.*?); (CPU ATen|the stock path)", text)
    if raised:
        return "raised %s: %s" % (raised.group(1), shapeless(raised.group(2))[:80])
    for needle, kind in (("device context was lost", "lost device"), ("beyond rtol", "values"),
                         ("select other values", "indices"), ("out of range", "indices"),
                         ("has dtype", "dtype"), ("has shape", "shape"), ("shape [", "shape"),
                         ("shares storage with input", "aliases an input"),
                         ("shares storage with output", "aliases an output"),
                         ("does not share storage", "not a view"), ("is not self", "inplace result"),
                         ("values changed", "writes an input"), ("version counter", "writes an input"),
                         ("metadata changed", "relayouts an input"), ("changed by a later call", "reuses outputs"),
                         ("output(s), ATen gives", "output count"), ("differs bitwise", "patched differs")):
        if needle in text:
            return kind
    return re.sub(r"-?\d+", "#", text)[:80]


# The input classes a values finding is told apart by, the first that applies:
# a fault on a layout and one on special values are two findings. Layouts
# come first: a layout fault's case keeps its layout when specials happen to
# be present too, while a specials fault's case shrinks to a contiguous one.
_INPUT_CLASSES = (("zero-size", lambda t: 0 in (t.get("shape") or [])),
                  ("storage offset", lambda t: "offset" in t.get("how", "") or bool(t.get("offset"))),
                  ("expanded", lambda t: "expanded" in t.get("how", "")),
                  ("permuted", lambda t: "permuted" in t.get("how", "")),
                  ("sliced", lambda t: "sliced" in t.get("how", "")),
                  ("specials", lambda t: bool(t.get("specials"))))


def input_class(case, k):
    """What call ``k`` of op case ``case`` fed the op, as one class: the
    first of zero-size, storage offset, expanded, permuted, sliced, special
    values present that any of its tensors has, else contiguous (also for a
    case or call it cannot read)."""
    try:
        tensors = case["calls"][k].get("tensors") or []
    except (KeyError, IndexError, TypeError, AttributeError):
        return "contiguous"
    for name, has in _INPUT_CLASSES:
        if any(isinstance(t, dict) and has(t) for t in tensors):
            return name
    return "contiguous"


def op_verdict(findings, prop, case=None):
    """P5 (``prop`` "P5": the numerics findings) or P6 ("P6": aliasing) of
    ``op_findings``: ``{"pass", "reason", "kinds"}``; the reason is the first
    finding and how many more there are, ``kinds`` the ``finding_kind`` of
    each finding, a values finding also by the ``input_class`` of its call
    (``"values (specials)"``) when ``case`` is given, so that two faults of
    one op on different inputs are two distinct failures."""
    import re

    f = findings["numerics" if prop == "P5" else "aliasing"]
    if not f:
        return {"pass": True, "reason": "held"}
    why = f[0] + (" (and %d more)" % (len(f) - 1) if len(f) > 1 else "")
    kinds = set()
    for x in f:
        kind = finding_kind(x)
        at = re.match(r"call (\d+)", x)
        if case is not None and kind in ("values", "indices") and at:
            kind = "%s (%s)" % (kind, input_class(case, int(at.group(1))))
        kinds.add(kind)
    return {"pass": False, "reason": why, "kinds": sorted(kinds)}


# --------------------------------------------------------------------------
# P8 fast-path hits
# --------------------------------------------------------------------------


def hit_totals(kernels):
    """{run, run_stock, fast} summed over the kernels of a P8 observation
    (a list of {name, run, run_stock, key, key_stock})."""
    run = sum(k["run"] for k in kernels)
    stock = sum(k["run_stock"] for k in kernels)
    return {"run": run, "run_stock": stock, "fast": max(run - stock, 0)}


def fast_path_hits(obs):
    """P8 on ``hits.observe_hits``: when the installer's fast path is in
    place, the op's LibEntry launches after warm-up go through it (at least
    one does not fall back to the stock run); a patch that is installed but
    never taken fails. Without a fast path the counts say what the stock path
    was entered. Returns ``{"pass", "reason"}``."""
    t = hit_totals(obs["kernels"])
    per_kernel = ", ".join("%s %d/%d" % (k["name"], k["run"] - k["run_stock"], k["run"]) for k in obs["kernels"])
    # Nothing to count is no pass: such a case is not judged ("judged": False), and a run of no judged case skips.
    if obs.get("error"):
        return {"pass": True, "judged": False, "reason": "not counted: the op raised %s (P5 judges that)" % obs["error"]}
    if obs["fast_path"] != "active":
        return {"pass": True, "judged": False,
                "reason": "not judged: fast path %s: the stock run was entered %d time(s), the stock key %d time(s)"
                % (obs["fast_path"], t["run_stock"], sum(k["key_stock"] for k in obs["kernels"]))}
    if t["run"] == 0:
        return {"pass": True, "judged": False, "reason": "not judged: the op launched nothing through LibEntry"}
    if t["fast"] == 0:
        return {"pass": False, "reason": "the fast path is installed but none of the op's %d LibEntry launch(es) after "
                "warm-up took it: every one entered the stock run (fast / all by kernel: %s)" % (t["run"], per_kernel)}
    return {"pass": True, "reason": "fast run %d of %d launch(es) (%s)" % (t["fast"], t["run"], per_kernel)}


# --------------------------------------------------------------------------
# P7 stream semantics
# --------------------------------------------------------------------------

_STREAM_FACTS = {
    "ordered_after_earlier_work": "the op's work was not ordered after earlier work on the current stream",
    "correct_after_syncing_the_stream": "the op's results were not ready after synchronising the current stream alone",
    "default_stream_untouched": "the op used the default stream although another stream was current",
    "switch_follows_the_stream": "after a switch of the current stream, the cached kernel was launched on the old one "
                                 "(a stale stream)",
}


def stream_output_differs(actual, expected, judging, dtype, call):
    """Whether ``actual``, an output P7 read after synchronising one stream
    (a CPU copy), differs from ``expected``, the same call's output on the
    default stream: another dtype, or values outside the catalog entry's
    tolerance (``judging``) for a run in ``dtype`` (a kernel may not be
    bitwise deterministic). ``flagprop.observers.streams`` asks it while it
    observes a case."""
    rtol, atol = tolerance(judging["tolerance"], dtype, str(expected.dtype).replace("torch.", ""), call)
    return actual.dtype != expected.dtype or bool(compare_close(actual, expected, rtol, atol))


def stream_semantics(obs):
    """P7 on ``streams.observe_streams``: under a non-default current stream
    the op's work is ordered after earlier work on that stream, its results
    are there after synchronising that stream alone, the default stream is
    not used, and a launch of the same cached kernel after a switch goes to
    the new stream. Returns ``{"pass", "reason"}``."""
    if obs.get("error"):
        return {"pass": True, "judged": False, "reason": "not judged: the op raised %s (P5 judges that)" % obs["error"]}
    if not any(fact in obs for fact in _STREAM_FACTS):
        return {"pass": True, "judged": False, "reason": "not judged: no stream fact was observed"}
    bad = [why for fact, why in _STREAM_FACTS.items() if not obs.get(fact, True)]
    if bad:
        return {"pass": False, "reason": "; ".join(bad) + " (%s, fast path %s)" % (obs.get("model"), obs["fast_path"])}
    return {"pass": True, "reason": "the op followed the current stream (%s)" % obs.get("model")}


# --------------------------------------------------------------------------
# P9 A/B timing
# --------------------------------------------------------------------------


def _mean(v):
    return sum(v) / len(v) if v else float("nan")


def _percentile(v, q):
    s = sorted(v)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def paired_summary(a, b, resamples=2000, seed=0):
    """A / B samples paired by index (µs per call, A: patch on, B: off):
    means, the ratio mean(B) / mean(A) (above 1: the patch is faster), the
    mean paired difference B - A in µs, each with a 95 % confidence interval
    from a paired bootstrap (``resamples`` resamplings of the pairs, a fixed
    ``seed``), the median paired difference, the difference of the 10th
    percentiles (``p10_delta_us``: robust to a loaded machine, where
    preemption only adds time), and the number of pairs."""
    import random

    n = min(len(a), len(b))
    if n == 0:
        return None
    a, b = list(a[:n]), list(b[:n])
    rng = random.Random(seed)
    ratios, deltas = [], []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        ma, mb = _mean([a[i] for i in idx]), _mean([b[i] for i in idx])
        ratios.append(mb / ma if ma else float("inf"))
        deltas.append(mb - ma)
    ma, mb = _mean(a), _mean(b)
    return {"pairs": n, "mean_a_us": ma, "mean_b_us": mb,
            "ratio_b_over_a": mb / ma if ma else float("inf"),
            "ratio_ci95": [_percentile(ratios, 0.025), _percentile(ratios, 0.975)],
            "delta_b_minus_a_us": mb - ma,
            "delta_ci95_us": [_percentile(deltas, 0.025), _percentile(deltas, 0.975)],
            "median_delta_us": sorted(y - x for x, y in zip(a, b))[n // 2],
            # Preemption only ever adds time: the low tenth is the least disturbed.
            "p10_delta_us": _percentile(b, 0.1) - _percentile(a, 0.1)}


def ab_timing(obs):
    """P9 on ``timing.observe_ab``: a measurement, not a judgement. Returns
    ``{"pass": True, "reason", "refused"?, "host", "device"}`` where host and
    device are ``paired_summary`` (device None where there are no events),
    or the reason P9 refused to measure (the patch is not active, or P8
    shows no fast hits)."""
    if "refused" in obs:
        return {"pass": True, "reason": "refused: " + obs["refused"], "refused": obs["refused"]}
    host = paired_summary(obs["host_a"], obs["host_b"])
    device = paired_summary(obs["device_a"], obs["device_b"]) if obs["device_a"] else None
    reason = "host: patch off / on %.3f (95%% CI %.3f-%.3f, %d pairs), %+.2f µs per call" % (
        host["ratio_b_over_a"], host["ratio_ci95"][0], host["ratio_ci95"][1], host["pairs"], host["delta_b_minus_a_us"])
    if device:
        reason += "; device: %.3f (95%% CI %.3f-%.3f)" % (device["ratio_b_over_a"], device["ratio_ci95"][0],
                                                          device["ratio_ci95"][1])
    return {"pass": True, "reason": reason, "host": host, "device": device}


def gates_open(gates, gate_builds):
    """Whether ``gates`` ({accelerator, routes_to_flaggems}) open an installer
    scoped to the builds ``gate_builds``: the build is one of them and the
    configuration routes to FlagGems."""
    return gates["accelerator"] in gate_builds and bool(gates["routes_to_flaggems"])
