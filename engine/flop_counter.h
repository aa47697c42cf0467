// Counts the floating-point operations of the matrix products the engine runs (2 per
// multiply-add): the GEMMs and the products inside attention (Q K^T, P V and their
// gradients), so commands can report FLOPs per image and tests can prove that a product
// was skipped. Elementwise work (softmax, LayerNorm, GELU) is not counted.
#pragma once

#include <cstdint>

namespace vitune {

void count_flops(int64_t flops);
int64_t flops_counted();
void reset_flop_counter();

}  // namespace vitune
