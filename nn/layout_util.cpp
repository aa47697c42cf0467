// The helpers the checkpoint layouts share.
#include "nn/layout_util.h"

#include "engine/ops.h"

namespace vitune::nn::layout {

Tensor permuted(const Tensor& source, const std::vector<int>& axes) {
  Tensor x = source.to(DType::F32);
  Shape out_shape;
  for (int a : axes) out_shape.push_back(x.dim(a));
  Tensor out = Tensor::like(x, out_shape);
  int n = x.ndim();
  std::vector<int64_t> in_strides(size_t(n), 1);
  for (int i = n - 2; i >= 0; --i) in_strides[size_t(i)] = in_strides[size_t(i + 1)] * x.dim(i + 1);
  std::vector<int64_t> index(size_t(n), 0);
  const float* in = x.data<float>();
  float* o = out.data<float>();
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    int64_t offset = 0;
    for (int i = 0; i < n; ++i) offset += index[size_t(i)] * in_strides[size_t(axes[size_t(i)])];
    o[flat] = in[offset];
    for (int i = n - 1; i >= 0; --i) {
      if (++index[size_t(i)] < out_shape[size_t(i)]) break;
      index[size_t(i)] = 0;
    }
  }
  return out;
}


Tensor stacked_rows(const std::vector<Tensor>& parts) {
  Shape shape = parts[0].shape();
  shape[0] = 0;
  for (const Tensor& p : parts) shape[0] += p.dim(0);
  Tensor out = Tensor::like(parts[0], shape, DType::F32);
  int64_t row = 0;
  for (const Tensor& p : parts) {
    out.rows(row, row + p.dim(0)).copy_from(p.to(DType::F32));
    row += p.dim(0);
  }
  return out;
}

Tensor take(std::map<std::string, Tensor>& pool, const std::string& name, const std::string& path) {
  auto it = pool.find(name);
  VITUNE_CHECK(it != pool.end(), path, ": missing tensor '", name, "'");
  Tensor t = it->second;
  pool.erase(it);
  return t;
}

void require_rank(const Tensor& t, int rank, const std::string& path, const std::string& name) {
  VITUNE_CHECK(t.ndim() == rank, path, ": tensor '", name, "' is ", t.str(), ", expected ", rank,
               " dimensions");
}

std::string leftover_list(const std::map<std::string, Tensor>& pool) {
  std::string names;
  for (const auto& [name, t] : pool) names += (names.empty() ? "" : ", ") + name;
  return names;
}

int block_count(const std::map<std::string, Tensor>& pool, const std::regex& pattern) {
  int depth = 0;
  std::smatch m;
  for (const auto& [name, t] : pool) {
    if (std::regex_match(name, m, pattern)) depth = std::max(depth, std::stoi(m[1].str()) + 1);
  }
  return depth;
}

bool move_if_present(std::map<std::string, Tensor>& pool, const std::string& from,
                     std::map<std::string, Tensor>& tensors, const std::string& to) {
  auto it = pool.find(from);
  if (it == pool.end()) return false;
  tensors[to] = it->second;
  pool.erase(it);
  return true;
}

}  // namespace vitune::nn::layout
