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
/// flagprop's own Python package directory (`python/`, or $FLAGPROP_PYTHONPATH)
/// first on `sys.path`, imports `torch` so that LibTorch is shared between C++
/// and Python, and imports flagprop's helper modules. Never shut down before
/// process exit (torch cannot be re-imported into a fresh interpreter).
/// Throws std::runtime_error if `torch` or the helpers cannot be imported.
void ensureInterpreter();

/// Directory that holds flagprop's Python package (absolute path).
std::string pythonPackageDir();

/// Directory that holds flagprop's fixtures (installers, target manifests).
std::string fixturesDir();

/// Imports `flagprop.<name>` (e.g. "mocks", "loader", "observe", "launch");
/// cached. Throws py::error_already_set on import failure.
py::module_ helper(const char* name);

/// Converts a Python value built from dict / list / tuple / str / bytes / int
/// (any size; beyond 64 bits it becomes a decimal string) / float / bool /
/// None into JSON. Other objects become their `repr()`.
json toJson(py::handle obj);

/// Converts JSON into the matching Python value (objects -> dict, arrays ->
/// list, numbers -> int / float, null -> None).
py::object fromJson(const json& value);

/// One-line description of the Python exception currently held by `e`
/// ("Type: message").
std::string describe(const py::error_already_set& e);

}  // namespace flagprop
