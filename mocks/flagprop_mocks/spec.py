"""The mock spec schema: the one definition of what a mock FlagGems can vary.

flagprop's C++ generator (generators/installer_cases.cpp, ``gen::mockSpec``)
draws mock specs from this table, and the factory (``flagprop_mocks.build``)
validates a spec against it and fills in defaults from it, so the two cannot
disagree. A field's ``values`` are ``[value, weight]`` pairs, simplest first:
the generator picks by weight and shrinks toward the first, which is also the
default. ``params`` is drawn by a named generator (``generator``) instead.

To add an ABI variant: add a field (or a value) here, and make
``flagprop_mocks.libentry`` act on it.
"""

#: The kernel parameters of the default mock kernel.
DEFAULT_PARAMS = [
    {"name": "in_ptr", "kind": "spec"},
    {"name": "out_ptr", "kind": "spec"},
    {"name": "n_elements", "kind": "spec"},
    {"name": "scale", "kind": "dns"},
    {"name": "BLOCK", "kind": "constexpr", "default": 128},
]

SPEC_SCHEMA = {
    "helper": {
        "values": [["present", 3], ["absent", 3], ["raising", 1], ["wrong_signature", 1]],
        "doc": "libentry._descriptor_cache_key: present; absent (older pins, e.g. R5); raising (looking the "
               "attribute up raises RuntimeError); wrong_signature (takes two required arguments)",
    },
    "key_signature": {
        "values": [["standard", 1], ["extra_keyword", 1]],
        "doc": "LibEntry.key(self, spec_args, dns_args, const_args), or with an extra keyword-only device=None",
    },
    "run_signature": {
        "values": [["standard", 1], ["grid_keyword", 1]],
        "doc": "LibEntry.run(self, *args, **kwargs), or (self, *args, grid=None, warmup=False, **kwargs)",
    },
    "cache": {
        "values": [["tuple", 1], ["cpu", 1]],
        "doc": "per-device kernel_cache tuple (current_device() is an int), or _cpu_cache (it is 'cpu')",
    },
    "flagtune_tuner": {
        "values": [[False, 4], [True, 1]],
        "doc": "the entry has a flagtune tuner (the fast path must fall back)",
    },
    "divisibility": {
        "values": [[16, 1], [8, 1], [32, 1], [1, 1]],
        "doc": "pointer alignment a specialised tensor argument is keyed on",
    },
    "vendor": {
        "values": [["nvidia", 1], ["hygon", 1], ["metax", 1], ["ascend", 1]],
        "doc": "flag_gems.runtime.device.vendor_name",
    },
    "device_count": {
        "values": [[1, 1], [2, 1]],
        "doc": "length of the kernel_cache tuple",
    },
    "wrappers": {
        "values": [[[], 6], [["autotuner"], 1], [["heuristics"], 1], [["hook"], 1]],
        "doc": "what a cached entry records: tuner constexprs, heuristic constexprs, launch hooks",
    },
    "run_delay_us": {
        "values": [[0, 1]],
        "doc": "host time the stock LibEntry.run spends per call, in µs, busy-waiting (pinned by P9's calibration "
               "fixture; the generator leaves it 0)",
    },
    "params": {
        "generator": "params",
        "default": DEFAULT_PARAMS,
        "doc": "kernel parameters [{name, kind: spec | dns | constexpr, default?}]; the first and the last are "
               "specialised pointers (input and output)",
    },
}

#: Parameter kinds: specialised, do-not-specialise, constexpr.
PARAM_KINDS = ("spec", "dns", "constexpr")


class SpecError(ValueError):
    """A mock spec names an unknown field or a value the schema does not list."""


def defaults():
    """The default spec: every field's first value (``params``: DEFAULT_PARAMS)."""
    return {name: (f["values"][0][0] if "values" in f else f["default"]) for name, f in SPEC_SCHEMA.items()}


def full(spec):
    """``spec`` checked against the schema, with defaults for what it leaves
    out. Raises SpecError for an unknown field or a value not in the schema."""
    out = defaults()
    for name, value in (spec or {}).items():
        field = SPEC_SCHEMA.get(name)
        if field is None:
            raise SpecError("unknown mock spec field %r (known: %s)" % (name, ", ".join(SPEC_SCHEMA)))
        if name == "run_delay_us":
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 100000:
                raise SpecError("mock spec field 'run_delay_us' must be a number of µs from 0 to 100000")
        elif "values" in field and value not in [v for v, _w in field["values"]]:
            raise SpecError("mock spec field %r: %r is not one of %s"
                            % (name, value, [v for v, _w in field["values"]]))
        if name == "params":
            for p in value:
                if p.get("kind") not in PARAM_KINDS:
                    raise SpecError("mock spec param %r: kind must be one of %s" % (p, PARAM_KINDS))
        out[name] = value
    return out
