// The run report: report.json (flagprop.report/1), report.md, console table.
#pragma once

#include "catalog/families.h"
#include "core/records.h"

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace flagprop {

using json = nlohmann::json;

/// Whether a target result is what its manifest expects (the target
/// document's `expect`, by statusExpected).
bool resultExpected(const json& target, const json& result);
/// The same for a result read as a record.
bool resultExpected(const json& target, const ResultRecord& result);

/// Builds the merged report from per-target JSON documents (each as written by
/// `flagprop run-target`: name, manifest, status ok|error, error, provenance,
/// results[]). Adds `schema`, `provenance` (seed, versions, command) and a
/// `summary` with counts and `unexpected` (target/property pairs), and to
/// every result `expected` (the status its manifest expects: a status, or
/// "pass or skip" when the manifest names none) and `as_expected` (bool).
json mergeReport(const json& targets, const json& runInfo);

/// One P5 result (op, dtype) on which the device's stock path (the control,
/// docs/control.md) and CPU ATen disagreed: `cases` of the result's
/// `casesRun` cases were tagged so (a failing result: its shrunk case, 1),
/// `example` one such note of a failing result ("call 0: output 0: the
/// stock path differs from CPU ATen: ...").
struct StockNote {
  std::string op, dtype, status;
  int cases = 0, casesRun = 0;
  std::string example;
};

/// The P5 results of `target` (a target document) that carry "the stock
/// path differs from CPU ATen", in result order; empty for a target with no
/// control.
std::vector<StockNote> stockDiffersFromCpu(const json& target);

/// Per-op coverage of one target document (its results with an `op`): ops,
/// judged (pass + fail), pass, fail, distinct_failures (each failing
/// result's first failure plus its observations.distinct_failures),
/// gave_up (every result a skip: CPU ATen rejected most samples, or crashed
/// or hung on them), excluded
/// and excluded_because [{reason, ops}], most frequent first;
/// stock_differs_from_cpu: the P5 results stockDiffersFromCpu lists;
/// by_family: [{family (opFamily), dtype ("all" or one), ops, judged, pass,
/// fail, gave_up, gave_up_because {reason: ops}, excluded,
/// excluded_because, seconds (its results' seconds summed), shrink_seconds
/// (the part spent shrinking), compilations (Triton's, from
/// observations.stats), case_seconds {op, reference, flagprop} (where the
/// executed cases' seconds went, from observations.stats), slowest {op,
/// seconds} (the op whose results took the most run seconds)}]. An op
/// counts once however many dtypes and properties it ran ("all"); in a
/// dtype row, once per dtype.
json opCoverage(const json& target);

/// report.md's table of `coverage` (opCoverage's) by family and dtype: a
/// row per family over all dtypes, then one per family and dtype, with the
/// seconds and where they went, and a note on the columns; "" without
/// by_family rows.
std::string familyTable(const json& coverage);

/// Markdown for a person: a table per target, then every failure with its
/// reason, observations, counterexample, reproduce string and reproducer.
std::string renderMarkdown(const json& report);

/// The console summary printed at the end of `flagprop run`: the verdict
/// line first ("verdict: as expected; results: ..." or "verdict: N
/// unexpected result(s); ..."), then the target x property matrix (left
/// out when more than 12 targets all ended as expected), the example
/// database's counts and each unexpected result, one line each (at most 20).
void printSummary(const json& report, std::ostream& os);

/// `path` as the console shows it: relative to the current folder when it
/// lies inside it, else as it is.
std::string shownPath(const std::string& path);

/// One cell of the target x property matrix, computed once here for every
/// reader (the console, report.md, and report.html through report.json's
/// targets[].matrix): the worst status of the property's results (pass <
/// skip < flaky < fail < error; "-" when the property has no result: it
/// does not apply), how many of the `of` results have it, and how many
/// results are not what the manifest expects.
struct MatrixCell {
  std::string status = "-";
  int count = 0;       ///< results with the worst status
  int of = 0;          ///< the property's results
  int unexpected = 0;  ///< results not as the manifest expects
  bool perOp = false;  ///< an op property: one result per op and dtype
  /// "fail 4/4" for an op property, "fail" for an installer property, "-";
  /// "!" appended when a result is unexpected.
  std::string label() const;
};

/// The cell of `property` (an id, P1 .. P9) in `target` (a target document).
MatrixCell matrixCellOf(const json& target, const std::string& property);

/// matrixCellOf(target, property).label().
std::string matrixCell(const json& target, const std::string& property);

/// The shell command that replays result `r` of `target` in flagprop
/// (run --manifest ... --property KEY --reproduce STR), with the flagprop
/// path from `provenance` (report.json's).
std::string replayCommand(const json& provenance, const json& target, const json& r);
/// The same for a result read as a record.
std::string replayCommand(const json& provenance, const json& target, const ResultRecord& r);
/// The same for run key `key` and reproduce string `reproduce` (a distinct
/// failure's). Every argument is quoted for a POSIX shell as Python's
/// shlex.quote does. mergeReport writes it into report.json (results[].replay,
/// distinct_failures[].replay), where report.html and the drafts read it.
std::string replayCommand(const json& provenance, const json& target, const std::string& key,
                          const std::string& reproduce);

/// `s` quoted for a POSIX shell: as it is when it holds only [A-Za-z0-9_@%+=:,./-]
/// (and is not empty), else in single quotes (Python's shlex.quote).
std::string shellQuote(const std::string& s);

/// What `flagprop run` prints after target `index` (1-based) of `count`
/// ended: one line (name, each property's matrix cell, seconds), the
/// target error or crash, what the code under test printed (counted), and
/// for each result the manifest does not expect (fail, flaky or error; and
/// for those it expects when `expectedToo`) a short block: the property,
/// the reason, the shrunk counterexample, the reproducer and the replay
/// command, paths relative to the current folder (at most `blocks` such
/// blocks, then one line per further result, at most 6). An expected
/// failure is its matrix cell alone: report.md has the rest.
void printTargetResult(const json& target, const json& provenance, size_t index, size_t count, double seconds,
                       std::ostream& os, size_t blocks = 3, bool expectedToo = false);

/// JUnit XML for one target document (a file CI systems read): a
/// <testsuite> named after the target with one <testcase> per result (name
/// "KEY title", classname the target, file the manifest): <failure> for a
/// result the manifest does not expect (message: the reason; text: the
/// reason, the shrunk counterexample and the replay command), <skipped>
/// for a skip, <error> for an error; an expected failure passes, with its
/// status in <properties>. A target error or a dead target process is one
/// <testcase name="target"> with <error>.
std::string junitXml(const json& target, const json& provenance);

}  // namespace flagprop
