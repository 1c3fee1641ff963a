#include "core/sandbox.h"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <tuple>
#include <unordered_map>
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
// Puts `target` back to `snap` (keys of `keepUnlessWatched`'s unwatched
// names that the case added stay); whether anything was put back.
// `what`, where given, gets the first key put back (added, or replaced or
// deleted) when that key is a str.
bool restoreDict(py::dict target, py::dict snap, const std::vector<std::string>* keepUnlessWatched = nullptr,
                 std::string* what = nullptr) {
  if (sameItems(target.ptr(), snap.ptr())) return false;
  std::vector<py::object> extra;
  for (auto item : target)
    if (!snap.contains(item.first) && !(keepUnlessWatched && !watched(view(item.first), *keepUnlessWatched)))
      extra.push_back(py::reinterpret_borrow<py::object>(item.first));
  const auto name = [&](py::handle k, const char* how) {
    if (what && what->empty() && PyUnicode_Check(k.ptr())) *what = std::string(view(k)) + how;
  };
  for (auto& k : extra) {
    name(k, " added");
    PyDict_DelItem(target.ptr(), k.ptr());
  }
  bool put = !extra.empty();
  for (auto item : snap) {
    PyObject* cur = PyDict_GetItem(target.ptr(), item.first.ptr());
    if (cur != item.second.ptr()) {
      name(item.first, cur ? " replaced" : " removed");
      PyDict_SetItem(target.ptr(), item.first.ptr(), item.second.ptr());
      put = true;
    }
  }
  return put;
}

// Puts class `cls`'s dict back to `snap`; whether it differed.
bool restoreClass(py::handle cls, py::dict snap) {
  if (sameItems(typeDict(cls), snap.ptr())) return false;
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
  return true;
}

// pybind11's py::dict(x) / py::list(x) only borrow when x already has that
// type; a snapshot needs a real copy.
py::dict copyDict(py::handle d) { return py::reinterpret_steal<py::dict>(PyDict_Copy(d.ptr())); }

// A dict's version: CPython gives every dict a new value of a global counter
// on each change made through any path (PEP 509's ma_version_tag; 3.12 and
// 3.13 keep it, deprecated, above flag bits that are shifted off: 8 watcher
// bits in 3.12 (the counter steps by 1 << 8), plus 4 bits of a mutation
// counter in 3.13 (steps of 1 << 12); CPython's Include/internal
// pycore_dict_state.h and Objects/dictobject.c). Two equal versions mean no
// change in between. 0 where this Python does not keep one (3.14 on: then
// every snapshot is a fresh copy).
uint64_t dictVersion(PyObject* d) {
#if PY_VERSION_HEX >= 0x030E0000
  (void)d;
  return 0;
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#if PY_VERSION_HEX >= 0x030D0000
  return reinterpret_cast<PyDictObject*>(d)->ma_version_tag >> 12;  // 3.13: 8 watcher + 4 mutation-counter bits
#elif PY_VERSION_HEX >= 0x030C0000
  return reinterpret_cast<PyDictObject*>(d)->ma_version_tag >> 8;  // 3.12: DICT_VERSION_INCREMENT is 1 << 8 (watchers)
#else
  return reinterpret_cast<PyDictObject*>(d)->ma_version_tag;  // 3.11: + 1 per change
#endif
#pragma GCC diagnostic pop
#endif
}

// What a sandbox restores from: the sys.modules copy and each watched module
// dict and class with its copy and the version it had when copied (0:
// unknown). After a restore every dict again holds its copy, so the versions
// are updated and the next case reuses the whole plan without walking
// sys.modules or copying anything (the warm case: a few thousand version
// reads).
struct Saved {
  py::object owner;  // a module's __dict__, or a class
  py::dict copy;
  uint64_t version;
};
struct Plan {
  std::vector<std::string> roots;
  py::dict modules;  // sys.modules copy
  uint64_t modulesVersion = 0;
  std::vector<Saved> dicts;    // module __dict__s
  std::vector<Saved> classes;  // classes (their tp_dict)
  bool inUse = false;          // a live sandbox restores from it (a nested one builds its own)
};

// Snapshots kept between cases: a dict unchanged since its last copy (same
// version) is not copied again. Entries not used by the latest sandbox are
// dropped, so dicts of modules and classes a case made do not accumulate.
struct SnapshotCache {
  struct Entry {
    py::object dict;  // keeps the pointer valid
    uint64_t version = 0;
    py::dict copy;
    uint64_t used = 0;
  };
  std::unordered_map<PyObject*, Entry> entries;
  uint64_t generation = 0;
  // Which classes a module's dict holds, by the module dict's version.
  struct Classes {
    uint64_t version = 0;
    std::vector<py::object> classes;
    uint64_t used = 0;
  };
  std::unordered_map<PyObject*, Classes> classesOf;
  // The last sandbox's list of watched dicts with their copies (see Plan):
  // reused as is while sys.modules and every watched module dict keep the
  // versions they had after its restore.
  std::shared_ptr<struct Plan> plan;
  // The loggers of logging's loggerDict with their __dict__s, by its version.
  struct Loggers {
    uint64_t version = 0;
    std::vector<std::pair<py::object, py::object>> loggers;
  } loggers;

  // A copy of `d` as it is now, and its version.
  std::pair<py::dict, uint64_t> snapshot(py::handle d) {
    const uint64_t v = dictVersion(d.ptr());
    auto it = entries.find(d.ptr());
    if (v != 0 && it != entries.end() && it->second.version == v) {
      it->second.used = generation;
      return {it->second.copy, v};
    }
    Entry e{py::reinterpret_borrow<py::object>(d), v, copyDict(d), generation};
    py::dict copy = e.copy;
    entries[d.ptr()] = std::move(e);
    return {copy, v};
  }
  void dropUnused() {
    for (auto it = entries.begin(); it != entries.end();)
      it = it->second.used == generation ? std::next(it) : entries.erase(it);
    for (auto it = classesOf.begin(); it != classesOf.end();)
      it = it->second.used == generation ? std::next(it) : classesOf.erase(it);
  }
};

SnapshotCache& cache() {
  static SnapshotCache* c = new SnapshotCache;  // never destroyed: it holds Python objects past finalization
  return *c;
}
py::list copyList(py::handle l) { return py::reinterpret_steal<py::list>(PySequence_List(l.ptr())); }

// Puts the process's environment (what a child process inherits) back to
// `saved` ("KEY=VALUE" strings) where it differs: os.environ is put back
// through Python, but os.putenv / os.unsetenv and C code change only this.
// Whether it differed.
bool restoreCEnviron(const std::vector<std::string>& saved) {
  {  // the common case: nothing changed, the same strings in the same order
    size_t i = 0;
    char** e = environ;
    while (e && *e && i < saved.size() && saved[i] == *e) ++e, ++i;
    if (i == saved.size() && !(e && *e)) return false;
  }
  const auto key = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  std::unordered_map<std::string, std::string> want;  // key -> value
  for (const auto& kv : saved) want.emplace(key(kv), kv.substr(kv.find('=') + 1));
  std::vector<std::string> drop;
  for (char** e = environ; e && *e; ++e)
    if (!want.count(key(*e))) drop.push_back(key(*e));
  for (const auto& k : drop) unsetenv(k.c_str());
  for (const auto& [k, value] : want) {
    const char* cur = getenv(k.c_str());
    if (!cur || value != cur) setenv(k.c_str(), value.c_str(), 1);
  }
  return true;
}

// The cold path: walks sys.modules for the watched modules and their classes
// (copies reused by dict version, see SnapshotCache).
std::shared_ptr<Plan> makePlan(py::dict mods, const std::vector<std::string>& roots, SnapshotCache& c) {
  auto plan = std::make_shared<Plan>();
  plan->roots = roots;
  ++c.generation;
  std::tie(plan->modules, plan->modulesVersion) = c.snapshot(mods);
  // A class is snapshotted once, however many modules import it (FlagGems'
  // op modules all import LibEntry and friends).
  std::unordered_set<PyObject*> seenClasses;
  const auto addClass = [&](py::handle cls) {
    if (!seenClasses.insert(cls.ptr()).second) return;
    PyObject* td = typeDict(cls);
    if (!td) return;
    auto [copy, v] = c.snapshot(td);
    plan->classes.push_back({py::reinterpret_borrow<py::object>(cls), copy, v});
  };
  for (auto item : mods) {
    const std::string_view name = view(item.first);
    if (!watched(name, roots)) continue;
    py::object d = py::getattr(item.second, "__dict__", py::none());
    if (!py::isinstance<py::dict>(d)) continue;
    auto [copy, v] = c.snapshot(d);
    plan->dicts.push_back({d, copy, v});
    if (name == "torch") {
      PyObject* tensor = PyDict_GetItemString(d.ptr(), "Tensor");
      if (tensor && PyType_Check(tensor)) addClass(tensor);
    }
    if (watchedExactly(name)) continue;
    auto& known = c.classesOf[d.ptr()];
    known.used = c.generation;
    if (v == 0 || known.version != v) {  // the module's dict changed: find its classes again
      known.version = v;
      known.classes.clear();
      Py_ssize_t pos = 0;
      PyObject *key = nullptr, *value = nullptr;
      while (PyDict_Next(d.ptr(), &pos, &key, &value)) {
        if (!PyType_Check(value)) continue;
        py::handle cls(value);
        py::object cmod = py::getattr(cls, "__module__", py::none());
        if (cmod.is_none() || !watched(view(cmod), roots)) continue;
        known.classes.push_back(py::reinterpret_borrow<py::object>(cls));
      }
    }
    for (const auto& cls : known.classes) addClass(cls);
  }
  c.dropUnused();
  return plan;
}

}  // namespace

struct __attribute__((visibility("hidden"))) Sandbox::Impl {
  bool restored = false;
  std::vector<std::string> roots;
  py::list metaPath, pathHooks;
  py::object threadTrace, threadProfile;
  py::object logDisable;
  // Each logger's settings then: level, disabled, propagate and handlers (a
  // copy where it had any), with its __dict__'s version, so that a logger the
  // case did not assign to is not touched (setLevel clears every logger's cache).
  struct LoggerState {
    py::object logger, dict;
    uint64_t version;
    py::object level, disabled, propagate;
    py::object handlers;  // the list object
    py::list handlersCopy;
  };
  std::vector<LoggerState> loggers;
  uint64_t managerVersion = 0;  // logging's manager's __dict__ (its `disable`)
  py::object defaultDtype, gradEnabled, cwd;
  int recursionLimit = 0;
  std::shared_ptr<Plan> plan;
  bool reused = false;
  std::string walkedBecause;
  std::string changed;  // what the restore found changed, the first found ("": nothing)
  void note(const std::string& what) {
    if (changed.empty()) changed = what;
  }
  py::list path;
  py::object environ;                 // os.environ as a dict, made only where os.environ has no _data
  py::object environData;             // os.environ._data copy (encoded keys and values)
  std::vector<std::string> cEnviron;  // the process's own environment ("KEY=VALUE"): os.putenv bypasses os.environ
  py::list filters;
  py::object trace, profile;
};

Sandbox::Sandbox(const std::vector<std::string>& extraRoots) : impl_(new Impl) {
  try {
    snapshot(extraRoots);
  } catch (...) {
    delete impl_;  // no destructor runs for an object whose constructor threw
    throw;
  }
}

void Sandbox::snapshot(const std::vector<std::string>& extraRoots) {
  std::vector<std::string> roots = {"flag_gems", "torch_fl", "triton", "flagprop_target", "flagprop", "flagprop_mocks"};
  roots.insert(roots.end(), extraRoots.begin(), extraRoots.end());
  impl_->roots = roots;
  py::module_ sys = py::module_::import("sys");
  py::dict mods = sys.attr("modules");
  SnapshotCache& c = cache();
  const auto current = [](const Saved& x, PyObject* d) { return x.version != 0 && d && dictVersion(d) == x.version; };
  if (!c.plan || c.plan->inUse || c.plan->roots != roots)
    impl_->walkedBecause = "first";
  else if (c.plan->modulesVersion == 0 || dictVersion(mods.ptr()) != c.plan->modulesVersion)
    impl_->walkedBecause = "sys.modules changed";
  else {
    // The warm path: nothing imported or dropped since the last restore. A
    // module dict changed outside a sandbox may hold other classes now:
    // then the plan is made again below.
    bool same = true;
    for (const auto& x : c.plan->dicts)
      if (!current(x, x.owner.ptr())) {
        same = false;
        impl_->walkedBecause = "a watched module's dict changed";
        for (auto item : mods)
          if (py::getattr(item.second, "__dict__", py::none()).ptr() == x.owner.ptr()) {
            impl_->walkedBecause = "module " + std::string(view(item.first)) + " changed";
            break;
          }
        break;
      }
    if (same) {
      for (auto& x : c.plan->classes)
        if (!current(x, typeDict(x.owner))) {
          x.copy = copyDict(py::handle(typeDict(x.owner)));
          x.version = dictVersion(typeDict(x.owner));
        }
      impl_->plan = c.plan;
      impl_->reused = true;
    }
  }
  if (!impl_->plan) impl_->plan = makePlan(mods, roots, c);
  impl_->path = copyList(sys.attr("path"));
  py::object osEnviron = py::module_::import("os").attr("environ");
  py::object data = py::getattr(osEnviron, "_data", py::none());
  if (py::isinstance<py::dict>(data))  // a C-level copy; decoded only if a case changed it
    impl_->environData = copyDict(data);
  else
    impl_->environ = py::dict(osEnviron);
  for (char** e = environ; e && *e; ++e) impl_->cEnviron.emplace_back(*e);
  py::module_ warnings = py::module_::import("warnings");
  impl_->filters = copyList(warnings.attr("filters"));
  impl_->trace = sys.attr("gettrace")();
  impl_->profile = sys.attr("getprofile")();
  impl_->metaPath = copyList(sys.attr("meta_path"));
  impl_->pathHooks = copyList(sys.attr("path_hooks"));
  py::module_ threading = py::module_::import("threading");
  impl_->threadTrace = py::getattr(threading, "_trace_hook", py::none());
  impl_->threadProfile = py::getattr(threading, "_profile_hook", py::none());
  py::module_ logging = py::module_::import("logging");
  impl_->logDisable = logging.attr("root").attr("manager").attr("disable");
  // The root logger and every logger of loggerDict, their settings read
  // straight from their __dict__s; the list (hundreds of loggers with torch
  // 2.x) is found again only when loggerDict changed.
  py::object loggerDict = logging.attr("root").attr("manager").attr("loggerDict");
  auto& known = cache().loggers;
  if (!py::isinstance<py::dict>(loggerDict) || dictVersion(loggerDict.ptr()) == 0 ||
      dictVersion(loggerDict.ptr()) != known.version) {
    known.version = py::isinstance<py::dict>(loggerDict) ? dictVersion(loggerDict.ptr()) : 0;
    known.loggers.clear();
    const auto add = [&](py::handle logger) {
      if (!py::hasattr(logger, "setLevel")) return;
      py::object d = py::getattr(logger, "__dict__", py::none());
      if (py::isinstance<py::dict>(d)) known.loggers.emplace_back(py::reinterpret_borrow<py::object>(logger), d);
    };
    add(logging.attr("root"));
    for (auto kv : py::dict(loggerDict)) add(kv.second);
  }
  impl_->loggers.reserve(known.loggers.size());
  const auto item = [](py::handle d, const char* k) {
    PyObject* v = PyDict_GetItemString(d.ptr(), k);
    return v ? py::reinterpret_borrow<py::object>(v) : py::object();
  };
  for (const auto& [logger, d] : known.loggers) {
    Impl::LoggerState st{logger,
                         d,
                         dictVersion(d.ptr()),
                         item(d, "level"),
                         item(d, "disabled"),
                         item(d, "propagate"),
                         item(d, "handlers"),
                         py::list()};
    if (st.handlers && PyList_Check(st.handlers.ptr()) && PyList_GET_SIZE(st.handlers.ptr()) > 0)
      st.handlersCopy = copyList(st.handlers);
    impl_->loggers.push_back(std::move(st));
  }
  impl_->managerVersion = dictVersion(py::getattr(logging.attr("root").attr("manager"), "__dict__", py::none()).ptr());
  py::module_ torch = py::module_::import("torch");
  impl_->defaultDtype = torch.attr("get_default_dtype")();
  impl_->gradEnabled = torch.attr("is_grad_enabled")();
  impl_->cwd = py::module_::import("os").attr("getcwd")();
  impl_->recursionLimit = sys.attr("getrecursionlimit")().cast<int>();
  // Last: a snapshot that failed above leaves the plan free for the next sandbox.
  impl_->plan->inUse = true;
  if (!c.plan || !c.plan->inUse || c.plan == impl_->plan) c.plan = impl_->plan;
}

void Sandbox::restore() {
  if (impl_->restored) return;
  impl_->restored = true;
  impl_->plan->inUse = false;
  py::module_ sys = py::module_::import("sys");
  if (!sys.attr("gettrace")().is(impl_->trace) || !sys.attr("getprofile")().is(impl_->profile))
    impl_->note("the trace or profile function");
  sys.attr("settrace")(impl_->trace);
  sys.attr("setprofile")(impl_->profile);
  // Modules a case added are removed only under the watched roots (the code
  // under test and its mocks); a library the case imported (functorch, a
  // torch submodule) stays, since importing it again can fail.
  // A dict whose version is the one it had when copied was not changed.
  const auto changed = [](PyObject* d, uint64_t v) { return v == 0 || !d || dictVersion(d) != v; };
  Plan& plan = *impl_->plan;
  py::dict mods = sys.attr("modules");
  // Noted where something was put back (a dict written with what it held
  // already, or a library imported and kept, leaves nothing to note).
  std::string what;
  if (changed(mods.ptr(), plan.modulesVersion) && restoreDict(mods, plan.modules, &impl_->roots, &what))
    impl_->note("sys.modules (" + what + ")");
  for (auto& s : plan.dicts) {
    what.clear();
    if (changed(s.owner.ptr(), s.version) && restoreDict(s.owner, s.copy, nullptr, &what)) {
      py::object mod = s.owner.contains("__name__") ? py::object(s.owner["__name__"]) : py::str("?");
      impl_->note("a watched module's dict (" + py::str(mod).cast<std::string>() + "." + what + ")");
    }
  }
  for (auto& s : plan.classes)
    if (changed(typeDict(s.owner), s.version) && restoreClass(s.owner, s.copy)) impl_->note("a watched class's dict");
  // Every dict holds its copy again: the next case may reuse the plan, unless
  // sys.modules kept a library this case imported (not in the copy).
  if (PyDict_Size(mods.ptr()) == PyDict_Size(plan.modules.ptr())) {
    plan.modulesVersion = dictVersion(mods.ptr());
    for (auto& s : plan.dicts) s.version = dictVersion(s.owner.ptr());
    for (auto& s : plan.classes) s.version = dictVersion(typeDict(s.owner));
  } else {
    plan.modulesVersion = 0;
  }
  py::list path = sys.attr("path");
  if (!path.equal(impl_->path)) impl_->note("sys.path");
  path.attr("__setitem__")(py::slice(0, py::len(path), 1), impl_->path);
  py::object environ = py::module_::import("os").attr("environ");
  if (!impl_->environData.is_none()) {
    // os.environ's own dict (encoded keys and values); the environment it
    // mirrors is put back below, whatever changed it.
    if (restoreDict(py::getattr(environ, "_data"), impl_->environData)) impl_->note("os.environ");
  } else {
    py::dict saved = impl_->environ;
    for (auto k : py::list(environ.attr("keys")()))
      if (!saved.contains(k)) environ.attr("pop")(k, py::none());
    for (auto kv : saved)
      if (!environ.contains(kv.first) || !py::object(environ[kv.first]).equal(kv.second)) environ[kv.first] = kv.second;
  }
  if (restoreCEnviron(impl_->cEnviron)) impl_->note("the process environment");
  py::module_ warnings = py::module_::import("warnings");
  py::list filters = warnings.attr("filters");
  if (!filters.equal(impl_->filters)) impl_->note("warnings.filters");
  filters.attr("__setitem__")(py::slice(0, py::len(filters), 1), impl_->filters);
  if (py::hasattr(warnings, "_filters_mutated")) warnings.attr("_filters_mutated")();
  py::list metaPath = sys.attr("meta_path");
  py::list hooks = sys.attr("path_hooks");
  if (!metaPath.equal(impl_->metaPath) || !hooks.equal(impl_->pathHooks))
    impl_->note("sys.meta_path or sys.path_hooks");
  metaPath.attr("__setitem__")(py::slice(0, py::len(metaPath), 1), impl_->metaPath);
  hooks.attr("__setitem__")(py::slice(0, py::len(hooks), 1), impl_->pathHooks);
  py::module_ threading = py::module_::import("threading");
  if (!py::getattr(threading, "_trace_hook", py::none()).is(impl_->threadTrace) ||
      !py::getattr(threading, "_profile_hook", py::none()).is(impl_->threadProfile))
    impl_->note("the threads' trace or profile function");
  threading.attr("_trace_hook") = impl_->threadTrace;
  threading.attr("_profile_hook") = impl_->threadProfile;
  py::module_ logging = py::module_::import("logging");
  // setLevel and logging.disable clear every logger's cache (hundreds with
  // torch 2.x loaded): only where the case assigned them, also when the value
  // assigned last is the old one (a logger may have cached an answer between).
  py::object manager = logging.attr("root").attr("manager");
  py::object managerDict = py::getattr(manager, "__dict__", py::none());
  if (impl_->managerVersion == 0 || !py::isinstance<py::dict>(managerDict) ||
      dictVersion(managerDict.ptr()) != impl_->managerVersion ||
      !py::object(manager.attr("disable")).equal(impl_->logDisable)) {
    impl_->note("logging");
    logging.attr("disable")(impl_->logDisable);
  }
  const auto same = [](const Impl::LoggerState& l) {
    if (l.version != 0) return dictVersion(l.dict.ptr()) == l.version;
    // No dict versions (3.14 on): the settings themselves, so that an
    // unchanged logger does not clear every cache once per logger.
    for (const auto& [key, saved] : {std::pair<const char*, const py::object*>{"level", &l.level},
                                     {"disabled", &l.disabled},
                                     {"propagate", &l.propagate},
                                     {"handlers", &l.handlers}}) {
      PyObject* now = PyDict_GetItemString(l.dict.ptr(), key);
      if (now != saved->ptr()) return false;
    }
    return true;
  };
  for (auto& l : impl_->loggers) {
    if (same(l)) {
      // Not assigned to: only its handlers list may have changed in place.
      const Py_ssize_t n = l.handlers && PyList_Check(l.handlers.ptr()) ? PyList_GET_SIZE(l.handlers.ptr()) : -1;
      if (n >= 0 && (n != PyList_GET_SIZE(l.handlersCopy.ptr()) || (n > 0 && !l.handlers.equal(l.handlersCopy)))) {
        impl_->note("logging");
        l.handlers.attr("__setitem__")(py::slice(0, PyList_GET_SIZE(l.handlers.ptr()), 1), l.handlersCopy);
      }
      continue;
    }
    impl_->note("logging");  // the case assigned to this logger
    for (const auto& [key, value] : {std::pair<const char*, py::object*>{"disabled", &l.disabled},
                                     {"propagate", &l.propagate},
                                     {"handlers", &l.handlers}})
      if (*value) PyDict_SetItemString(l.dict.ptr(), key, value->ptr());
    if (l.handlers && PyList_Check(l.handlers.ptr()))
      l.handlers.attr("__setitem__")(py::slice(0, PyList_GET_SIZE(l.handlers.ptr()), 1), l.handlersCopy);
    if (l.level) l.logger.attr("setLevel")(l.level);  // also clears the loggers' caches
  }
  py::module_ torch = py::module_::import("torch");
  if (!torch.attr("get_default_dtype")().equal(impl_->defaultDtype)) {
    impl_->note("torch's default dtype");
    torch.attr("set_default_dtype")(impl_->defaultDtype);
  }
  if (!torch.attr("is_grad_enabled")().equal(impl_->gradEnabled)) {
    impl_->note("torch's grad mode");
    torch.attr("set_grad_enabled")(impl_->gradEnabled);
  }
  py::module_ os = py::module_::import("os");
  bool cwdSame = false;
  try {
    cwdSame = os.attr("getcwd")().equal(impl_->cwd);
  } catch (const py::error_already_set&) {  // the case removed the directory it went to
  }
  if (!cwdSame) {
    impl_->note("the working directory");
    os.attr("chdir")(impl_->cwd);
  }
  if (sys.attr("getrecursionlimit")().cast<int>() != impl_->recursionLimit) impl_->note("the recursion limit");
  sys.attr("setrecursionlimit")(impl_->recursionLimit);
}

bool Sandbox::reused() const { return impl_->reused; }
const std::string& Sandbox::walkedBecause() const { return impl_->walkedBecause; }
const std::string& Sandbox::changed() const { return impl_->changed; }

Sandbox::~Sandbox() {
  try {
    restore();
  } catch (...) {
    // A destructor must not throw; a failed restore shows up in the next
    // case's checks instead, and the next sandbox walks sys.modules afresh.
    impl_->plan->modulesVersion = 0;
  }
  delete impl_;
}

}  // namespace flagprop
