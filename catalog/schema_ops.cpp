// Schema-derived catalog entries (see schema_ops.h).
//
// One call of an overload is made argument by argument, from its type and,
// where the type says too little, its name:
//
//   Tensor            the first: any shape of rank 0..4 (S) and any layout;
//                     later ones: S or a shape that broadcasts to S (3 : 1;
//                     always S for *backward* ops, which do not check shapes);
//                     named index / indices: int64 indices in range for the
//                     dim argument (or dim 0) of the first tensor, either 1-D
//                     or of the first tensor's rank; named mask: bool
//   Tensor?           None or as Tensor (1 : 1)
//   Tensor[]          1..3 tensors of shape S
//   Tensor?[]         one 1-D int64 index tensor into dim 0 of the first tensor
//   int, SymInt       named *dim* or axis: a valid dim of the first tensor,
//                     either sign; reduction: 0, 1, 2 (none, mean, sum);
//                     counts and sizes (n_*, num_*, *bins*, *size*, *steps*,
//                     *groups*, *length*): 1, 2, 3; otherwise a small int
//                     (1, 2, 0, 3, -1)
//   int[], SymInt[]   named *dim*: distinct dims, either sign; named size,
//                     sizes or shape: S; normalized_shape: S's trailing dims;
//                     otherwise small positive ints, as many as the list's
//                     fixed size (or S's rank)
//   Scalar            a value of the run's dtype: float runs 0.5, 2.0, -1.5,
//                     1, 0, 3; integer runs 1, 2, -3, 0 (an int stays an int);
//                     bool runs true, false
//   float             named eps: 1e-5; dropout_p: 0; otherwise 0.5, 2.0,
//                     1e-3, 1.0
//   bool              false or true (sorted: true, since an unsorted order is
//                     unspecified)
//   str               named reduce, rounding_mode, padding, side, approximate,
//                     interpolation: one of ATen's choices; otherwise the
//                     schema's default, None where optional (else excluded)
//   ScalarType        the run's dtype
//   Device            the call's device (_resize_output)
//   Device?           the call's device where the op has no tensor argument
//                     (a factory); else the default
//   T? and defaults   None / the default in a third of the calls
//   Generator?, Layout?, MemoryFormat?, ScalarType?: the default (None)
//
// out= arguments are placeholders {"$out": j} that flagprop.engine.ops turns into
// empty tensors of the dtypes the functional overload returns (ATen resizes
// them).
#include "catalog/schema_ops.h"

#include "core/files.h"
#include "generators/choice.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

namespace flagprop {

namespace {

// The type with SymInt read as int, list sizes dropped, and whether it is
// optional: "int[1]?" -> ("int[]", true).
std::pair<std::string, bool> baseType(std::string t) {
  bool optional = false;
  if (!t.empty() && t.back() == '?') {
    optional = true;
    t.pop_back();
  }
  for (size_t p; (p = t.find("SymInt")) != std::string::npos;) t.replace(p, 6, "int");
  const auto lb = t.find('[');
  if (lb != std::string::npos) t = t.substr(0, lb) + "[]" + (t.back() == '?' ? "?" : "");
  return {t, optional};
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Values of str arguments that have no default, by name (ATen's documented
// choices); None as well where the type is optional.
const std::map<std::string, std::vector<std::string>>& knownStrings() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"reduce", {"sum", "prod", "mean", "amax", "amin"}},
      {"rounding_mode", {"trunc", "floor"}},
      {"padding", {"valid", "same"}},
      {"side", {"left", "right"}},
      {"approximate", {"none", "tanh"}},
      {"interpolation", {"linear", "lower", "higher", "midpoint", "nearest"}}};
  return m;
}

bool isTensorType(const std::string& base) { return base == "Tensor" || base == "Tensor[]" || base == "Tensor?[]"; }

// Why an argument has no sampler, or "".
std::string unsupported(const SchemaArg& a) {
  if (a.out) return baseType(a.type).first == "Tensor" ? "" : "out= argument " + a.name + " of type " + a.type;
  const auto [t, optional] = baseType(a.type);
  static const std::vector<std::string> known = {
      "Tensor",     "Tensor[]", "Tensor?[]", "int",    "int[]",        "Scalar",  "float",  "bool",    "str",
      "ScalarType", "Device",   "Generator", "Layout", "MemoryFormat", "float[]", "bool[]", "Scalar[]"};
  if (std::find(known.begin(), known.end(), t) == known.end())
    return "argument " + a.name + " of type " + a.type + " has no sampler";
  if (t == "str" && !a.defaultKnown && !optional && !knownStrings().count(a.name))
    return "argument " + a.name + " (str) has no default and no known values";
  if ((t == "Generator" || t == "Layout" || t == "MemoryFormat") && !optional && !a.hasDefault)
    return "argument " + a.name + " of type " + a.type + " has no sampler";
  return "";
}

struct Ctx {
  const OpSchema& s;
  const SampleContext& sc;
  OpCall call;
  std::vector<int64_t> shape;  // S: the first tensor's shape
  int outs = 0;
  bool anyTensor = false;
  bool integral() const { return !floatingDtype(sc.dtype); }
  int rank() const { return static_cast<int>(shape.size()); }
  // The dim argument's value normalised, or 0.
  int64_t dimArg = 0;
};

json addTensor(Ctx& c, TensorLayout t) {
  c.call.tensors.push_back(std::move(t));
  return placeholder(static_cast<int>(c.call.tensors.size()) - 1);
}

// A tensor argument of the first tensor's shape (or one that broadcasts to
// it). One the op writes (an in-place op's self) is never expanded: ATen
// leaves writes to a tensor whose elements overlap unsupported
// (at::assert_no_internal_overlap), so such a case says nothing of the op.
json plainTensor(Ctx& c, bool first, bool written) {
  std::vector<int64_t> shape = c.shape;
  // Backward ops do not check that a gradient has its input's shape.
  const bool sameShapes = contains(c.s.name, "backward");
  const bool scalars = c.sc.lim.edge == "scalar-others";
  if (!first && !sameShapes && (scalars || *gen::weighted<bool>({{3, false}, {1, true}})))
    shape = *gen::broadcastableTo(c.shape, c.sc.lim);
  ValueSpec v;
  v.expand = !written;
  return addTensor(c, *gen::layout(shape, c.sc.dtype, c.sc.lim, v));
}

int64_t sizeAlong(const Ctx& c, int64_t d) {
  if (c.shape.empty()) return 1;
  const int64_t r = c.rank();
  return c.shape[((d % r) + r) % r];
}

json indexTensor(Ctx& c) {
  const int64_t high = sizeAlong(c, c.dimArg);
  ValueSpec v;
  v.kind = "index";
  v.high = std::max<int64_t>(high, 1);
  v.specials = false;
  std::vector<int64_t> shape;
  if (c.rank() > 0 && *gen::weighted<bool>({{1, false}, {1, true}})) {
    shape = c.shape;  // gather / scatter: the first tensor's rank, no larger in any dim
    for (auto& s : shape) s = *gen::atNominalSize(rc::gen::inRange<int64_t>(std::min<int64_t>(s, 1), s + 1));
  } else {
    shape = {*gen::element<int64_t>(1, 2, 3, 0, 5)};
  }
  return addTensor(c, *gen::layout(shape, "int64", c.sc.lim, v));
}

json tensorArg(Ctx& c, const SchemaArg& a) {
  const bool first = !c.anyTensor;
  if (first && c.sc.lim.edge == "scalar-first") {  // a 0-d bias or gradient of a reduced loss, the rest of rank >= 1
    gen::LayoutLimits lim = c.sc.lim;
    lim.edge.clear();
    c.shape = *gen::shape(1, 4, lim);
    c.anyTensor = true;
    return addTensor(c, *gen::layout({}, c.sc.dtype, c.sc.lim));
  }
  if (first) c.shape = *gen::shape(0, 4, c.sc.lim);
  c.anyTensor = true;
  if (!first && (a.name == "index" || a.name == "indices")) return indexTensor(c);
  if (!first && contains(a.name, "mask"))
    return addTensor(c, *gen::layout(*gen::broadcastableTo(c.shape, c.sc.lim), "bool", c.sc.lim));
  return plainTensor(c, first, a.written);
}

json smallInt() { return *gen::weighted<int64_t>({{4, 1}, {2, 2}, {1, 0}, {1, 3}, {1, -1}}); }

json intList(Ctx& c, const SchemaArg& a) {
  const std::string& n = a.name;
  if (contains(n, "dim") || n == "axis") return *args::dims(c.rank());
  if (n == "size" || n == "sizes" || n == "shape") return c.shape;
  if (n == "normalized_shape") {
    const int k = c.rank() == 0 ? 0 : *gen::atNominalSize(rc::gen::inRange(1, c.rank() + 1));
    return std::vector<int64_t>(c.shape.end() - k, c.shape.end());
  }
  const int len = a.listSize > 0 ? a.listSize : std::max(c.rank(), 1);
  json out = json::array();
  for (int i = 0; i < len; ++i) out.push_back(*gen::weighted<int64_t>({{4, 1}, {2, 2}, {1, 3}}));
  return out;
}

json scalar(const Ctx& c) {
  // A bool tensor takes a bool scalar: an in-place op (bitwise_or_.Scalar)
  // cannot write an int result into it.
  if (c.sc.dtype == "bool") return *gen::element<json>(true, false);
  if (c.integral()) return *gen::element<json>(1, 2, -3, 0);
  return *gen::element<json>(0.5, 2.0, -1.5, 1, 0, 3);
}

// The value of one argument (never an out= one).
json argValue(Ctx& c, const SchemaArg& a) {
  const auto [t, optional] = baseType(a.type);
  const bool tensorish = isTensorType(t);
  // Defaults and None in a third of the calls (never for the first tensor).
  if (!tensorish || c.anyTensor) {
    if (a.defaultKnown && *gen::weighted<bool>({{2, false}, {1, true}})) return a.defaultValue;
    if (optional && t != "Tensor" && *gen::weighted<bool>({{2, false}, {1, true}})) return nullptr;
  }
  if (t == "Tensor") {
    if (optional && c.anyTensor && *gen::weighted<bool>({{1, false}, {1, true}})) return nullptr;
    return tensorArg(c, a);
  }
  if (t == "Tensor[]") {
    if (!c.anyTensor) c.shape = *gen::shape(0, 4, c.sc.lim);
    c.anyTensor = true;
    json list = json::array();
    const int n = *gen::element<int>(1, 2, 3);
    for (int i = 0; i < n; ++i) list.push_back(addTensor(c, *gen::layout(c.shape, c.sc.dtype, c.sc.lim)));
    return list;
  }
  if (t == "Tensor?[]") {
    const int64_t saved = c.dimArg;
    c.dimArg = 0;
    ValueSpec v;
    v.kind = "index";
    v.high = std::max<int64_t>(sizeAlong(c, 0), 1);
    v.specials = false;
    const json idx = addTensor(c, *gen::layout({*gen::element<int64_t>(1, 2, 3, 0)}, "int64", c.sc.lim, v));
    c.dimArg = saved;
    return json::array({idx});
  }
  if (t == "int") {
    if (contains(a.name, "dim") || a.name == "axis") {
      const int64_t d = *args::dim(c.rank());
      if (a.name == "dim") c.dimArg = d;
      return d;
    }
    if (a.name == "reduction") return *gen::element<json>(1, 0, 2);  // at::Reduction: none, mean, sum
    // Counts and sizes are positive: CPU ATen itself loops without end on
    // some of them (choose_qparams_optimized with n_bins -1).
    const std::string& n = a.name;
    if (n.rfind("n_", 0) == 0 || n.rfind("num_", 0) == 0 || n == "n" || contains(n, "bins") || contains(n, "size") ||
        contains(n, "steps") || contains(n, "groups") || contains(n, "length"))
      return *gen::element<json>(1, 2, 3);
    return smallInt();
  }
  if (t == "int[]") return intList(c, a);
  if (t == "Scalar") return scalar(c);
  if (t == "Scalar[]") return json::array({scalar(c)});
  if (t == "float" && a.name == "dropout_p") return 0.0;  // dropout draws from the generator
  if (t == "float") return a.name == "eps" ? json(1e-5) : *gen::element<json>(0.5, 2.0, 1e-3, 1.0);
  if (t == "float[]") {
    json out = json::array();
    for (int i = 0; i < std::max(a.listSize, 1); ++i) out.push_back(*gen::element<json>(0.5, 2.0));
    return out;
  }
  if (a.name == "pin_memory") return nullptr;  // pinned host memory is not the op under test
  if (t == "str" && knownStrings().count(a.name)) {
    const auto& values = knownStrings().at(a.name);
    return values[*gen::atNominalSize(rc::gen::inRange<size_t>(0, values.size()))];
  }
  if (t == "bool") return a.name == "sorted" ? json(true) : *args::boolean();  // unsorted order is unspecified
  if (t == "bool[]") {  // e.g. bool[3] output_mask: as many as the fixed size says
    json out = json::array();
    for (int i = 0; i < std::max(a.listSize, 1); ++i) out.push_back(*args::boolean());
    return out;
  }
  if (t == "ScalarType") return {{"$dtype", c.sc.dtype}};
  if (t == "Device" && (!c.anyTensor || !optional)) return {{"$device", true}};
  return a.defaultKnown ? a.defaultValue : json(nullptr);  // str, Generator?, Layout?, MemoryFormat?, Device?
}

}  // namespace

OpClass classifyOp(const OpSchema& s) {
  const auto no = [](std::string why) { return OpClass{"excluded", std::move(why)}; };
  if (!s.cpuKernel) return no("no CPU kernel in this LibTorch: nothing to compare with");
  if (s.randomized) return no("random (tagged nondeterministic_seeded): its values are not comparable with CPU ATen's");
  const std::string base = s.name.substr(0, s.name.find('.'));
  if (contains(base, "empty") || base.rfind("resize", 0) == 0 || base == "_make_dep_token")
    return no("its output is (partly) uninitialized memory");
  bool tensorReturn = false;
  for (const auto& r : s.returns)
    tensorReturn |= baseType(r.type).first == "Tensor" || baseType(r.type).first == "Tensor[]";
  if (!tensorReturn)
    return no("returns no tensor (" + (s.returns.empty() ? std::string("nothing") : s.returns[0].type) + ")");
  for (const auto& r : s.returns)
    if (!isTensorType(baseType(r.type).first))
      return no(std::string("returns ") +
                (std::string("aeiou").find(r.type.empty() ? 'x' : r.type[0]) != std::string::npos ? "an " : "a ") +
                r.type + " beside its tensors");
  bool sizeArg = false, strideArg = false;
  for (const auto& a : s.args) {
    sizeArg |= a.name == "size";
    strideArg |= a.name == "stride" && baseType(a.type).first == "int[]";
  }
  if (sizeArg && strideArg) return no("takes any size and strides, which can reach outside the storage (as_strided)");
  bool outArgs = false, inplace = false;
  for (size_t i = 0; i < s.args.size(); ++i) {
    const auto& a = s.args[i];
    const std::string why = unsupported(a);
    if (!why.empty()) return no(why);
    if (a.out)
      outArgs = true;
    else if (a.written && i == 0 && a.type == "Tensor")
      inplace = true;
    else if (a.written)
      return no("writes argument " + a.name + ", which is neither self nor an out= argument");
  }
  if (outArgs && inplace) return no("writes both self and out= arguments");
  if (outArgs) return {"out", ""};
  if (inplace) {
    if (s.returns.size() != 1 || !s.returns[0].written) return no("writes self but does not return it");
    return {"inplace", ""};
  }
  for (const auto& r : s.returns)
    if (r.aliased) {
      if (s.args.empty() || !s.args[0].aliased) return no("returns an alias of an argument other than self");
      return {"view", ""};
    }
  return {"functional", ""};
}

Sampler schemaSampler(const OpSchema& schema) {
  auto s = std::make_shared<const OpSchema>(schema);
  return [s](const SampleContext& sc) {
    return rc::gen::exec([s, sc]() {
      Ctx c{*s, sc};
      // In schema order: a dim comes before the index tensor that indexes it.
      for (const auto& a : s->args) {
        if (a.out) {
          c.call.kwargs[a.name] = {{"$out", c.outs++}};
          continue;
        }
        json v = argValue(c, a);
        if (a.kwargOnly)
          c.call.kwargs[a.name] = std::move(v);
        else
          c.call.args.push_back(std::move(v));
      }
      return c.call;
    });
  };
}

bool integerOnly(const std::string& name) {
  // ATen documents these as integral (and bool) ops; its CPU kernels reject
  // floating dtypes ("bitwise_or_cpu" not implemented for 'Float').
  static const std::vector<std::string> prefixes = {
      "bitwise_",   "__and__",     "__iand__",   "__or__",      "__ior__", "__xor__", "__ixor__",
      "__lshift__", "__ilshift__", "__rshift__", "__irshift__", "gcd",     "lcm",     "bincount"};
  const std::string base = name.substr(0, name.find('.'));
  for (const auto& p : prefixes)
    if (base.rfind(p, 0) == 0) return true;
  return false;
}

OpEntry schemaEntry(const OpSchema& s) {
  const OpClass k = classifyOp(s);
  if (k.kind == "excluded") throw std::invalid_argument(k.reason);
  const bool ints = integerOnly(s.name);
  // Every dtype ATen may take; the reference (CPU ATen, or the device's
  // stock path) decides which it takes: a sample it rejects is a discard.
  OpEntry e = Op(s.name, ints ? std::vector<std::string>{"int32", "int64", "int8", "uint8", "bool"} : kAllDtypes,
                 schemaSampler(s))
                  .tolerance({{"rule", "schema"}});
  e.defaultDtypes = ints ? std::vector<std::string>{"int32", "int64", "bool"} : kSchemaDefaultDtypes;
  e.judging.integerOnly = ints;  // run in int32 whatever floating dtypes the target asks for
  e.judging.mode = k.kind;
  e.judging.outputs = out::namedArgs(out::freeOutputs(s.name), s.name);  // where ATen leaves the index among ties free
  e.judging.reference = "either";  // float64 or the run's dtype: the schema says nothing of conditioning
  e.judging.schema = s.text;
  return e;
}

const std::vector<std::string>& flaggemsOverloads() {
  static const std::vector<std::string> names = [] {
    const std::string path = dataRoot() + "/catalog/flaggems_overloads.txt";
    std::istringstream in(readFile(path));
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') out.push_back(line);
    return out;
  }();
  return names;
}

}  // namespace flagprop
