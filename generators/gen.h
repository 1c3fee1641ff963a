// RapidCheck generators for the installer properties. Each returns a value
// generator (rc::Gen) that shrinks toward the simplest case: the first element
// of every choice list is the simplest.
#pragma once

#include "generators/cases.h"

#include <rapidcheck.h>

#include <optional>

namespace flagprop::gen {

/// Kernel parameter lists of 2..6 params; the first is always a specialised
/// pointer and at least one more specialised param exists (the output).
rc::Gen<std::vector<ParamSpec>> params();

/// Mock FlagGems specs. `helper` fixes the descriptor-helper variant when set.
rc::Gen<MockSpec> mockSpec(std::optional<std::string> helper = std::nullopt);

/// Gate values; `fixed` pins them (a manifest's gates) instead of generating.
rc::Gen<Gates> gates(std::optional<Gates> fixed = std::nullopt);

/// P1 / P2 cases.
rc::Gen<InstallCase> installCase(std::optional<Gates> fixed = std::nullopt);

/// Integers at the key classifier's boundaries: 0, +-1, +-(2^31 - 1), +-2^31,
/// 2^32, +-(2^63 - 1), 2^63, 2^64 - 1, each +-2 (clamped to +-(2^64 - 1)).
rc::Gen<ArgValue> boundaryInt();

/// 1-D tensor arguments of every supported dtype, 0..64 elements, storage
/// offset 0..5 elements (misaligned data_ptr for most dtypes when non-zero).
rc::Gen<ArgValue> tensorArg();

/// Any key argument: boundary ints, bools, floats, strings, None, tensors,
/// descriptor-like objects (Triton's class or a same-named duck type).
rc::Gen<ArgValue> keyArg();

/// P4 cases: helper present; 0..4 arguments in each of the three sections.
rc::Gen<KeyCase> keyCase();

/// P3 cases: helper present; 1..3 argument sets; 1..8 launches of the kinds
/// positional (weighted, so cache hits happen), extra_kwargs, partial,
/// callable_grid; tuner / heuristics / hook wrappers and flagtune tuners vary.
rc::Gen<LaunchCase> launchCase();

}  // namespace flagprop::gen
