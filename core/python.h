// Embedded Python interpreter shared by every flagprop component.
#pragma once

#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include <string>

namespace flagprop {

namespace py = pybind11;
using json = nlohmann::json;

/// Starts the embedded interpreter once per process (idempotent), puts
/// flagprop's Python folders first on `sys.path` (`python/` and `mocks/`, or
/// $FLAGPROP_PYTHONPATH, a ':'-separated list), imports `torch` (so that C++
/// and Python share one libtorch) and every flagprop module, outside any
/// case's sandbox. Never shut down before process exit (torch cannot be
/// re-imported into a fresh interpreter). Throws std::runtime_error if
/// `torch` or flagprop's modules cannot be imported.
void ensureInterpreter();

/// The folders flagprop puts on `sys.path` (absolute paths).
std::vector<std::string> pythonFolders();

/// Every flagprop module the interpreter imports before any case (so that
/// the sandbox watches them), in import order.
std::vector<std::string> importedModules();

/// Directory that holds flagprop's fixtures (installers, ops, target
/// manifests): `fixtures/`, or $FLAGPROP_FIXTURES.
std::string fixturesDir();

/// Imports the Python module `name` (e.g. "flagprop.judging.verdicts",
/// "flagprop_mocks"); cached for the process. Throws py::error_already_set
/// on import failure. Requires the GIL.
py::module_ pyImport(const std::string& name);

/// Converts a Python value built from dict / list / tuple / str / bytes / int
/// (any size; beyond 64 bits it becomes a decimal string) / float / bool /
/// None into JSON. Other objects become their `repr()`.
json toJson(py::handle obj);

/// Converts JSON into the matching Python value (objects -> dict, arrays ->
/// list, numbers -> int / float, null -> None).
py::object fromJson(const json& value);

/// One-line description of the Python exception held by `e` ("Type: message").
std::string describe(const py::error_already_set& e);

}  // namespace flagprop
