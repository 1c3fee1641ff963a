// The op catalog, shaped like PyTorch's OpInfo: one short entry per ATen
// overload, built from op families (named samplers, catalog/samplers.h),
// dtype sets and judging rules, so that adding an op is one entry in
// catalog/catalog.cpp and it gets P5, P6, report rows and reproducers.
//
// The CPU reference is always the named ATen overload itself, called
// through the dispatcher on CPU copies of the inputs (flagprop.engine.ops.reference);
// how its outputs are compared is the entry's judging spec, evaluated by
// flagprop.judging.verdicts (tolerance rules and output kinds).
#pragma once

#include "catalog/samplers.h"

#include <memory>
#include <string>
#include <vector>

namespace flagprop {

/// Dtype sets an entry runs in (one P5 / P6 result each).
extern const std::vector<std::string> kFloating;          ///< float32, float16, bfloat16
extern const std::vector<std::string> kFloatingAndInt32;  ///< kFloating and int32
/// Every dtype flagprop generates (core/dtypes.h): what a schema-derived
/// entry may run in when a target asks.
extern const std::vector<std::string> kAllDtypes;
/// What a schema-derived entry runs in when the target names no dtypes:
/// float32, float16, bfloat16, int32, int64, bool.
extern const std::vector<std::string> kSchemaDefaultDtypes;

/// Tolerance rules (flagprop.judging.verdicts.tolerance documents each).
namespace tol {
json pointwise();             ///< rtol by dtype (FlagGems' RESOLUTION), atol 1e-4
json exact();                 ///< identical values (NaN positions still compare as positions)
json reduction(int dimsArg);  ///< atol 1e-4 * sqrt(elements reduced); dims in argument `dimsArg`
json scan(int dimArg);        ///< atol 1e-4 * sqrt(length of the scanned dim in argument `dimArg`)
json normalization();         ///< rtol max(RESOLUTION, 1e-5), atol 1e-4
}  // namespace tol

/// How an output is judged (flagprop.judging.verdicts.op_findings).
namespace out {
json values();  ///< against the reference within the tolerance (the default)
/// Indices into input `input` along the dim in argument `dimArg` (None: the
/// flattened input), keepdim in argument `keepdimArg` (-1: the indices keep
/// every dim): judged by the values they select, so any index among ties
/// is right (argmin, max.dim, an unstable sort).
json indices(int input, int dimArg, int keepdimArg = -1);
/// The same, the dim (and keepdim) named by a keyword argument or a
/// position (a JSON string or integer): what schema-derived entries use.
json indices(int input, const json& dimArg, const json& keepdimArg = nullptr);
/// Adds to an indices() or values() rule: judged exactly (the index ATen
/// gives) when argument `arg` is true (`stable=True`: stable order is
/// documented).
json exactIf(json rule, const json& arg);
/// Adds to an indices() or values() rule: the order along the dim in
/// argument `dimArg` is free (compared as a multiset) when argument `arg` is
/// false (`topk(sorted=False)`).
json unorderedIf(json rule, const json& arg, const json& dimArg);

/// `rules` (per output) with, for each argument a rule names by position
/// (dim_arg, keepdim_arg, unordered_if_not, exact_if), that argument's name
/// ("dim_arg_name") and default ("dim_arg_default") from `op`'s schema, so
/// that a call passing it by keyword (OpInfo's samples) or leaving it out
/// (topk's dim: -1) is judged by it. Unchanged without a schema.
json namedArgs(json rules, const std::string& op);

/// The outputs rule of ATen overload `name` where ATen leaves a choice to
/// the implementation (docs/aten-freedom.md: the index among equal values,
/// the order of an unsorted topk), for schema-derived entries; an empty
/// array where it leaves none (argmax / argmin: the first occurrence).
json freeOutputs(const std::string& name);
}  // namespace out

/// How a catalog op's outputs are judged: the case's `judging` as
/// flagprop.judging.verdicts reads it (docs/catalog.md). Written as JSON with
/// upcast, tolerance and outputs always, the rest only where set.
struct Judging {
  bool upcast = true;                 ///< floating inputs of the reference in float64
  json tolerance = tol::pointwise();  ///< a tol:: rule
  json outputs = json::array();       ///< per output an out:: kind (default: values)
  /// Schema-derived entries: how the overload returns ("functional",
  /// "inplace", "out", "view", ...; catalog/schema_ops.h); "": functional.
  std::string mode;
  /// "either": the reference may be computed in float64 or in the run's
  /// dtype (schema-derived entries: the schema says nothing of
  /// conditioning); "": as `upcast` says.
  std::string reference;
  bool integerOnly = false;  ///< run in int32 whatever floating dtypes the target asks for
  std::string schema;        ///< the ATen schema it was derived from; "": a hand-written entry
  bool derived() const { return !schema.empty(); }
};
void to_json(json& j, const Judging& g);
/// Absent keys keep their defaults; a key of the wrong type throws json::type_error.
void from_json(const json& j, Judging& g);

/// One catalog op.
struct OpEntry {
  std::string name;                 ///< ATen overload as torch.ops spells it: "add.Tensor", "tanh" (= tanh.default)
  std::vector<std::string> dtypes;  ///< dtypes the op may be run in (a target's `dtypes` picks among them)
  /// What it runs in when the target names no dtypes; empty: all of `dtypes`.
  std::vector<std::string> defaultDtypes;
  Sampler sample;   ///< one call of the op
  Judging judging;  ///< how its outputs are judged
};

/// Builds an entry in one expression: Op("exp", kFloating, samplers::unary()).
class Op {
 public:
  Op(std::string name, std::vector<std::string> dtypes, Sampler sample);
  Op& tolerance(json rule);  ///< the tolerance rule
  Op& exact();               ///< tol::exact() and the reference in the inputs' own dtypes
  Op& outputs(json kinds);   ///< per output: out::values() / out::indices(...)
  operator OpEntry() const { return entry_; }

 private:
  OpEntry entry_;
};

/// Every catalog entry, in a fixed order.
const std::vector<OpEntry>& catalog();

/// The entry called `name`: the hand-written one, else one derived from the
/// ATen overload's schema (catalog/schema_ops.h; made once, kept for the
/// process); nullptr when neither exists or the overload is excluded
/// (whyExcluded says why).
const OpEntry* findOp(const std::string& name);

/// The entry that runs `name` in `dtype`: findOp(name) where its dtypes
/// hold `dtype`, else (with `schemaFallback`, for targets that call ATen
/// itself) the entry derived from the overload's schema where that holds
/// it, so a hand-written entry's narrower dtype set never drops a dtype
/// ATen takes (`log` on int32); nullptr when neither does.
const OpEntry* opIn(const std::string& name, const std::string& dtype, bool schemaFallback);

/// The dtypes `name` runs in when a target names none: the hand-written
/// entry's defaults, then the schema-derived entry's (float32, float16,
/// bfloat16, int32, int64, bool) that it lacks, so that a hand-written
/// entry never narrows what ATen takes (`log` runs int32 and int64 too);
/// empty when neither entry exists.
std::vector<std::string> defaultDtypesOf(const std::string& name);

/// Why opIn(name, dtype, fallback) is nullptr, one line naming the dtypes
/// flagprop runs `name` in ("" when it is not).
std::string whyNotIn(const std::string& name, const std::string& dtype, bool schemaFallback);

/// Why findOp(name) is nullptr, one line ("" when it is not).
std::string whyExcluded(const std::string& name);

/// The catalog's op names, comma-separated (for error messages).
std::string catalogNames();

/// The fixed palette of `lim.palette` calls for `entry` in `dtype` (see
/// LayoutLimits::palette): a function of lim.paletteSeed, the op and the
/// dtype only, so that a reproduce string replays against the same palette
/// and Triton's on-disk cache is reused from run to run.
std::vector<OpCall> buildPalette(const OpEntry& entry, const std::string& dtype, const gen::LayoutLimits& lim);

/// The RapidCheck Randoms buildPalette's calls are sampled from, one per
/// call: replaying entry.sample from one of them gives the same call, with
/// its shrinks.
std::vector<rc::Random> paletteRandoms(const OpEntry& entry, const std::string& dtype, const gen::LayoutLimits& lim);

/// Generator of P5 / P6 cases for `entry` in `dtype`: 1..3 calls (weighted
/// toward 1, any of them droppable while shrinking), each from entry.sample,
/// or (when `palette`, paletteRandoms' result, is not empty) 15 of 16 from
/// the palette with fresh value seeds; a palette call shrinks like a free one.
rc::Gen<OpCase> opCases(const OpEntry& entry, const std::string& dtype, const gen::LayoutLimits& lim,
                        std::shared_ptr<const std::vector<rc::Random>> palette = nullptr);

}  // namespace flagprop
