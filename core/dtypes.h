// The dtypes flagprop knows, written once.
#pragma once

#include <string>
#include <vector>

namespace flagprop {

/// One dtype, by its torch name (`torch.<name>`).
struct DtypeInfo {
  const char* name;  ///< e.g. "float32"
  bool floating;     ///< a floating-point type
  bool catalog;      ///< a dtype catalog ops run in (a P5 / P6 result each)
};

/// Every dtype flagprop generates: float32, float16, bfloat16, float64, int8,
/// uint8, int32, int64, bool.
const std::vector<DtypeInfo>& dtypes();

/// The entry for `name`, or nullptr.
const DtypeInfo* findDtype(const std::string& name);

/// Whether `name` is a floating dtype.
bool floatingDtype(const std::string& name);

/// "" when `name` is a dtype catalog ops run in, else a one-line reason that
/// lists the allowed ones (for --dtype and a manifest's `dtypes`).
std::string checkCatalogDtype(const std::string& name);

}  // namespace flagprop
