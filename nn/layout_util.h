// Helpers the checkpoint layouts share to rename and reshape tensors into timm's layout
// (nn/layout_*.cpp). Every error names the file.
#pragma once

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "nn/checkpoint.h"

namespace vitune::nn::layout {

// out = x with its axes permuted (out axis i is x axis axes[i]), as f32.
Tensor permuted(const Tensor& source, const std::vector<int>& axes);
inline Tensor transposed(const Tensor& matrix) { return permuted(matrix, {1, 0}); }
// Rows of several [r_i, ...] tensors stacked into one [sum r_i, ...] f32 tensor.
Tensor stacked_rows(const std::vector<Tensor>& parts);
// Takes tensor `name` out of `pool`; a missing one is an error naming the file.
Tensor take(std::map<std::string, Tensor>& pool, const std::string& name, const std::string& path);
void require_rank(const Tensor& t, int rank, const std::string& path, const std::string& name);
// The names left in `pool`, comma-separated.
std::string leftover_list(const std::map<std::string, Tensor>& pool);
// 1 + the largest N of the names matching `pattern` (whose group 1 is N); 0 when none.
int block_count(const std::map<std::string, Tensor>& pool, const std::regex& pattern);
// Moves pool[from] to tensors[to] when present; returns whether it was.
bool move_if_present(std::map<std::string, Tensor>& pool, const std::string& from,
                     std::map<std::string, Tensor>& tensors, const std::string& to);

// The layouts, each from the file's tensors (`pool`) and `path` (for errors and for
// config.json beside it).
TimmTensors from_hugging_face(std::map<std::string, Tensor> pool, const std::string& path);
TimmTensors from_open_clip(std::map<std::string, Tensor> pool, const std::string& path);
TimmTensors from_big_vision(std::map<std::string, Tensor> pool, const std::string& path);

}  // namespace vitune::nn::layout
