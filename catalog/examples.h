// Explicit examples of an op and dtype: the simplest inputs that break
// kernels, judged before any random case (docs/catalog.md, "Explicit
// examples"). Each is a named generator of exactly one kind of case, so a
// failing one shrinks like a random case and keeps what makes it that kind.
#pragma once

#include "catalog/catalog.h"

#include <memory>
#include <string>
#include <vector>

namespace flagprop {

/// One explicit example: its name ("0-d", "beta=0", "OpInfo sample 3,
/// non-contiguous") and its cases (one call each).
struct ExampleGen {
  std::string name;
  rc::Gen<OpCase> cases;
};

/// The shape edges, in order: name, LayoutLimits::edge. "0-d", "empty dim"
/// (the last, reduced or scanned: dim arguments -1),
/// "size-1 dims", "0-d others" (every tensor after the first 0-d: a
/// weight), "0-d first" (the first tensor 0-d, the rest not: a bias; for
/// backward ops "0-d gradient", a reduced loss's grad_output),
/// "non-power-of-2 tail", "65,537 rows" (a last dim reduced or scanned over
/// more rows than one launch-grid dimension holds: dim arguments -1),
/// "NaN, inf and -0" (floating dtypes), "values past float32" (int32,
/// int64, float64).
std::vector<std::pair<std::string, std::string>> edgeKinds(const std::string& op, const std::string& dtype);

/// Boundary values of `op`'s non-tensor arguments from its ATen schema, as
/// (name "ARG=VALUE", ARG, VALUE JSON): an optional's None and every
/// default; 0, 1, -1 for ints (dims: -1 and None; reduction: 0, 1, 2;
/// counts and sizes: none, they stay positive) and floats and Scalars (and
/// 1e4 for floats and floating Scalars); both bools; every known value of a
/// str; an empty dim list where the schema has a default. Each value once
/// per argument; none where the op has no schema (a module op).
struct Boundary {
  std::string name, arg;
  json value;
};
std::vector<Boundary> boundaryValues(const std::string& op, const std::string& dtype);

/// Whether OpInfo's `sample` (a bank sample: "args", "kwargs" with
/// {"tensor": i} placeholders) calls overload `op` with the types its schema
/// names: no Python number or bool where the schema takes a Tensor (OpInfo
/// samples a function, `torch.add`, whose `other` may be a number; the
/// overload `add.Tensor` then sees a wrapped number only through the
/// dispatcher, never a module's own function), and no tensor where it takes
/// an int, float, bool or list of them (`torch.max(x, y)`'s sample is
/// max.other's, not max.dim's). True without a schema.
bool schemaCompatible(const json& sample, const std::string& op);

/// `samples` less those that are not schemaCompatible with `op`.
json compatibleSamples(const json& samples, const std::string& op);

/// `call` with argument `arg` of `op`'s schema set to `value`: at its
/// position where the call passes it positionally, else as a keyword.
/// Unchanged when the op has no schema or no such argument.
OpCall withArgument(OpCall call, const std::string& op, const std::string& arg, const json& value);

/// The explicit examples of `entry` in `dtype` under `lim`, at most `most`,
/// in this order: the edges, the first 8 of `opinfo`'s samples as given
/// (contiguous), the argument boundaries, the first sample's own arguments
/// at their boundaries, the other samples as given, every sample
/// non-contiguous. `opinfo`: OpInfo's samples of the
/// overload (flagprop.engine.opinfo), or null.
std::vector<ExampleGen> explicitExamples(const OpEntry& entry, const std::string& dtype, const gen::LayoutLimits& lim,
                                         std::shared_ptr<const json> opinfo, int most);

}  // namespace flagprop
