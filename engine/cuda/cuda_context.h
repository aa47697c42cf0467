// What every CUDA kernel file needs: status checks that name the failing call, the
// compute stream and cuBLAS handle vitune uses per device (and the copy stream of the
// uploads started ahead of use), the one way to wait for a device, launch sizes, and
// argument checks in the manner of engine/cpu/check.h. Include only from .cu files.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

#include "engine/tensor.h"

namespace vitune::cuda {

// Throws vitune::Error "CUDA error in <what>: <message>" unless status is success.
void check_cuda(cudaError_t status, const char* what);
void check_cublas(cublasStatus_t status, const char* what);
#define VITUNE_CUDA_CHECK(call) ::vitune::cuda::check_cuda((call), #call)
#define VITUNE_CUBLAS_CHECK(call) ::vitune::cuda::check_cublas((call), #call)
// After every kernel launch and library call (cuBLAS, CUB) on the current device:
// throws, naming the kernel or op, when the launch failed. In launch-synchronous mode
// (VITUNE_CUDA_SYNC=1, engine/devices.h) it also waits for the device's stream and
// throws any error the work raised, and any failed deferred index check, naming it.
void check_launch(const char* kernel);

// Makes `device` current on the calling thread, then returns its stream: every kernel
// and copy of vitune on that device is queued on this one stream, in program order.
cudaStream_t stream(int device);
// The device's second stream, which only the uploads started ahead of use run on
// (engine/device_memory.h start_upload); events order it against stream(device).
cudaStream_t copy_stream(int device);
// Waits until the work queued on stream(device) is done; throws naming `what` when it
// failed, then reports failed deferred index checks (index_check.h). Every place that
// waits for a device (read-backs, synchronize) waits through here.
void wait_for(int device, const char* what);
// Events of `device` (no timing), reused: take one, record or wait on it, give it back.
// A wait already queued on an event is not disturbed by recording it again.
cudaEvent_t take_event(int device);
void give_event(int device, cudaEvent_t event);
// The cuBLAS handle of `device`, bound to stream(device), in TF32 or full fp32 math
// after tf32_enabled().
cublasHandle_t cublas(int device);

constexpr int kThreads = 256;  // threads per block of the elementwise kernels
// Blocks of `threads` that cover n elements (at least one; capped at the grid limit,
// so kernels loop with a grid stride).
unsigned blocks_for(int64_t n, int threads = kThreads);

// Argument checks: t is defined and on a CUDA device.
void check_on_cuda(const Tensor& t, const char* op);
// t is on CUDA and f32 or f64.
void check_cuda_float(const Tensor& t, const char* op);
// The operands of a backward pass: x is on CUDA and f32 or f64, dy (the gradient with
// respect to the output) is on CUDA with x's shape and dtype. Whether the two share a
// device is left to same_device.
void check_output_grad(const Tensor& dy, const Tensor& x, const char* op);
// All tensors are on one CUDA device; returns its index.
int same_device(std::initializer_list<const Tensor*> tensors, const char* op);

// Calls f(float{}) or f(double{}) after the dtype of t (checked to be f32 or f64).
template <typename F>
auto dispatch_float(const Tensor& t, const char* op, F&& f) {
  check_cuda_float(t, op);
  if (t.dtype() == DType::F64) return f(double{});
  return f(float{});
}

}  // namespace vitune::cuda
