// Tensor construction, views, copies and dtype conversion.
#include "engine/tensor.h"

#include <cstring>
#include <limits>

#include "engine/allocator.h"
#include "engine/device_memory.h"

namespace vitune {

std::string shape_str(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

// At most this many elements, so that the byte size of any dtype (8 bytes at most)
// fits int64_t and size_t.
constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 8;

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    VITUNE_CHECK(d >= 0, "negative dimension in shape ", shape_str(shape));
    VITUNE_CHECK(d == 0 || n <= kMaxElements / d, "shape ", shape_str(shape),
                 " has more elements than can be counted");
    n *= d;
  }
  return n;
}

Storage::Storage(Device device, size_t bytes)
    : data_(allocate(device, bytes)), bytes_(bytes), device_(device) {}

Storage::Storage(void* data, size_t bytes, Device device, std::function<void()> release)
    : data_(data), bytes_(bytes), device_(device), release_(std::move(release)) {}

Storage::~Storage() {
  if (release_) {
    release_();
  } else {
    deallocate(device_, data_, bytes_);
  }
}

Tensor::Tensor(Shape shape, DType dtype, Device device)
    : shape_(std::move(shape)), dtype_(dtype) {
  numel_ = shape_numel(shape_);
  storage_ = std::make_shared<Storage>(device, nbytes());
}

Tensor Tensor::zeros(Shape shape, DType dtype, Device device) {
  Tensor t(std::move(shape), dtype, device);
  t.zero();
  return t;
}

Tensor Tensor::full(Shape shape, double value, DType dtype, Device device) {
  Tensor t(std::move(shape), dtype, device);
  t.fill(value);
  return t;
}

Tensor Tensor::like(const Tensor& other, Shape shape) { return Tensor(std::move(shape), other.dtype(), other.device()); }

Tensor Tensor::like(const Tensor& other, Shape shape, DType dtype) {
  return Tensor(std::move(shape), dtype, other.device());
}

Tensor Tensor::view_of(std::shared_ptr<Storage> storage, size_t offset, Shape shape, DType dtype) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  t.dtype_ = dtype;
  VITUNE_CHECK(offset <= storage->bytes() && t.nbytes() <= storage->bytes() - offset, "view of ", t.nbytes(), " bytes at offset ",
               offset, " overruns a block of ", storage->bytes(), " bytes");
  t.storage_ = std::move(storage);
  t.offset_ = offset;
  return t;
}

int64_t Tensor::dim(int axis) const {
  int n = ndim();
  int a = axis < 0 ? axis + n : axis;
  VITUNE_CHECK(a >= 0 && a < n, "axis ", axis, " out of range for tensor ", str());
  return shape_[size_t(a)];
}

Device Tensor::device() const {
  VITUNE_CHECK(storage_ != nullptr, "the device of an undefined tensor was asked for");
  return storage_->device();
}

void* Tensor::raw() const {
  VITUNE_CHECK(storage_ != nullptr, "host access to an undefined tensor");
  VITUNE_CHECK(storage_->device().is_cpu(), "host access to tensor ", str(), " on ", storage_->device().str(),
               ": copy it to the host with .to(Device::cpu()) first");
  return kernel_raw();
}

void Tensor::check_element_type(DType requested) const {
  VITUNE_CHECK(requested == dtype_, "tensor ", str(), " accessed as ", dtype_name(requested));
}

std::string Tensor::str() const { return std::string(dtype_name(dtype_)) + shape_str(shape_); }

Tensor Tensor::reshape(Shape shape) const {
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      VITUNE_CHECK(inferred < 0, "reshape of ", str(), ": more than one -1 in ", shape_str(shape));
      inferred = int(i);
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0) {
    VITUNE_CHECK(known > 0 && numel_ % known == 0, "cannot reshape ", str(), " to ", shape_str(shape));
    shape[size_t(inferred)] = numel_ / known;
  }
  VITUNE_CHECK(shape_numel(shape) == numel_, "cannot reshape ", str(), " to ", shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  VITUNE_CHECK(ndim() >= 1 && 0 <= begin && begin <= end && end <= shape_[0], "rows [", begin, ", ",
               end, ") out of range for ", str());
  Tensor t = *this;
  int64_t row_elements = shape_[0] == 0 ? 0 : numel_ / shape_[0];
  t.shape_[0] = end - begin;
  t.numel_ = row_elements * (end - begin);
  t.offset_ = offset_ + size_t(begin * row_elements) * dtype_size(dtype_);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(shape_, dtype_, device());
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& source) {
  VITUNE_CHECK(source.shape_ == shape_ && source.dtype_ == dtype_, "copy of ", source.str(),
               " into ", str());
  if (nbytes() == 0) return;
  const Device to = device(), from = source.device();
  if (to.host_memory() && from.host_memory()) {
    std::memmove(kernel_raw(), source.kernel_raw(), nbytes());
  } else {
    // The CUDA backend sees the emulated device's bytes as the host memory they are.
    cuda::copy_bytes(kernel_raw(), to.host_memory() ? Device::cpu() : to, source.kernel_raw(),
                     from.host_memory() ? Device::cpu() : from, nbytes());
  }
}

Tensor Tensor::to(Device device) const {
  if (!defined() || device == this->device()) return *this;
  Tensor t(shape_, dtype_, device);
  t.copy_from(*this);
  return t;
}

namespace {

double load_as_double(const void* base, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::F32: return static_cast<const float*>(base)[i];
    case DType::F64: return static_cast<const double*>(base)[i];
    case DType::I32: return static_cast<const int32_t*>(base)[i];
    case DType::I64: return double(static_cast<const int64_t*>(base)[i]);
    case DType::U8: return static_cast<const uint8_t*>(base)[i];
    case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(base)[i]);
  }
  return 0;
}

void store_from_double(void* base, DType dtype, int64_t i, double v) {
  switch (dtype) {
    case DType::F32: static_cast<float*>(base)[i] = float(v); break;
    case DType::F64: static_cast<double*>(base)[i] = v; break;
    case DType::I32: static_cast<int32_t*>(base)[i] = int32_t(v); break;
    case DType::I64: static_cast<int64_t*>(base)[i] = int64_t(v); break;
    case DType::U8: static_cast<uint8_t*>(base)[i] = uint8_t(v); break;
    case DType::BF16: static_cast<uint16_t*>(base)[i] = f32_to_bf16(float(v)); break;
    case DType::F16: static_cast<uint16_t*>(base)[i] = f32_to_f16(float(v)); break;
  }
}

}  // namespace

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  if (!device().host_memory()) {
    // f32 <-> f64 and f32 <-> bf16 on the device; other pairs (conversions at load and
    // save) through the host.
    Tensor t(shape_, dtype, device());
    if (numel_ == 0 || cuda::convert_on_device(kernel_raw(), dtype_, t.kernel_raw(), dtype, numel_, device().index)) {
      return t;
    }
    return to(Device::cpu()).to(dtype).to(device());
  }
  Tensor t(shape_, dtype, device());
  if (cpu::convert_on_host(kernel_raw(), dtype_, t.kernel_raw(), dtype, numel_)) return t;
  // Every source value (including i64 labels below 2^53) is exact in double, so one
  // path through double converts between any two dtypes without double rounding.
  for (int64_t i = 0; i < numel_; ++i) {
    store_from_double(t.kernel_raw(), dtype, i, load_as_double(kernel_raw(), dtype_, i));
  }
  return t;
}

void Tensor::fill(double value) {
  if (!device().host_memory()) {
    Tensor host(shape_, dtype_, Device::cpu());
    host.fill(value);
    copy_from(host);
    return;
  }
  for (int64_t i = 0; i < numel_; ++i) store_from_double(kernel_raw(), dtype_, i, value);
}

void Tensor::zero() {
  if (!device().host_memory()) {
    cuda::zero_bytes(kernel_raw(), device().index, nbytes());
  } else if (nbytes()) {
    std::memset(kernel_raw(), 0, nbytes());
  }
}

double Tensor::item(int64_t index) const {
  VITUNE_CHECK(index >= 0 && index < numel_, "item ", index, " out of range for ", str());
  if (!device().is_cpu()) return reshape({numel_}).rows(index, index + 1).to(Device::cpu()).item(0);
  return load_as_double(raw(), dtype_, index);
}

}  // namespace vitune
