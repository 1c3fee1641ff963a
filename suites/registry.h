// The property registry: every property flagprop checks, written once (id,
// title, statement, which targets it applies to, how its runs are built,
// and the flagprop.judging.checks kind that pairs its observer with its verdict),
// and the planner that turns a target into property runs. Every consumer
// reads it: the planner, the CLI (`flagprop properties`), the console,
// report.md, and through report.json's `properties` report.html and the
// drafts.
#pragma once

#include "suites/property.h"

#include <memory>
#include <string>
#include <vector>

namespace flagprop {

struct OpEntry;
struct OpRunState;
struct PropertyDef;

/// Builds the run of an op property on one op and dtype: `cases` are the
/// cases every run of that op and dtype draws (the same seed gives the
/// same cases), `shared` what those runs share (P5 and P6 judge one
/// observation of each case). The builders are in suites/op_properties.h.
using OpRunBuilder = PropertyRun (*)(TargetSession& session, const PropertyDef& def, const OpEntry& entry,
                                     const std::string& dtype, const rc::Gen<Case>& cases,
                                     const std::shared_ptr<OpRunState>& shared);

/// The generator of an installer property's cases for target `t` (over the
/// mock spec schema; suites/installer_properties.h).
using InstallerCases = rc::Gen<Case> (*)(const Target& t);

/// One property.
struct PropertyDef {
  std::string id;     ///< "P1"
  std::string title;  ///< "install status"
  std::string
      checkKind;  ///< flagprop.judging.checks kind: install | install2 | launch | key | op | streams | hits | timing
  /// Installer properties run once per target and need an installer; op
  /// properties run once per catalog op and dtype.
  enum class Scope { Installer, Op } scope;
  std::string holds;      ///< when it holds, one line (for --help and docs)
  bool byDefault = true;  ///< run when a manifest lists no properties (of its scope)
  /// Cases per run when --cases does not say: 0 = the target's `cases` /
  /// `op_cases`; a costly property runs fewer (P7's device witnesses wait on
  /// long kernels, P9 measures one case).
  int cases = 0;
  OpRunBuilder opRun = nullptr;             ///< Scope::Op: builds its run on one op and dtype
  InstallerCases installerCases = nullptr;  ///< Scope::Installer: its cases
  /// Scope::Installer: a probe case first shows whether there is a fast
  /// path to compare (P3, P4); without one the run is a skip.
  bool probesFastPath = false;
  /// Scope::Op: an op flagprop excludes gets a skip result with the reason
  /// for this property (P5, P6), so that the coverage counts every op.
  bool reportsExcluded = false;
  /// The Python module whose functions observe its cases (what
  /// flagprop.judging.checks' kind runs); one of the modules imported before
  /// any case (core/python.h importedModules()), and named in
  /// flagprop.tools.slim's PACK_ORDER so that a reproducer can pack it.
  std::string observer;
  /// Its cell in report.md's "fast path" column, from a result's
  /// observations ("" when they say nothing of it); nullptr: it has none.
  std::string (*fastPathCell)(const nlohmann::json& observations) = nullptr;
};

/// Why `defs` is not a valid registry, or "": ids "P<n>" unique and in
/// order, a title, a statement, a check kind, an observer module, and what
/// its scope needs (Installer: installerCases; Op: opRun). properties()
/// throws std::logic_error with it.
std::string registryProblem(const std::vector<PropertyDef>& defs);

/// Every property, in order.
const std::vector<PropertyDef>& properties();

/// The property `id`, or nullptr.
const PropertyDef* findProperty(const std::string& id);

/// The registry as report.json's `properties` carries it, for every reader
/// of a report (report.md, report.html, the drafts): [{id, title,
/// statement (when it holds), check (flagprop.judging.checks kind), scope
/// ("installer" | "op"), by_default}], in registry order.
nlohmann::json propertiesJson();

/// "" when `key` is a run key of a registered property ("P1", or for an op
/// property "P5/OP" and "P5/OP/DTYPE"), else why not (one line).
std::string checkRunKey(const std::string& key);

/// The property ids `t` runs: its `properties`, else every installer
/// property when it has an installer, else the op properties (those run by
/// default: P8 only when listed). Throws
/// ManifestError (naming the manifest) for an unknown id, an installer
/// property on a target without an installer, or an `expect` key naming a
/// property that is not registered.
std::vector<std::string> targetProperties(const Target& t);

/// The ops `t`'s op properties run over: its `catalog`, else every entry of
/// the catalog flagprop has (catalog order).
std::vector<std::string> targetOpNames(const Target& t);

/// A run-time narrowing of what runs (the CLI's --property, --op, --dtype).
struct Selection {
  std::vector<std::string> properties;  ///< run keys; empty = all
  std::vector<std::string> ops;         ///< catalog ops; empty = all
  std::vector<std::string> dtypes;      ///< dtypes; empty = all
  /// Whether the selection takes run key id[/op/dtype]. An installer
  /// property (no op) is taken when `properties` names it, or when nothing
  /// at all is selected (not by `ops` / `dtypes` alone).
  bool takes(const std::string& id, const std::string& op = "", const std::string& dtype = "") const;
  /// --shard I/N: this run is part `part` (0-based) of `parts` disjoint,
  /// deterministic parts of the whole run; 1: the whole run.
  int part = 0, parts = 1;
  /// Whether target `target`'s runs of `op` in `dtype` (both "" for its
  /// installer properties) are in this part: a stable hash (FNV-1a) of
  /// "TARGET|OP|DTYPE" modulo `parts`. An op and dtype's runs stay together
  /// (P6 judges P5's observations), so do a target's installer properties.
  bool inPart(const std::string& target, const std::string& op = "", const std::string& dtype = "") const;
};

/// The property runs of `session`'s target under `sel`, in order: the
/// installer properties, then P5 and P6 for each op and dtype (so that a run
/// cut short keeps both properties of the ops it finished). Sets up the op
/// under test when op runs are planned. Throws ManifestError when that fails.
std::vector<PropertyRun> planRuns(TargetSession& session, const Selection& sel);

/// The run of one installer property (P1-P4) on `session`: its
/// installerCases, judged by its checkKind.
PropertyRun installerRun(TargetSession& session, const PropertyDef& def);

/// One op property run as planned (before any code under test loads):
/// `entry` is nullptr for an op flagprop excludes (its run is a skip).
struct PlannedOpRun {
  const PropertyDef* def;
  const OpEntry* entry;  ///< nullptr: not run, a skip whose reason is `skip`
  std::string op, dtype;
  std::string skip;  ///< "excluded: ..." or "not run in <dtype>: ..." where entry is nullptr
  std::string key() const { return def->id + "/" + op + "/" + dtype; }
};

/// The catalog entry target `t` runs `op` in `dtype` with: opIn, falling
/// back to the entry derived from the overload's schema where `t` calls ATen
/// itself (ops kind "aten"); nullptr when none takes `dtype`. planOpRuns
/// plans with it and the supervisor judges a crashed case with it.
const OpEntry* targetEntry(const Target& t, const std::string& op, const std::string& dtype);

/// The op property runs of `defs` for every op and dtype of `t` that `sel`
/// takes, in run order (the runs of one op and dtype next to each other).
std::vector<PlannedOpRun> planOpRuns(const Target& t, const std::vector<const PropertyDef*>& defs,
                                     const Selection& sel);

/// The run keys planRuns gives `t` under `sel`, in order ("P1", ...,
/// "P5/OP/DTYPE"), computed from the manifest and the catalog alone (no
/// interpreter): what a parent expects of a target process it launched.
/// Throws ManifestError as targetProperties does.
std::vector<std::string> plannedKeys(const Target& t, const Selection& sel);

/// The runs of the op properties `defs` (P5, P6) for every op and dtype of
/// `session`'s target that `sel` takes; runs of the same op and dtype share
/// their observations (one observation holds both properties' findings).
std::vector<PropertyRun> opRuns(TargetSession& session, const std::vector<const PropertyDef*>& defs,
                                const Selection& sel);

/// The calls `runs`' op runs will launch most, for compiling their kernels
/// ahead (runner/precompile.h): for each op and dtype with an op run (in
/// run order, each once), first the call of each explicit example's first
/// draw under `opts` (phases::explicitFirstDraws: with opts.seed set, as
/// `flagprop run` always sets it, the very calls the explicit phase judges
/// first; none for the ops that
/// autotune heavily, opAutotunesHeavily), then one case per call of
/// the target's layout palette (buildPalette), or without a palette
/// kFreePrecompileCalls calls drawn by the op's sampler at sizes spread
/// over RapidCheck's 0..100 (a function of the op and dtype). Each case is
/// a P5 case's JSON with one call. Ops flagprop cannot sample (excluded
/// overloads) and calls or examples that cannot be drawn are left out.
/// Building the examples may fetch the op's OpInfo samples (the bank), as
/// the runs' explicit phase would. Throws nothing of its own.
std::vector<json> precompileCases(const Target& t, const std::vector<PropertyRun>& runs, const RunOptions& opts);

/// Calls per op and dtype that precompileCases draws where the target has
/// no layout palette.
constexpr int kFreePrecompileCalls = 16;

}  // namespace flagprop
