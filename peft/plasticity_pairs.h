// Distances between the samples of a batch and the ratios that make plasticity.
//
// A batch x [B, ...] is read as B flattened samples. Distances of all distinct pairs come
// from the Gram matrix G = X X^T in double: |x_a - x_b|^2 = G_aa + G_bb - 2 G_ab, clamped
// at 0, with X converted to double a slice of 8192 columns at a time; beyond the batch
// itself memory is O(B^2 + B * 8192) whatever the number of pairs.
//
// Devices: a batch may live on a CUDA device. The slices are then cut and converted to
// double there and the f64 products run there too; only the B x B Gram matrix comes to
// the host, where every distance and ratio is computed.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor.h"
#include "peft/plasticity_stats.h"

namespace vitune::peft {

// G = X X^T, f64 [B, B] on the host, for a float tensor x [B, ...] on any device (the
// slicing, conversion and f64 GEMMs on x's device).
Tensor gram_matrix(const Tensor& x);

// |x_a - x_b| for every pair a < b, in the order (0,1), (0,2), ..., (0,B-1), (1,2), ...
std::vector<double> pair_distances(const Tensor& gram);

// |a_k - b_k| for every k of two float batches of one shape [B, ...] (on any device;
// read on the host), by direct differences accumulated in double.
std::vector<double> matched_distances(const Tensor& a, const Tensor& b);

// Counts of the pairs seen by the functions below.
struct PairCounts {
  int64_t used = 0;
  int64_t skipped = 0;  // input distance zero (identical up to f32 rounding)
};

// Adds |f(x_a) - f(x_b)| / |x_a - x_b| of every pair a < b to `stats`, given the Gram
// matrices of the inputs and of the outputs. A pair whose squared input distance is at
// most 1e-12 times the larger squared norm (the inputs agree to f32 precision) has no
// defined ratio: it is left out and counted as skipped.
void add_pair_ratios(const Tensor& input_gram, const Tensor& output_gram, RunningStats& stats, PairCounts& counts);

// The same for given distances of matched pairs: adds output[k] / input[k]; a pair is
// skipped when input[k] <= 1e-6 * input_scale[k] (the larger norm of its two inputs).
void add_matched_ratios(const std::vector<double>& input, const std::vector<double>& input_scale,
                        const std::vector<double>& output, RunningStats& stats, PairCounts& counts);

// max(|a_k|, |b_k|) for every k: the scale add_matched_ratios compares distances with.
std::vector<double> matched_scales(const Tensor& a, const Tensor& b);

}  // namespace vitune::peft
