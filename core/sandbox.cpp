#include "core/sandbox.h"

#include <unordered_set>

#include <string_view>

namespace flagprop {

namespace {

// Modules watched by exact name (not their submodules).
bool watchedExactly(std::string_view name) {
  return name == "torch" || name == "torch.functional" || name == "builtins";
}

bool watched(std::string_view name, const std::vector<std::string>& roots) {
  if (watchedExactly(name)) return true;
  for (const auto& r : roots)
    if (name == r || (name.size() > r.size() && name.compare(0, r.size(), r) == 0 && name[r.size()] == '.'))
      return true;
  return false;
}

// The UTF-8 view of a str key without allocating (empty for non-str keys).
std::string_view view(py::handle key) {
  if (!PyUnicode_Check(key.ptr())) return {};
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(key.ptr(), &n);
  if (!p) {
    PyErr_Clear();
    return {};
  }
  return {p, static_cast<size_t>(n)};
}

// Whether dict `d` holds exactly the items of `snap` (same key set, identical
// value objects): one pass of the C API, the common case of a module or class
// the case did not touch.
bool sameItems(PyObject* d, PyObject* snap) {
  if (!d || PyDict_Size(d) != PyDict_Size(snap)) return false;
  Py_ssize_t pos = 0;
  PyObject *k = nullptr, *v = nullptr;
  while (PyDict_Next(snap, &pos, &k, &v))
    if (PyDict_GetItem(d, k) != v) return false;
  return true;
}

// The real dict behind a class's __dict__ mapping proxy.
PyObject* typeDict(py::handle cls) { return reinterpret_cast<PyTypeObject*>(cls.ptr())->tp_dict; }

// Puts `target` (a dict) back to the contents of `snap` (a dict copy), touching
// only the keys that differ.
void restoreDict(py::dict target, py::dict snap, const std::vector<std::string>* keepUnlessWatched = nullptr) {
  if (sameItems(target.ptr(), snap.ptr())) return;
  std::vector<py::object> extra;
  for (auto item : target)
    if (!snap.contains(item.first) && !(keepUnlessWatched && !watched(view(item.first), *keepUnlessWatched)))
      extra.push_back(py::reinterpret_borrow<py::object>(item.first));
  for (auto& k : extra) PyDict_DelItem(target.ptr(), k.ptr());
  for (auto item : snap) {
    PyObject* cur = PyDict_GetItem(target.ptr(), item.first.ptr());
    if (cur != item.second.ptr()) PyDict_SetItem(target.ptr(), item.first.ptr(), item.second.ptr());
  }
}

void restoreClass(py::handle cls, py::dict snap) {
  if (sameItems(typeDict(cls), snap.ptr())) return;
  py::dict now = py::dict(cls.attr("__dict__"));
  for (auto item : now) {
    std::string k = py::str(item.first);
    if (k == "__dict__" || k == "__weakref__") continue;
    if (!snap.contains(item.first)) PyObject_DelAttr(cls.ptr(), item.first.ptr());
  }
  for (auto item : snap) {
    std::string k = py::str(item.first);
    if (k == "__dict__" || k == "__weakref__" || k == "__doc__") continue;
    PyObject* cur = PyDict_GetItem(now.ptr(), item.first.ptr());
    if (cur != item.second.ptr()) PyObject_SetAttr(cls.ptr(), item.first.ptr(), item.second.ptr());
  }
  PyErr_Clear();
}

// pybind11's py::dict(x) / py::list(x) only borrow when x already has that
// type; a snapshot needs a real copy.
py::dict copyDict(py::handle d) { return py::reinterpret_steal<py::dict>(PyDict_Copy(d.ptr())); }
py::list copyList(py::handle l) { return py::reinterpret_steal<py::list>(PySequence_List(l.ptr())); }

}  // namespace

struct Sandbox::Impl {
  bool restored = false;
  std::vector<std::string> roots;
  py::list metaPath, pathHooks;
  py::object threadTrace, threadProfile;
  py::object logDisable;
  std::vector<std::pair<py::object, py::object>> loggerLevels;  // (logger, level)
  py::object defaultDtype, gradEnabled, cwd;
  int recursionLimit = 0;
  py::dict modules;                                  // sys.modules copy
  std::vector<std::pair<py::dict, py::dict>> dicts;  // (module __dict__, copy)
  std::vector<std::pair<py::object, py::dict>> classes;
  py::list path;
  py::dict environ;
  py::object environData;  // os.environ._data copy: a cheap "unchanged?" test
  py::list filters;
  py::list handlers;
  py::object level;
  py::object trace, profile;
};

Sandbox::Sandbox(const std::vector<std::string>& extraRoots) : impl_(new Impl) {
  std::vector<std::string> roots = {"flag_gems", "torch_fl", "triton", "flagprop_target", "flagprop", "flagprop_mocks"};
  roots.insert(roots.end(), extraRoots.begin(), extraRoots.end());
  impl_->roots = roots;
  py::module_ sys = py::module_::import("sys");
  py::dict mods = sys.attr("modules");
  impl_->modules = copyDict(mods);
  py::module_ builtins = py::module_::import("builtins");
  py::object typeType = builtins.attr("type");
  // A class is snapshotted once, however many modules import it (FlagGems'
  // op modules all import LibEntry and friends).
  std::unordered_set<PyObject*> seenClasses;
  for (auto item : mods) {
    const std::string_view name = view(item.first);
    if (!watched(name, roots)) continue;
    py::object d = py::getattr(item.second, "__dict__", py::none());
    if (!py::isinstance<py::dict>(d)) continue;
    py::dict md = py::reinterpret_borrow<py::dict>(d);
    impl_->dicts.emplace_back(md, copyDict(md));
    if (name == "torch") {
      py::object tensor = md.attr("get")("Tensor");
      if (!tensor.is_none()) impl_->classes.emplace_back(tensor, py::dict(tensor.attr("__dict__")));
    }
    if (watchedExactly(name)) continue;
    Py_ssize_t pos = 0;
    PyObject *key = nullptr, *value = nullptr;
    while (PyDict_Next(md.ptr(), &pos, &key, &value)) {
      if (!PyType_Check(value) || !seenClasses.insert(value).second) continue;
      py::handle cls(value);
      py::object cmod = py::getattr(cls, "__module__", py::none());
      if (cmod.is_none() || !watched(view(cmod), roots)) continue;
      PyObject* td = typeDict(cls);
      impl_->classes.emplace_back(py::reinterpret_borrow<py::object>(cls),
                                  td ? copyDict(td) : py::dict(cls.attr("__dict__")));
    }
  }
  impl_->path = copyList(sys.attr("path"));
  py::object osEnviron = py::module_::import("os").attr("environ");
  impl_->environ = py::dict(osEnviron);
  py::object data = py::getattr(osEnviron, "_data", py::none());
  impl_->environData = py::isinstance<py::dict>(data) ? py::object(copyDict(data)) : py::object(py::none());
  py::module_ warnings = py::module_::import("warnings");
  impl_->filters = copyList(warnings.attr("filters"));
  py::object root = py::module_::import("logging").attr("getLogger")();
  impl_->handlers = copyList(root.attr("handlers"));
  impl_->level = root.attr("level");
  impl_->trace = sys.attr("gettrace")();
  impl_->profile = sys.attr("getprofile")();
  impl_->metaPath = copyList(sys.attr("meta_path"));
  impl_->pathHooks = copyList(sys.attr("path_hooks"));
  py::module_ threading = py::module_::import("threading");
  impl_->threadTrace = py::getattr(threading, "_trace_hook", py::none());
  impl_->threadProfile = py::getattr(threading, "_profile_hook", py::none());
  py::module_ logging = py::module_::import("logging");
  impl_->logDisable = logging.attr("root").attr("manager").attr("disable");
  for (auto kv : py::dict(logging.attr("root").attr("manager").attr("loggerDict")))
    if (py::hasattr(kv.second, "setLevel"))
      impl_->loggerLevels.emplace_back(py::reinterpret_borrow<py::object>(kv.second), kv.second.attr("level"));
  py::module_ torch = py::module_::import("torch");
  impl_->defaultDtype = torch.attr("get_default_dtype")();
  impl_->gradEnabled = torch.attr("is_grad_enabled")();
  impl_->cwd = py::module_::import("os").attr("getcwd")();
  impl_->recursionLimit = sys.attr("getrecursionlimit")().cast<int>();
}

void Sandbox::restore() {
  if (impl_->restored) return;
  impl_->restored = true;
  py::module_ sys = py::module_::import("sys");
  sys.attr("settrace")(impl_->trace);
  sys.attr("setprofile")(impl_->profile);
  // Modules a case added are removed only under the watched roots (the code
  // under test and its mocks); a library the case imported (functorch, a
  // torch submodule) stays, since importing it again can fail.
  restoreDict(sys.attr("modules"), impl_->modules, &impl_->roots);
  for (auto& [d, snap] : impl_->dicts) restoreDict(d, snap);
  for (auto& [cls, snap] : impl_->classes) restoreClass(cls, snap);
  py::list path = sys.attr("path");
  path.attr("__setitem__")(py::slice(0, py::len(path), 1), impl_->path);
  py::object environ = py::module_::import("os").attr("environ");
  const bool envUnchanged = !impl_->environData.is_none() &&
                            py::getattr(environ, "_data", py::none()).equal(impl_->environData);
  if (!envUnchanged) {
    for (auto k : py::list(environ.attr("keys")()))
      if (!impl_->environ.contains(k)) environ.attr("pop")(k, py::none());
    for (auto kv : impl_->environ)
      if (!environ.contains(kv.first) || !py::object(environ[kv.first]).equal(kv.second)) environ[kv.first] = kv.second;
  }
  py::module_ warnings = py::module_::import("warnings");
  py::list filters = warnings.attr("filters");
  filters.attr("__setitem__")(py::slice(0, py::len(filters), 1), impl_->filters);
  if (py::hasattr(warnings, "_filters_mutated")) warnings.attr("_filters_mutated")();
  py::object root = py::module_::import("logging").attr("getLogger")();
  py::list handlers = root.attr("handlers");
  handlers.attr("__setitem__")(py::slice(0, py::len(handlers), 1), impl_->handlers);
  root.attr("setLevel")(impl_->level);
  py::list metaPath = sys.attr("meta_path");
  metaPath.attr("__setitem__")(py::slice(0, py::len(metaPath), 1), impl_->metaPath);
  py::list hooks = sys.attr("path_hooks");
  hooks.attr("__setitem__")(py::slice(0, py::len(hooks), 1), impl_->pathHooks);
  py::module_ threading = py::module_::import("threading");
  threading.attr("_trace_hook") = impl_->threadTrace;
  threading.attr("_profile_hook") = impl_->threadProfile;
  py::module_ logging = py::module_::import("logging");
  logging.attr("disable")(impl_->logDisable);
  for (auto& [logger, level] : impl_->loggerLevels)
    if (!py::object(logger.attr("level")).equal(level)) logger.attr("setLevel")(level);
  py::module_ torch = py::module_::import("torch");
  torch.attr("set_default_dtype")(impl_->defaultDtype);
  torch.attr("set_grad_enabled")(impl_->gradEnabled);
  py::module_ os = py::module_::import("os");
  if (!os.attr("getcwd")().equal(impl_->cwd)) os.attr("chdir")(impl_->cwd);
  sys.attr("setrecursionlimit")(impl_->recursionLimit);
}

Sandbox::~Sandbox() {
  try {
    restore();
  } catch (...) {
    // A destructor must not throw; a failed restore shows up in the next
    // case's checks instead.
  }
  delete impl_;
}

}  // namespace flagprop
