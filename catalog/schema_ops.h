// Catalog entries derived from an ATen overload's schema, so that every op a
// kernel library registers can be run without a hand-written entry: the
// argument types say what to generate (catalog/schema_ops.cpp documents the
// rule for each type), the alias annotations say how the op is judged
// (functional, in place, out=, view), and what cannot be sampled or judged
// is excluded with the reason. The hand-written entries of catalog.cpp
// override these where the schema cannot say enough (value constraints,
// related shapes).
#pragma once

#include "catalog/catalog.h"
#include "core/tensor_bridge.h"

#include <string>
#include <vector>

namespace flagprop {

/// How an overload is judged, from its schema alone.
struct OpClass {
  /// functional | inplace (writes `self`, returns it) | out (writes only its
  /// out= arguments, returns them) | view (returns an alias of `self`) |
  /// excluded
  std::string kind;
  std::string reason;  ///< excluded: why, one line; else empty
};

/// The class of `s`. Excluded: random ops (tagged nondeterministic_seeded:
/// not comparable value by value with CPU ATen), ops whose output is
/// uninitialized memory (empty*), ops returning no tensor, ops writing an
/// argument other than `self` or their out= arguments, ops with an argument
/// type that has no sampler (Dimname, Stream, Storage, a str without
/// default...), and ops with no CPU kernel (no reference to compare with).
OpClass classifyOp(const OpSchema& s);

/// A sampler for `s` (which classifyOp does not exclude): one call's tensors
/// and arguments from the argument types; see schema_ops.cpp.
Sampler schemaSampler(const OpSchema& s);

/// Whether an overload is one of ATen's integral-only ops (bitwise_*, the
/// __and__ / __or__ / __xor__ / shift dunders, gcd, lcm, bincount), judged in
/// int32 even when a target asks for floating dtypes only.
bool integerOnly(const std::string& name);

/// The entry for `s`: dtypes float32, float16, bfloat16, int32 (int32 only
/// for integerOnly ops, with Judging::integerOnly); the
/// "schema" tolerance rule (rtol by dtype, atol growing with the square
/// root of the elements reduced into one output element); the class in
/// Judging::mode. Throws std::invalid_argument (the class's reason) when
/// the op is excluded.
OpEntry schemaEntry(const OpSchema& s);

/// The ATen overloads FlagGems registers (names as torch.ops spells them),
/// read from catalog/flaggems_overloads.txt: the registration list of a
/// FlagGems snapshot, recorded by tools/flaggems_overloads.py (see the file's
/// header for the commit). Throws std::runtime_error when the file is missing.
const std::vector<std::string>& flaggemsOverloads();

}  // namespace flagprop
