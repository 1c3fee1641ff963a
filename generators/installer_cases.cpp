#include "generators/installer_cases.h"

namespace flagprop {

namespace {
std::string intText(const ArgValue& a) {
  std::string s = std::to_string(a.magnitude);
  return (a.negative && a.magnitude != 0) ? "-" + s : s;
}

json list(const std::vector<ArgValue>& v) {
  json out = json::array();
  for (const auto& a : v) out.push_back(toJson(a));
  return out;
}
}  // namespace

json toJson(const Gates& g) { return {{"accelerator", g.accelerator}, {"routes_to_flaggems", g.routesToFlagGems}}; }

json toJson(const InstallCase& c) { return {{"mock", c.mock}, {"gates", toJson(c.gates)}}; }

json toJson(const ArgValue& a) {
  switch (a.kind) {
    case ArgValue::Kind::Tensor:
      return {{"tensor", {{"dtype", a.dtype}, {"numel", a.numel}, {"offset", a.offset}, {"seed", a.seed}}}};
    case ArgValue::Kind::Int:
      return {{"int", intText(a)}};
    case ArgValue::Kind::Float:
      return {{"float", a.real}};
    case ArgValue::Kind::Bool:
      return {{"bool", a.flag}};
    case ArgValue::Kind::Str:
      return {{"str", a.text}};
    case ArgValue::Kind::None:
      return {{"none", nullptr}};
    case ArgValue::Kind::Descriptor:
      return {
          {"descriptor",
           {{"class", a.descriptorKind}, {"shape", a.shape}, {"strides", a.strides}, {"block_shape", a.blockShape}}}};
  }
  return nullptr;
}

json toJson(const KeyCase& c) {
  return {{"mock", c.mock},
          {"spec_args", list(c.specArgs)},
          {"dns_args", list(c.dnsArgs)},
          {"const_args", list(c.constArgs)}};
}

json toJson(const Launch& l) {
  json j = {{"kind", l.kind}, {"arg_set", l.argSet}, {"grid", l.grid}};
  if (l.kind == "partial") j["positional"] = l.positional;
  return j;
}

json toJson(const LaunchCase& c) {
  json sets = json::array();
  for (const auto& s : c.argSets) sets.push_back(list(s));
  json launches = json::array();
  for (const auto& l : c.launches) launches.push_back(toJson(l));
  return {{"mock", c.mock}, {"arg_sets", sets}, {"launches", launches}};
}

void showValue(const Gates& v, std::ostream& os) { os << toJson(v).dump(); }
void showValue(const InstallCase& v, std::ostream& os) { os << toJson(v).dump(); }
void showValue(const ArgValue& v, std::ostream& os) { os << toJson(v).dump(); }
void showValue(const KeyCase& v, std::ostream& os) { os << toJson(v).dump(); }
void showValue(const LaunchCase& v, std::ostream& os) { os << toJson(v).dump(); }

}  // namespace flagprop
