// A sampler over recorded valid samples: the calls PyTorch's OpInfo
// samples make of one ATen overload (flagprop.engine.opinfo's bank), for the ops
// whose schema cannot say what a valid input is (matrix products,
// convolutions, losses, pooling). The samples fix the shapes and the
// arguments; flagprop lays every tensor out its own way and draws the
// values of those in the run's dtype.
#pragma once

#include "catalog/samplers.h"

#include <memory>
#include <string>

namespace flagprop {

/// How many of `samples` (a JSON array of flagprop.engine.opinfo bank samples:
/// {"tensors": [{"shape", "dtype": "run" | a dtype name, "data"?}], "args",
/// "kwargs"}) have every tensor within `maxElements` elements.
size_t fittingSamples(const json& samples, int64_t maxElements);

/// A sampler drawing one of `samples` (smallest first: the index shrinks
/// toward the smallest sample) whose tensors fit the limits' maxElements:
/// each tensor of dtype "run" in the run's dtype, its values drawn (any
/// kind, with specials where the limits allow) or, where the sample keeps
/// its own ("data": the op rejected fresh values), given; every other
/// tensor in its recorded dtype with its recorded values (an index, a
/// mask); every tensor laid out by gen::layout (permuted, sliced, storage
/// offset; never expanded where its values are given). The arguments are
/// the sample's own. Throws std::invalid_argument when no sample fits (see
/// fittingSamples) or one is malformed.
Sampler opinfoSampler(std::shared_ptr<const json> samples);

/// A sampler of the one recorded sample `k` of `samples` (its tensors'
/// layouts drawn as opinfoSampler draws them). Throws std::invalid_argument
/// when there is no such sample, or (when sampling) it does not fit within
/// the limits' max elements.
Sampler opinfoSampleAt(std::shared_ptr<const json> samples, size_t k);

}  // namespace flagprop
