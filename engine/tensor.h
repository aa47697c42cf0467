// Tensor: a shape, a dtype, a device and a shared, reference-counted block of bytes.
// Tensors are always dense and row-major (C order); a view (reshape, rows) shares the
// storage of the tensor it came from and starts at a byte offset into it. Copies are
// cheap (they share bytes); `clone()` makes an independent copy.
//
// A tensor's device is part of its identity and never a default: every constructor and
// factory takes it, usually from a tensor the new one is computed from (`like`).
// Host code reads and writes the bytes only of tensors on the cpu device (`data`,
// `raw`); a tensor on any other device -- a GPU, or the emulated device, which is host
// memory run by the CPU kernels -- is read only through an explicit copy, `.to(cpu)`.
// The kernels of a backend reach the bytes of the tensors on their own device through
// `kernel_data` / `kernel_raw`, which nothing outside engine/cpu and engine/cuda uses.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/dtype.h"
#include "engine/error.h"

namespace vitune {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& shape);
int64_t shape_numel(const Shape& shape);

// A block of bytes. Owned blocks come from the accounting allocator; borrowed blocks
// (a memory-mapped file) carry a release function and are not counted.
class Storage {
 public:
  Storage(Device device, size_t bytes);
  Storage(void* data, size_t bytes, Device device, std::function<void()> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  std::function<void()> release_;  // empty for owned blocks
};

class Tensor {
 public:
  Tensor() = default;
  // Uninitialised tensor of the given shape on `device`.
  Tensor(Shape shape, DType dtype, Device device);

  static Tensor zeros(Shape shape, DType dtype, Device device);
  static Tensor full(Shape shape, double value, DType dtype, Device device);
  // Uninitialised tensor of other's device, with other's dtype unless one is given.
  static Tensor like(const Tensor& other, Shape shape);
  static Tensor like(const Tensor& other, Shape shape, DType dtype);
  static Tensor zeros_like(const Tensor& other) { return zeros(other.shape(), other.dtype(), other.device()); }
  // The values of a host vector, placed on `device`.
  template <typename T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values, Device device);
  // A view onto `bytes` starting at `offset` inside `storage`.
  static Tensor view_of(std::shared_ptr<Storage> storage, size_t offset, Shape shape, DType dtype);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int ndim() const { return int(shape_.size()); }
  int64_t dim(int axis) const;  // negative axes count from the end
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  // The device of a defined tensor (an undefined one has none: asking is an error).
  Device device() const;
  size_t nbytes() const { return size_t(numel_) * dtype_size(dtype_); }
  std::string str() const;  // "f32[2, 3]"

  // Host access: the first byte, or the elements as T, of a tensor on the cpu device.
  // A tensor on any other device is refused with an error naming it: copy it with
  // .to(Device::cpu()) first.
  void* raw() const;
  template <typename T>
  T* data() const {
    check_element_type(dtype_of<T>::value);
    return static_cast<T*>(raw());
  }
  // Backend access: the same in the tensor's own memory (a device pointer on CUDA), for
  // the kernels of engine/cpu and engine/cuda only.
  void* kernel_raw() const { return static_cast<char*>(storage_->data()) + offset_; }
  template <typename T>
  T* kernel_data() const {
    check_element_type(dtype_of<T>::value);
    return static_cast<T*>(kernel_raw());
  }

  // Same bytes, new shape; one dimension may be -1.
  Tensor reshape(Shape shape) const;
  // Rows [begin, end) along the first dimension, as a view.
  Tensor rows(int64_t begin, int64_t end) const;
  Tensor clone() const;
  // Converted copy on the same device (or this tensor itself when the dtype already
  // matches). On a GPU, f32 <-> f64 runs on the device; other pairs go through the host.
  Tensor to(DType dtype) const;
  // Copy on another device (or this tensor itself when it is already there; an undefined
  // tensor stays undefined). A copy to the host is complete when this returns. A copy
  // from the host to a GPU returns at once: the host bytes are staged in pinned memory
  // and the device copies them in the order of its work (engine/device_memory.h), so the
  // source may be changed or freed right away and every later op sees the copy.
  // engine/upload.h starts such a copy ahead of its use, to overlap it with queued work.
  Tensor to(Device device) const;
  // Copies the values of `source` (same shape and dtype, any device) into this tensor's
  // bytes, with the ordering of to(Device).
  void copy_from(const Tensor& source);
  void fill(double value);
  void zero();

  // The values on the host (copied from the device first when needed: an explicit copy).
  template <typename T>
  std::vector<T> to_vector() const {
    const Tensor host = to(Device::cpu());
    const T* p = host.data<T>();
    return std::vector<T>(p, p + numel_);
  }
  // Scalar read of element `index` of a float tensor (f32 or f64), for tests and logs.
  double item(int64_t index = 0) const;

  bool same_storage(const Tensor& other) const { return storage_ == other.storage_; }

 private:
  void check_element_type(DType requested) const;

  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
  Shape shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::F32;
};

template <typename T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values, Device device) {
  Tensor t(std::move(shape), dtype_of<T>::value, Device::cpu());
  VITUNE_CHECK(int64_t(values.size()) == t.numel(), "from_vector: ", values.size(),
               " values for shape ", shape_str(t.shape()));
  std::copy(values.begin(), values.end(), t.data<T>());
  return t.to(device);
}

// Calls f(float{}) or f(double{}) after the dtype of t; any other dtype is an error
// naming op.
template <typename F>
auto on_float_dtype(const Tensor& t, const char* op, F&& f) {
  VITUNE_CHECK(t.dtype() == DType::F32 || t.dtype() == DType::F64, op,
               ": expected an f32 or f64 tensor, got ", t.str());
  if (t.dtype() == DType::F64) return f(double{});
  return f(float{});
}

}  // namespace vitune
