// The bound of each measured component of one block, from peft/bounds.h and the block's
// input statistics, as each protocol defines the component (docs/plasticity.md).
#pragma once

#include <vector>

#include "peft/plasticity.h"

namespace vitune::peft {

// One bound per entry of `components`, in that order. Paper protocol: ln1, mha, ln2 from
// the statistics of their own inputs; fc1 = |W1|_2 (times max|GELU'| when measured
// through GELU); fc2 = |W2|_2; block = (1 + mha * ln1) (1 + fc2 * |W1|_2 max|GELU'| * ln2).
// Reference protocol: the same for ln1, mha, ln2, fc1 (no GELU) on x0, and for fc2 the
// spectral norm of the first d columns of W2 (the zero padding meets only those).
std::vector<double> layer_bounds(const nn::Block& block, const BlockInputStats& inputs, int64_t tokens,
                                 const PlasticityOptions& options, const std::vector<PlasticityComponent>& components);

}  // namespace vitune::peft
