#include "core/python.h"

#include "core/files.h"
#include "core/native_runtime.h"

#include <c10/util/Logging.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#ifndef FLAGPROP_SOURCE_DIR
#error "FLAGPROP_SOURCE_DIR must be defined by the build"
#endif

namespace flagprop {

namespace {
std::unique_ptr<py::scoped_interpreter>& interp() {
  static std::unique_ptr<py::scoped_interpreter> p;
  return p;
}
std::map<std::string, py::module_>& moduleCache() {
  static auto* m = new std::map<std::string, py::module_>();  // never destroyed: outlives the interpreter
  return *m;
}
std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : fallback;
}

// Every flagprop module, imported before any case: the sandbox removes
// modules a case adds under a watched root, and a module imported twice
// would keep two states (the compile counter, the descriptor class).
const char* kModules[] = {"flagprop_mocks",
                          "flagprop.engine.loader",
                          "flagprop.engine.observe",
                          "flagprop.engine.facts",
                          "flagprop.judging.verdicts",
                          "flagprop.engine.launch",
                          "flagprop.engine.real_launch",
                          "flagprop.engine.session",
                          "flagprop.engine.ops",
                          "flagprop.observers.hits",
                          "flagprop.observers.streams",
                          "flagprop.observers.timing",
                          "flagprop.reporting.plots",
                          "flagprop.judging.checks",
                          "flagprop.engine.opinfo"};
}  // namespace

std::vector<std::string> importedModules() { return {std::begin(kModules), std::end(kModules)}; }

std::vector<std::string> pythonFolders() {
  const std::string src = dataRoot();
  const std::string list = envOr("FLAGPROP_PYTHONPATH", src + "/python:" + src + "/mocks");
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t colon = list.find(':', start);
    const std::string part = list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!part.empty()) out.push_back(part);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

std::string fixturesDir() { return envOr("FLAGPROP_FIXTURES", dataRoot() + "/fixtures"); }

namespace {

// Starts the embedded interpreter in UTF-8 mode whatever the locale (a C
// locale made Python's stdio and file system encoding ASCII: an op printing
// "took 3 µs" raised UnicodeEncodeError, code under a non-ASCII path did not
// load), with sys.executable the interpreter flagprop embeds (not the first
// python3 on PATH). Otherwise as pybind11 starts one: the environment read,
// signal handlers installed. Throws std::runtime_error when CPython refuses.
void startInterpreter() {
  PyPreConfig pre;
  PyPreConfig_InitPythonConfig(&pre);
  pre.utf8_mode = 1;
  PyStatus status = Py_PreInitialize(&pre);
  if (PyStatus_Exception(status))
    throw std::runtime_error(std::string("flagprop: cannot start Python: ") +
                             (status.err_msg ? status.err_msg : "pre-initialize"));
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  config.isolated = 0;
  config.use_environment = 1;
  config.install_signal_handlers = 1;
  status = PyConfig_SetBytesString(&config, &config.executable, FLAGPROP_PYTHON_EXE);
  if (PyStatus_Exception(status)) {
    PyConfig_Clear(&config);
    throw std::runtime_error("flagprop: cannot set sys.executable to " + std::string(FLAGPROP_PYTHON_EXE));
  }
  interp() = std::make_unique<py::scoped_interpreter>(&config);  // clears the config
}

}  // namespace

void ensureInterpreter() {
  if (!Py_IsInitialized()) {
    startInterpreter();
    // Keep the interpreter alive until exit: destroying it after torch was
    // imported is not supported by torch.
    static struct Leak {
      ~Leak() { (void)interp().release(); }
    } leak;
  }
  py::gil_scoped_acquire gil;
  py::list path = py::module_::import("sys").attr("path");
  const auto folders = pythonFolders();
  for (auto it = folders.rbegin(); it != folders.rend(); ++it) {
    bool present = false;
    for (auto p : path) present = present || (py::str(p).cast<std::string>() == *it);
    if (!present) path.insert(0, *it);
  }
  registerNativeModule();
  try {
    py::module_::import("torch");
  } catch (const py::error_already_set& e) {
    throw std::runtime_error("flagprop: cannot import torch in the embedded interpreter: " + describe(e));
  }
  // No C++ stack trace in c10::Error: LibTorch 1.13 symbolizes one for every
  // error it raises (backtrace_symbols: dladdr over libtorch's symbols,
  // tens of ms), and a run over every overload has CPU ATen reject
  // thousands of samples; that was 26 % of such a run's CPU time. Only the
  // trace after the message's first lines goes; flagprop reads the first line.
  c10::SetStackTraceFetcher(
      std::function<std::string()>([] { return std::string("(no C++ stack trace: flagprop does not take one)"); }));
  try {
    for (const char* m : kModules) pyImport(m);
    // A real Triton (where there is one) is imported now too, for one
    // TensorDescriptor class per process.
    pyImport("flagprop_mocks").attr("descriptor_class")();
  } catch (const py::error_already_set& e) {
    throw std::runtime_error("flagprop: cannot import flagprop's Python modules from " + folders.front() + ": " +
                             describe(e));
  }
}

py::module_ pyImport(const std::string& name) {
  auto& cache = moduleCache();
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  py::module_ m = py::module_::import(name.c_str());
  cache.emplace(name, m);
  return m;
}

json toJson(py::handle obj) {
  if (obj.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(obj)) return obj.cast<bool>();
  if (py::isinstance<py::int_>(obj)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow == 0 && !(v == -1 && PyErr_Occurred())) return v;
    PyErr_Clear();
    return py::str(obj).cast<std::string>();
  }
  if (py::isinstance<py::float_>(obj)) return obj.cast<double>();
  if (py::isinstance<py::str>(obj)) return obj.cast<std::string>();
  if (py::isinstance<py::bytes>(obj)) return obj.cast<std::string>();
  if (py::isinstance<py::dict>(obj)) {
    json out = json::object();
    for (auto item : py::reinterpret_borrow<py::dict>(obj))
      out[py::str(item.first).cast<std::string>()] = toJson(item.second);
    return out;
  }
  if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    json out = json::array();
    for (auto item : obj) out.push_back(toJson(item));
    return out;
  }
  return py::repr(obj).cast<std::string>();
}

py::object fromJson(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return py::none();
    case json::value_t::boolean:
      return py::bool_(v.get<bool>());
    case json::value_t::number_integer:
      return py::int_(v.get<long long>());
    case json::value_t::number_unsigned:
      return py::int_(v.get<unsigned long long>());
    case json::value_t::number_float:
      return py::float_(v.get<double>());
    case json::value_t::string:
      return py::str(v.get<std::string>());
    case json::value_t::array: {
      py::list out;
      for (const auto& x : v) out.append(fromJson(x));
      return std::move(out);
    }
    case json::value_t::object: {
      py::dict out;
      for (auto it = v.begin(); it != v.end(); ++it) out[py::str(it.key())] = fromJson(it.value());
      return std::move(out);
    }
    default:
      return py::none();
  }
}

std::string describe(const py::error_already_set& e) {
  std::string what = e.what();
  auto nl = what.find('\n');
  if (nl != std::string::npos) what = what.substr(0, nl);
  return what;
}

}  // namespace flagprop
