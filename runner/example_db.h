// The example database: the counterexamples of earlier runs, replayed first.
//
// Every shrunk counterexample a run finds (and every case a target process
// died on) is kept as one JSON file, so that the next run of the same
// target judges it before it generates anything: a failure found yesterday
// is tried first today, as with Hypothesis's example database. Layout:
//
//   DB/<target name>@<device kind>/<run key>.<16 hex digits>.json
//
// (names made file-safe; the digits are a digest of the run key and the
// case, so the same example found twice is one file). Files are written
// atomically (a temporary file of the writer's own, then rename), so two
// runs at once on one database lose nothing and never read half a file.
// Each file is a flagprop.example/1 document (schemas/example.schema.json).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace flagprop {

/// The database folder when --db does not say: $FLAGPROP_DB, else
/// $XDG_CACHE_HOME/flagprop/examples, else ~/.cache/flagprop/examples.
/// $FLAGPROP_DB=off turns it off (returns "").
std::string defaultExampleDb();

/// The folder of one target's examples under `db`: `target` is the
/// manifest's name, `device` its device ("cpu", "cuda:0"; the kind before
/// the colon is what counts, so examples found on cuda:0 replay on cuda:1).
std::string exampleFolder(const std::string& db, const std::string& target, const std::string& device);

/// The examples stored in `folder` for run key `key` ("P5/add.Tensor/float32")
/// of target `target` (any target when empty), oldest first (of one run's,
/// its first failure before its distinct ones), each with "file" (its path)
/// added and its reason cut to 2000 characters. A file that is not a whole
/// flagprop.example/1 document of that key and target (unreadable, another
/// key, a field missing or of another type) is skipped, never an error: the
/// database is a cache. Nothing when the folder does not exist.
std::vector<nlohmann::json> loadExamples(const std::string& folder, const std::string& key,
                                         const std::string& target = "");

/// Stores the failures of one finished target document (runner.h's
/// runTarget / collectChildDocument): every result with status fail or
/// flaky or error and a counterexample, and each of its distinct_failures,
/// unless it came from a stored example (observations.db.still_failing: its
/// file is already there). A file of the same name that is not a whole
/// example of the key is written over. `storedIn` is the report folder named in the
/// files. Returns how many files were written; throws FileError when the
/// folder cannot be created or a file cannot be written.
int storeExamples(const std::string& db, const nlohmann::json& targetDoc, const std::string& storedIn);

/// Removes a stored example's file (one that passes now); nothing when it is
/// gone already (another run removed it).
void forgetExample(const std::string& file);

}  // namespace flagprop
