// The device-side index validation of index_check.h: every thread checks a share of
// the positions and lowers a shared "first bad position" with an integer atomicMin,
// whose result does not depend on the order of the threads.
#include <cstdint>

#include "engine/cuda/cuda_context.h"
#include "engine/cuda/index_check.h"

namespace vitune::cuda {

namespace {

// first_bad starts as all ones (the largest unsigned value: none found).
__global__ void first_bad_index_kernel(const int64_t* indices, int64_t count, int64_t limit,
                                       bool strictly_increasing, unsigned long long* first_bad) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t value = indices[i];
    const bool outside = value < 0 || value >= limit;
    const bool out_of_order = strictly_increasing && i > 0 && value <= indices[i - 1];
    if (outside || out_of_order) atomicMin(first_bad, static_cast<unsigned long long>(i));
  }
}

}  // namespace

int64_t first_bad_index(const Tensor& indices, int64_t limit, bool strictly_increasing) {
  const int64_t count = indices.numel();
  if (count == 0) return -1;
  const int device = indices.device().index;
  cudaStream_t s = stream(device);
  Tensor first_bad({1}, DType::I64, indices.device());
  auto* first = static_cast<unsigned long long*>(first_bad.kernel_raw());
  VITUNE_CUDA_CHECK(cudaMemsetAsync(first, 0xff, sizeof(unsigned long long), s));
  first_bad_index_kernel<<<blocks_for(count), kThreads, 0, s>>>(indices.kernel_data<int64_t>(), count, limit,
                                                                  strictly_increasing, first);
  check_launch("first_bad_index_kernel");
  unsigned long long host = 0;
  VITUNE_CUDA_CHECK(cudaMemcpyAsync(&host, first, sizeof(host), cudaMemcpyDeviceToHost, s));
  VITUNE_CUDA_CHECK(cudaStreamSynchronize(s));
  return host == ~0ull ? -1 : int64_t(host);
}

int64_t index_at(const Tensor& indices, int64_t position) {
  cudaStream_t s = stream(indices.device().index);
  int64_t host = 0;
  VITUNE_CUDA_CHECK(cudaMemcpyAsync(&host, indices.kernel_data<int64_t>() + position, sizeof(host),
                                    cudaMemcpyDeviceToHost, s));
  VITUNE_CUDA_CHECK(cudaStreamSynchronize(s));
  return host;
}

}  // namespace vitune::cuda
