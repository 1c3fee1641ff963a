#include "core/dtypes.h"

namespace flagprop {

const std::vector<DtypeInfo>& dtypes() {
  static const std::vector<DtypeInfo> table = {
      {"float32", true, true}, {"float16", true, true}, {"bfloat16", true, true},
      {"float64", true, true}, {"int8", false, true},   {"uint8", false, true},
      {"int32", false, true},  {"int64", false, true},  {"bool", false, true},
  };
  return table;
}

const DtypeInfo* findDtype(const std::string& name) {
  for (const auto& d : dtypes())
    if (name == d.name) return &d;
  return nullptr;
}

bool floatingDtype(const std::string& name) {
  const DtypeInfo* d = findDtype(name);
  return d && d->floating;
}

std::string checkCatalogDtype(const std::string& name) {
  const DtypeInfo* d = findDtype(name);
  if (d && d->catalog) return "";
  std::string allowed;
  for (const auto& x : dtypes())
    if (x.catalog) allowed += (allowed.empty() ? "" : ", ") + std::string(x.name);
  return "no catalog dtype '" + name + "' (" + allowed + ")";
}

}  // namespace flagprop
