// The run report: report.json (flagprop.report/1), report.md, console table.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

namespace flagprop {

using json = nlohmann::json;

/// Whether a target result is what its manifest expects (the target
/// document's `expect`, by statusExpected).
bool resultExpected(const json& target, const json& result);

/// Builds the merged report from per-target JSON documents (each as written by
/// `flagprop run-target`: name, manifest, status ok|error, error, provenance,
/// results[]). Adds `schema`, `provenance` (seed, versions, command) and a
/// `summary` with counts and `unexpected` (target/property pairs), and to
/// every result `expected` (the status its manifest expects: a status, or
/// "pass or skip" when the manifest names none) and `as_expected` (bool).
json mergeReport(const json& targets, const json& runInfo);

/// Markdown for a person: a table per target, then every failure with its
/// reason, observations, counterexample, reproduce string and reproducer.
std::string renderMarkdown(const json& report);

/// The console summary printed at the end of `flagprop run`.
void printSummary(const json& report, std::ostream& os);

}  // namespace flagprop
