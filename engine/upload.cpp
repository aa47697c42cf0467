// Uploads ahead of use, over the backend's start_upload / finish_upload.
#include "engine/upload.h"

#include <utility>

#include "engine/device_memory.h"

namespace vitune {

Upload::Upload(const Tensor& source, Device device) {
  if (!source.defined() || device.host_memory() || !source.device().is_cpu()) {
    tensor_ = source.to(device);
    return;
  }
  tensor_ = Tensor(source.shape(), source.dtype(), device);
  if (tensor_.nbytes() > 0) {
    ticket_ = cuda::start_upload(tensor_.kernel_raw(), device.index, source.raw(), source.nbytes());
  }
}

Upload::Upload(Upload&& other) noexcept
    : tensor_(std::move(other.tensor_)), ticket_(std::exchange(other.ticket_, nullptr)) {}

Upload& Upload::operator=(Upload&& other) noexcept {
  if (this != &other) {
    try {
      finish();
    } catch (...) {  // a failed wait resurfaces at the device's next synchronisation
    }
    tensor_ = std::move(other.tensor_);
    ticket_ = std::exchange(other.ticket_, nullptr);
  }
  return *this;
}

Upload::~Upload() {
  try {
    finish();
  } catch (...) {  // as above: a destructor cannot throw
  }
}

void Upload::finish() {
  if (ticket_ == nullptr) return;
  void* ticket = std::exchange(ticket_, nullptr);
  cuda::finish_upload(tensor_.device().index, ticket);
}

Tensor Upload::take() {
  finish();
  return std::exchange(tensor_, Tensor());
}

}  // namespace vitune
