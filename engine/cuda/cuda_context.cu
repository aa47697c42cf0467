// Status checks, the per-device streams, events and cuBLAS handle, the one way to wait
// for a device, launch sizes and argument checks of cuda_context.h, and the TF32 and
// launch-synchronous switches of engine/devices.h.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "engine/cpu/check.h"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/index_check.h"
#include "engine/device_memory.h"
#include "engine/devices.h"
#include "engine/error.h"

namespace vitune::cuda {

namespace {

constexpr int kMaxDevices = 16;

std::atomic<bool>& tf32_flag() {
  static std::atomic<bool> enabled{false};
  return enabled;
}

// VITUNE_CUDA_SYNC as read from the environment: 0 or 1; anything else is an error.
bool launch_sync_from_environment() {
  const char* text = std::getenv("VITUNE_CUDA_SYNC");
  if (text == nullptr || std::strcmp(text, "0") == 0 || *text == '\0') return false;
  VITUNE_CHECK(std::strcmp(text, "1") == 0, "VITUNE_CUDA_SYNC=", text,
               ": expected 1 (synchronise and check after every kernel) or 0");
  return true;
}

// -1: not decided yet (the environment is read on first use); 0 or 1 after that.
std::atomic<int>& launch_sync_state() {
  static std::atomic<int> state{-1};
  return state;
}

// The streams, events and cuBLAS handle of one device, made on first use and kept for
// the life of the process (destroying them at exit would race the driver's teardown).
struct DeviceContext {
  cudaStream_t stream = nullptr;
  cudaStream_t copy_stream = nullptr;
  cublasHandle_t handle = nullptr;
  bool handle_tf32 = false;
  std::vector<cudaEvent_t> free_events;
};

std::mutex& context_mutex() {
  static std::mutex mutex;
  return mutex;
}

DeviceContext& context(int device) {
  static DeviceContext contexts[kMaxDevices];
  VITUNE_CHECK(device >= 0 && device < kMaxDevices, "CUDA device ", device, " is out of range");
  std::lock_guard<std::mutex> lock(context_mutex());
  DeviceContext& c = contexts[device];
  if (c.stream == nullptr) {
    VITUNE_CUDA_CHECK(cudaSetDevice(device));
    VITUNE_CUDA_CHECK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
    VITUNE_CUDA_CHECK(cudaStreamCreateWithFlags(&c.copy_stream, cudaStreamNonBlocking));
  }
  return c;
}

}  // namespace

void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  throw Error(cat("CUDA error in ", what, ": ", cudaGetErrorName(status), " (", cudaGetErrorString(status), ")"));
}

void check_cublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(cat("cuBLAS error in ", what, ": ", cublasGetStatusName(status), " (", cublasGetStatusString(status),
                  ")"));
}

void check_launch(const char* kernel) {
  check_cuda(cudaGetLastError(), kernel);
  if (!launch_sync()) return;
  // The launch went to the current device's stream: stream(device) made it current.
  int device = 0;
  VITUNE_CUDA_CHECK(cudaGetDevice(&device));
  wait_for(device, cat(kernel, " (VITUNE_CUDA_SYNC=1: the stream was synchronised right after it)").c_str());
}

cudaStream_t stream(int device) {
  DeviceContext& c = context(device);
  VITUNE_CUDA_CHECK(cudaSetDevice(device));
  return c.stream;
}

cudaStream_t copy_stream(int device) {
  DeviceContext& c = context(device);
  VITUNE_CUDA_CHECK(cudaSetDevice(device));
  return c.copy_stream;
}

void wait_for(int device, const char* what) {
  check_cuda(cudaStreamSynchronize(stream(device)), what);
  report_failed_checks(device);
}

cudaEvent_t take_event(int device) {
  DeviceContext& c = context(device);
  {
    std::lock_guard<std::mutex> lock(context_mutex());
    if (!c.free_events.empty()) {
      cudaEvent_t event = c.free_events.back();
      c.free_events.pop_back();
      return event;
    }
  }
  VITUNE_CUDA_CHECK(cudaSetDevice(device));
  cudaEvent_t event = nullptr;
  VITUNE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

void give_event(int device, cudaEvent_t event) {
  DeviceContext& c = context(device);
  std::lock_guard<std::mutex> lock(context_mutex());
  c.free_events.push_back(event);
}

cublasHandle_t cublas(int device) {
  DeviceContext& c = context(device);
  // The handle is made, and its math mode switched, by one thread at a time.
  static std::mutex handle_mutex;
  std::lock_guard<std::mutex> lock(handle_mutex);
  VITUNE_CUDA_CHECK(cudaSetDevice(device));
  if (c.handle == nullptr) {
    VITUNE_CUBLAS_CHECK(cublasCreate(&c.handle));
    VITUNE_CUBLAS_CHECK(cublasSetStream(c.handle, c.stream));
    VITUNE_CUBLAS_CHECK(cublasSetMathMode(c.handle, CUBLAS_DEFAULT_MATH));
  }
  const bool tf32 = tf32_enabled();
  if (tf32 != c.handle_tf32) {
    VITUNE_CUBLAS_CHECK(cublasSetMathMode(c.handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    c.handle_tf32 = tf32;
  }
  return c.handle;
}

void set_tf32(bool enabled) { tf32_flag().store(enabled); }
bool tf32_enabled() { return tf32_flag().load(); }

void set_launch_sync(bool enabled) { launch_sync_state().store(enabled ? 1 : 0); }

bool launch_sync() {
  int state = launch_sync_state().load();
  if (state < 0) {
    state = launch_sync_from_environment() ? 1 : 0;
    int unset = -1;
    // A concurrent set_launch_sync wins over the environment.
    if (!launch_sync_state().compare_exchange_strong(unset, state)) state = unset;
  }
  return state == 1;
}

unsigned blocks_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  constexpr int64_t kMaxBlocks = int64_t(1) << 20;  // grid-stride loops cover the rest
  return unsigned(blocks < 1 ? 1 : blocks > kMaxBlocks ? kMaxBlocks : blocks);
}

void check_on_cuda(const Tensor& t, const char* op) {
  VITUNE_CHECK(t.defined(), op, ": an argument is an undefined tensor");
  VITUNE_CHECK(t.device().is_cuda(), op, ": tensor ", t.str(), " is on ", t.device().str(),
               " while the op runs on CUDA: move every operand to one device first");
}

void check_cuda_float(const Tensor& t, const char* op) {
  check_on_cuda(t, op);
  VITUNE_CHECK(t.dtype() == DType::F32 || t.dtype() == DType::F64, op, ": expected an f32 or f64 tensor, got ",
               t.str());
}

void check_output_grad(const Tensor& dy, const Tensor& x, const char* op) {
  check_cuda_float(x, op);
  check_on_cuda(dy, op);
  cpu::check_same(dy, x, op);
}

int same_device(std::initializer_list<const Tensor*> tensors, const char* op) {
  int device = -1;
  for (const Tensor* t : tensors) {
    check_on_cuda(*t, op);
    if (device < 0) device = t->device().index;
    VITUNE_CHECK(t->device().index == device, op, ": operands on cuda:", device, " and ",
                 t->device().str(), "; move them to one device first");
  }
  VITUNE_CHECK(device >= 0, op, ": no tensor operand");
  return device;
}

}  // namespace vitune::cuda
