#include "catalog/opinfo_sampler.h"

#include <stdexcept>

namespace flagprop {

namespace {

bool fits(const json& sample, int64_t maxElements) {
  for (const auto& t : sample.at("tensors"))
    if (numelOf(t.at("shape").get<std::vector<int64_t>>()) > maxElements) return false;
  return true;
}

// The layout generator of one recorded tensor in a run of `dtype`.
rc::Gen<TensorLayout> tensorGen(const json& t, const std::string& dtype, const gen::LayoutLimits& lim) {
  const auto shape = t.at("shape").get<std::vector<int64_t>>();
  const std::string recorded = t.at("dtype").get<std::string>();
  ValueSpec v;
  if (t.contains("data")) {
    v.kind = "given";
    v.data = std::make_shared<const json>(t.at("data"));
  }
  return gen::layout(shape, recorded == "run" ? dtype : recorded, lim, v);
}

// Throws std::invalid_argument unless `s` is a well-formed bank sample.
void validate(const json& s) {
  const bool ok = s.is_object() && s.contains("tensors") && s.at("tensors").is_array() &&
                  s.value("args", json::array()).is_array() && s.value("kwargs", json::object()).is_object();
  if (!ok) throw std::invalid_argument("malformed OpInfo sample: " + s.dump().substr(0, 200));
  for (const auto& t : s.at("tensors")) {
    if (!t.is_object() || !t.contains("shape") || !t.at("shape").is_array() || !t.contains("dtype") ||
        !t.at("dtype").is_string())
      throw std::invalid_argument("malformed OpInfo sample tensor: " + t.dump().substr(0, 200));
    const int64_t n = numelOf(t.at("shape").get<std::vector<int64_t>>());
    if (t.contains("data") && (!t.at("data").is_array() || static_cast<int64_t>(t.at("data").size()) != n))
      throw std::invalid_argument("an OpInfo sample's data does not match its shape " + t.at("shape").dump());
    if (t.at("dtype") != "run" && !t.contains("data"))
      throw std::invalid_argument("an OpInfo sample tensor of dtype " + t.at("dtype").get<std::string>() +
                                  " carries no data");
  }
}

// The call of recorded sample `s` in a run of `sc.dtype`.
rc::Gen<OpCall> sampleCall(const json& s, const SampleContext& sc) {
  std::vector<rc::Gen<TensorLayout>> gens;
  for (const auto& t : s.at("tensors")) gens.push_back(tensorGen(t, sc.dtype, sc.lim));
  json args = s.value("args", json::array()), kwargs = s.value("kwargs", json::object());
  return rc::gen::exec([gens, args, kwargs]() {
    OpCall c;
    for (const auto& g : gens) c.tensors.push_back(*g);
    c.args = args;
    c.kwargs = kwargs;
    return c;
  });
}

}  // namespace

Sampler opinfoSampleAt(std::shared_ptr<const json> samples, size_t k) {
  if (!samples || !samples->is_array() || k >= samples->size())
    throw std::invalid_argument("no OpInfo sample " + std::to_string(k));
  validate(samples->at(k));
  return [samples, k](const SampleContext& sc) -> rc::Gen<OpCall> {
    const json& s = samples->at(k);
    if (!fits(s, sc.lim.maxElements))
      throw std::invalid_argument("OpInfo sample " + std::to_string(k) + " does not fit within " +
                                  std::to_string(sc.lim.maxElements) + " elements");
    return sampleCall(s, sc);
  };
}

size_t fittingSamples(const json& samples, int64_t maxElements) {
  size_t n = 0;
  for (const auto& s : samples) n += fits(s, maxElements);
  return n;
}

Sampler opinfoSampler(std::shared_ptr<const json> samples) {
  if (!samples || !samples->is_array()) throw std::invalid_argument("OpInfo samples must be a JSON array");
  for (const auto& s : *samples) validate(s);
  return [samples](const SampleContext& sc) -> rc::Gen<OpCall> {
    std::vector<const json*> fit;
    for (const auto& s : *samples)
      if (fits(s, sc.lim.maxElements)) fit.push_back(&s);
    if (fit.empty())
      throw std::invalid_argument("no OpInfo sample fits within " + std::to_string(sc.lim.maxElements) + " elements");
    return rc::gen::mapcat(rc::gen::inRange<size_t>(0, fit.size()),
                           [fit, sc](size_t k) { return sampleCall(*fit[k], sc); });
  };
}

}  // namespace flagprop
