#include "ops/op_run.h"

#include "core/sandbox.h"
#include "core/tensor_bridge.h"

#include <torch/torch.h>

#include <chrono>
#include <sstream>

namespace flagprop {

namespace {

using Clock = std::chrono::steady_clock;
using Tensors = std::vector<at::Tensor>;

double usSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

std::string dtypeName(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "float32";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kDouble: return "float64";
    case at::kInt: return "int32";
    case at::kLong: return "int64";
    case at::kBool: return "bool";
    case at::kByte: return "uint8";
    case at::kChar: return "int8";
    case at::kShort: return "int16";
    default: return c10::toString(t);
  }
}

std::string str(at::IntArrayRef v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

std::string deviceName(const at::Tensor& t) { return t.device().str(); }

// A tensor's whole storage as a 1-D tensor (same device), or undefined when
// the storage holds no element.
at::Tensor storageOf(const at::Tensor& t) {
  const int64_t n = static_cast<int64_t>(t.storage().nbytes()) / static_cast<int64_t>(t.element_size());
  if (n <= 0) return at::Tensor();
  return t.as_strided({n}, {1}, 0);
}

// Bit patterns of a CPU tensor (so NaNs and -0.0 compare exactly).
at::Tensor bits(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  switch (c.element_size()) {
    case 1: return c.view(at::kByte);
    case 2: return c.view(at::kShort);
    case 4: return c.view(at::kInt);
    default: return c.view(at::kLong);
  }
}

bool sameBits(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() && at::equal(bits(a), bits(b));
}

// Multi-index of flat (row-major) element `i` of `shape`.
std::string indexOf(int64_t i, at::IntArrayRef shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return str(idx);
}

std::string num(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

/// The first finding of comparing `actual` with `expected` (CPU tensors of
/// the same shape) under `tol`, or "".
std::string compareClose(const at::Tensor& actual, const at::Tensor& expected, const Tolerance& tol) {
  if (actual.sizes() != expected.sizes())
    return "shape " + str(actual.sizes()) + ", expected " + str(expected.sizes());
  if (actual.numel() == 0) return "";
  if (actual.scalar_type() == expected.scalar_type() && sameBits(actual, expected)) return "";  // the common case
  const at::Tensor a = actual.to(at::kDouble).reshape({-1});
  const at::Tensor e = expected.to(at::kDouble).reshape({-1});
  const at::Tensor an = a.isnan(), en = e.isnan();
  const at::Tensor infs = a.isinf().logical_or(e.isinf());
  const at::Tensor diff = (a - e).abs();
  at::Tensor bad = an.logical_xor(en);
  bad = bad.logical_or(infs.logical_and(a.ne(e)).logical_and(an.logical_not()));
  const at::Tensor finite = an.logical_or(en).logical_or(infs).logical_not();
  bad = bad.logical_or(finite.logical_and(diff.gt(e.abs() * tol.rtol + tol.atol)));
  const int64_t count = bad.sum().item<int64_t>();
  if (count == 0) return "";
  const int64_t first = bad.nonzero().index({0, 0}).item<int64_t>();
  const double maxErr = at::where(finite, diff, at::zeros_like(diff)).max().item<double>();
  std::ostringstream os;
  os << count << " of " << a.numel() << " elements beyond rtol " << tol.rtol << " atol " << tol.atol
     << "; first at " << indexOf(first, actual.sizes()) << ": actual " << num(a[first].item<double>())
     << ", expected " << num(e[first].item<double>()) << " (max abs error " << num(maxErr) << ")";
  return os.str();
}

/// What the harness records about one input before the call.
struct InputSnap {
  at::Tensor tensor;   // the device tensor (kept alive)
  at::Tensor storage;  // CPU copy of its whole storage
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  int64_t version = 0;
};

InputSnap snapInput(const at::Tensor& t) {
  InputSnap s;
  s.tensor = t;
  const at::Tensor st = storageOf(t);
  if (st.defined()) s.storage = st.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
  s.sizes = t.sizes().vec();
  s.strides = t.strides().vec();
  s.offset = t.storage_offset();
  s.version = static_cast<int64_t>(t._version());
  return s;
}

struct Range {
  uintptr_t lo = 0, hi = 0;
};

Range rangeOf(const at::Tensor& t) {
  const auto p = reinterpret_cast<uintptr_t>(t.storage().data_ptr().get());
  return {p, p + t.storage().nbytes()};
}

bool overlaps(const Range& a, const Range& b) { return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi; }

/// One pass (unpatched or patched) over the case's calls.
struct Pass {
  struct Call {
    std::string error;           // the op under test raised (one line)
    Tensors outputs;             // device outputs (kept alive for the later-call checks)
    Tensors snapshots;           // CPU copies taken right after the call
    std::vector<InputSnap> inputs;
  };
  std::vector<Call> calls;
  double deviceUs = 0;
};

}  // namespace

json setupOps(TargetSession& session) {
  py::gil_scoped_acquire gil;
  std::vector<std::string> names;
  for (const auto& e : catalog()) names.push_back(e.name);
  try {
    return toJson(helper("ops").attr("setup")(session.targetDict(), names));
  } catch (const py::error_already_set& e) {
    throw ManifestError(session.target().manifestPath + ": setting up the op under test failed (" + describe(e) + ")");
  }
}

json runOpCase(TargetSession& session, const OpEntry& entry, const OpCase& c) {
  const auto t0 = Clock::now();
  Sandbox sb;
  py::module_ ops = helper("ops");
  const std::string device = session.target().device;
  const json caseJson = toJson(c);
  json obs = {{"numerics", json::array()}, {"aliasing", json::array()}, {"calls", json::array()}};
  const int compiles0 = ops.attr("compile_count")().cast<int>();
  double referenceUs = 0;

  py::object runner = ops.attr("Runner")(session.targetDict(), c.op, fromJson(toJson(session.defaultGates())));

  // Reference per call: expected metadata (meta kernels, else CPU) and values.
  struct Expected {
    std::vector<std::string> dtypes;
    std::vector<std::vector<int64_t>> shapes;
    Tensors values;
    std::string source;
  };
  std::vector<Expected> expected;

  // CPU ATen rejects the arguments: the case cannot be judged.
  auto rejected = [&](size_t k, const std::exception& e) {
    const std::string what = e.what();
    obs["discard"] = "CPU ATen rejects call " + std::to_string(k) + ": " + what.substr(0, what.find('\n'));
  };
  std::vector<py::object> callArgs;  // each call's JSON as Python, converted once
  std::vector<py::list> cpuInputs;   // each call's CPU tensors (the op never sees them)
  for (const auto& cj : caseJson.at("calls")) callArgs.push_back(fromJson(cj));

  // The first pass builds the inputs and the reference; the second makes
  // fresh device copies of the same CPU tensors.
  auto runPass = [&](bool first) {
    Pass pass;
    for (size_t k = 0; k < c.calls.size(); ++k) {
      py::list devList;
      if (first) {
        py::tuple built = ops.attr("build_call")(callArgs[k], device);
        cpuInputs.push_back(py::list(built[0]));
        devList = py::list(built[1]);
      } else {
        devList = ops.attr("device_inputs")(callArgs[k], cpuInputs[k], device);
      }
      Tensors cpuIn, devIn;
      for (auto h : cpuInputs[k]) cpuIn.push_back(unwrapTensor(h));
      for (auto h : devList) devIn.push_back(unwrapTensor(h));
      if (first) {
        const auto r0 = Clock::now();
        Expected ex;
        Tensors meta;
        for (const auto& t : cpuIn) meta.push_back(at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta)));
        Tensors shapesFrom;
        try {
          shapesFrom = entry.reference(meta, c.calls[k]);
          ex.source = "meta";
        } catch (const std::exception&) {
          try {
            shapesFrom = entry.reference(cpuIn, c.calls[k]);
            ex.source = "cpu";
          } catch (const std::exception& e) {
            rejected(k, e);
            return pass;
          }
        }
        for (const auto& t : shapesFrom) {
          ex.dtypes.push_back(dtypeName(t.scalar_type()));
          ex.shapes.push_back(t.sizes().vec());
        }
        Tensors up;
        for (const auto& t : cpuIn) up.push_back(entry.upcast && t.is_floating_point() ? t.to(at::kDouble) : t);
        Tensors vals;
        try {
          vals = entry.reference(up, c.calls[k]);
        } catch (const std::exception& e) {
          rejected(k, e);
          return pass;
        }
        for (size_t i = 0; i < vals.size(); ++i) ex.values.push_back(vals[i].to(shapesFrom[i].scalar_type()));
        expected.push_back(ex);
        referenceUs += usSince(r0);
      }
      Pass::Call call;
      for (const auto& t : devIn) call.inputs.push_back(snapInput(t));
      const auto d0 = Clock::now();
      try {
        py::tuple outs = runner.attr("call")(callArgs[k], devList);
        for (auto h : outs) call.outputs.push_back(unwrapTensor(h));
        for (const auto& o : call.outputs) call.snapshots.push_back(o.to(at::kCPU, false, true));
      } catch (const py::error_already_set& e) {
        call.error = describe(e);
      } catch (const std::invalid_argument& e) {
        call.error = std::string("the op returned something that is not a tensor (") + e.what() + ")";
      }
      pass.deviceUs += usSince(d0);
      pass.calls.push_back(std::move(call));
    }
    return pass;
  };

  const Pass unpatched = runPass(true);
  if (obs.contains("discard")) return obs;

  const json inst = toJson(runner.attr("install")());
  Pass patched;
  bool active = false;
  if (!inst.at("present").get<bool>()) {
    obs["fast_path"] = "no installer";
    obs["patched_vs_unpatched"] = "not compared: the target has no installer";
  } else if (!inst.at("active").get<bool>()) {
    obs["fast_path"] = "inactive";
    obs["patched_vs_unpatched"] = "not compared: the installer did not install its fast path (see P1)";
    obs["install"] = inst.at("call");
  } else {
    active = true;
    obs["fast_path"] = "active";
    patched = runPass(false);
  }

  auto& numerics = obs["numerics"];
  auto& aliasing = obs["aliasing"];
  bool differ = false;
  const Pass& judged = active ? patched : unpatched;

  int raisedCalls = 0;  // calls whose outputs P6 could not check
  auto judgePass = [&](const Pass& pass, const std::string& which) {
    const std::string tag = active ? " (" + which + ")" : "";  // only one path ran otherwise
    for (size_t k = 0; k < pass.calls.size(); ++k) {
      const auto& call = pass.calls[k];
      const Expected& ex = expected[k];
      const std::string where = "call " + std::to_string(k) + tag;
      // P6: inputs unchanged (also when the op raised: it may have written first).
      for (size_t j = 0; j < call.inputs.size(); ++j) {
        const auto& s = call.inputs[j];
        const std::string in = where + ": input " + std::to_string(j);
        if (s.tensor.sizes().vec() != s.sizes || s.tensor.strides().vec() != s.strides ||
            s.tensor.storage_offset() != s.offset)
          aliasing.push_back(in + " metadata changed: sizes " + str(s.sizes) + " -> " + str(s.tensor.sizes()) +
                             ", strides " + str(s.strides) + " -> " + str(s.tensor.strides()) + ", storage offset " +
                             std::to_string(s.offset) + " -> " + std::to_string(s.tensor.storage_offset()));
        if (static_cast<int64_t>(s.tensor._version()) != s.version)
          aliasing.push_back(in + " version counter " + std::to_string(s.version) + " -> " +
                             std::to_string(s.tensor._version()) + " (written in place)");
        const at::Tensor now = storageOf(s.tensor);
        const int64_t before = s.storage.defined() ? s.storage.numel() : 0, after = now.defined() ? now.numel() : 0;
        if (before != after) {
          aliasing.push_back(in + " storage resized from " + std::to_string(before) + " to " + std::to_string(after) +
                             " elements");
        } else if (s.storage.defined()) {
          const at::Tensor nowCpu = now.to(at::kCPU, false, true);
          if (!sameBits(s.storage, nowCpu)) {
            const int64_t at0 = bits(s.storage).ne(bits(nowCpu)).nonzero().index({0, 0}).item<int64_t>();
            aliasing.push_back(in + " values changed: storage element " + std::to_string(at0) + " was " +
                               num(s.storage[at0].to(at::kDouble).item<double>()) + ", now " +
                               num(nowCpu[at0].to(at::kDouble).item<double>()));
          }
        }
      }
      if (!call.error.empty()) {
        numerics.push_back(where + ": the op raised " + call.error + "; CPU ATen returns " +
                           std::to_string(ex.dtypes.size()) + " output(s)");
        ++raisedCalls;
        continue;
      }
      if (call.outputs.size() != ex.dtypes.size()) {
        const std::string f = where + ": " + std::to_string(call.outputs.size()) + " output(s), ATen gives " +
                              std::to_string(ex.dtypes.size());
        aliasing.push_back(f);
        numerics.push_back(f);
        continue;
      }
      // P6: metadata.
      for (size_t i = 0; i < call.outputs.size(); ++i) {
        const auto& o = call.outputs[i];
        const std::string out = where + ": output " + std::to_string(i);
        if (dtypeName(o.scalar_type()) != ex.dtypes[i])
          aliasing.push_back(out + " has dtype " + dtypeName(o.scalar_type()) + ", ATen gives " + ex.dtypes[i]);
        if (o.sizes().vec() != ex.shapes[i])
          aliasing.push_back(out + " has shape " + str(o.sizes()) + ", ATen gives " + str(ex.shapes[i]));
        if (deviceName(o) != deviceName(call.inputs.empty() ? o : call.inputs[0].tensor))
          aliasing.push_back(out + " is on " + deviceName(o) + ", the inputs on " + deviceName(call.inputs[0].tensor));
      }
      // P6: fresh storage.
      for (size_t i = 0; i < call.outputs.size(); ++i) {
        const Range r = rangeOf(call.outputs[i]);
        const std::string out = where + ": output " + std::to_string(i);
        for (size_t j = 0; j < call.inputs.size(); ++j)
          if (overlaps(r, rangeOf(call.inputs[j].tensor)))
            aliasing.push_back(out + " shares storage with input " + std::to_string(j) + " (no fresh storage)");
        for (size_t j = 0; j < i; ++j)
          if (overlaps(r, rangeOf(call.outputs[j])))
            aliasing.push_back(out + " shares storage with output " + std::to_string(j));
        for (size_t kk = 0; kk < k; ++kk)
          for (size_t j = 0; j < pass.calls[kk].outputs.size(); ++j)
            if (overlaps(r, rangeOf(pass.calls[kk].outputs[j])))
              aliasing.push_back(out + " shares storage with output " + std::to_string(j) + " of call " +
                                 std::to_string(kk));
      }
      // P5: values against the reference, as they were right after the call.
      for (size_t i = 0; i < call.snapshots.size() && i < ex.values.size(); ++i) {
        const Tolerance tol = entry.tolerance(c.dtype, ex.dtypes[i], i, c.calls[k]);
        const std::string f = compareClose(call.snapshots[i], ex.values[i], tol);
        if (!f.empty()) numerics.push_back(where + ": output " + std::to_string(i) + ": " + f);
      }
    }
    // P6: earlier outputs unchanged by later calls (compared at the end).
    for (size_t k = 0; k + 1 < pass.calls.size(); ++k)
      for (size_t i = 0; i < pass.calls[k].outputs.size(); ++i)
        if (!sameBits(pass.calls[k].snapshots[i], pass.calls[k].outputs[i].to(at::kCPU, false, true)))
          aliasing.push_back("call " + std::to_string(k) + tag + ": output " + std::to_string(i) +
                             " was changed by a later call");
  };

  // Both paths are judged: a fault on the unpatched path is as real as one
  // on the patched path.
  if (active) judgePass(unpatched, "unpatched");
  judgePass(active ? patched : unpatched, active ? "patched" : "unpatched");
  if (active) {
    // Bitwise patched vs unpatched.
    for (size_t k = 0; k < c.calls.size(); ++k) {
      const auto& u = unpatched.calls[k];
      const auto& p = patched.calls[k];
      const std::string where = "call " + std::to_string(k);
      if (u.error != p.error) {
        differ = true;
        numerics.push_back(where + ": unpatched " + (u.error.empty() ? "returned" : "raised " + u.error) +
                           ", patched " + (p.error.empty() ? "returned" : "raised " + p.error));
        continue;
      }
      if (u.snapshots.size() != p.snapshots.size()) {
        differ = true;
        numerics.push_back(where + ": patched returned " + std::to_string(p.snapshots.size()) + " output(s), unpatched " +
                           std::to_string(u.snapshots.size()));
      }
      for (size_t i = 0; i < std::min(u.snapshots.size(), p.snapshots.size()); ++i) {
        if (sameBits(u.snapshots[i], p.snapshots[i])) continue;
        differ = true;
        std::string f;
        if (u.snapshots[i].scalar_type() != p.snapshots[i].scalar_type())
          f = "dtype " + dtypeName(p.snapshots[i].scalar_type()) + ", unpatched " + dtypeName(u.snapshots[i].scalar_type());
        else if (u.snapshots[i].sizes() != p.snapshots[i].sizes())
          f = "shape " + str(p.snapshots[i].sizes()) + ", unpatched " + str(u.snapshots[i].sizes());
        else
          f = compareClose(p.snapshots[i], u.snapshots[i], Tolerance{0.0, 0.0});
        if (f.empty()) f = "bit patterns differ (e.g. NaN payload or the sign of zero)";
        numerics.push_back(where + ": output " + std::to_string(i) + ": patched differs bitwise from unpatched: " + f);
      }
    }
    obs["patched_vs_unpatched"] = differ ? "differ" : "equal";
  }

  for (size_t k = 0; k < c.calls.size(); ++k) {
    json cj = {{"expected", json::array()}, {"actual", json::array()}, {"metadata_from", expected[k].source}};
    for (size_t i = 0; i < expected[k].dtypes.size(); ++i)
      cj["expected"].push_back({{"dtype", expected[k].dtypes[i]}, {"shape", expected[k].shapes[i]}});
    const auto& call = judged.calls[k];
    if (!call.error.empty()) cj["error"] = call.error;
    for (const auto& o : call.outputs)
      cj["actual"].push_back({{"dtype", dtypeName(o.scalar_type())},
                              {"shape", o.sizes().vec()},
                              {"strides", o.strides().vec()},
                              {"device", deviceName(o)}});
    obs["calls"].push_back(cj);
  }
  obs["compilations"] = ops.attr("compile_count")().cast<int>() - compiles0;
  obs["calls_raised"] = raisedCalls;
  obs["time_us"] = {{"reference", referenceUs},
                    {"device", unpatched.deviceUs + patched.deviceUs},
                    {"total", usSince(t0)}};
  return obs;
}

}  // namespace flagprop
