// The per-thread pool behind FloatBuffer.
#include "data/float_buffer.h"

#include <utility>

namespace vitune::data {

namespace {

constexpr size_t kPoolBuffers = 4;
constexpr size_t kPoolFloats = (size_t(64) << 20) / sizeof(float);

struct FreeBuffer {
  float* data;
  size_t capacity;
};

// Freed buffers of this thread, oldest first.
struct Pool {
  std::vector<FreeBuffer> buffers;
  size_t floats = 0;
  ~Pool();
};

// Set while the thread's pool exists (a thread_local bool needs no destructor, so it
// can be read by buffers freed during the thread's exit, after the pool is gone).
thread_local bool pool_alive = false;

Pool& pool() {
  thread_local Pool instance;
  pool_alive = true;
  return instance;
}

Pool::~Pool() {
  pool_alive = false;
  for (const FreeBuffer& buffer : buffers) delete[] buffer.data;
}

}  // namespace

FloatBuffer::FloatBuffer(size_t size) : size_(size) {
  if (size == 0) return;
  Pool& free = pool();
  size_t best = free.buffers.size();
  for (size_t i = 0; i < free.buffers.size(); ++i) {
    const size_t capacity = free.buffers[i].capacity;
    if (capacity >= size &&
        (best == free.buffers.size() || capacity < free.buffers[best].capacity)) {
      best = i;
    }
  }
  if (best < free.buffers.size()) {
    data_ = free.buffers[best].data;
    capacity_ = free.buffers[best].capacity;
    free.floats -= capacity_;
    free.buffers.erase(free.buffers.begin() + std::ptrdiff_t(best));
  } else {
    data_ = new float[size];
    capacity_ = size;
  }
}

FloatBuffer::~FloatBuffer() { release(); }

FloatBuffer::FloatBuffer(FloatBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

FloatBuffer& FloatBuffer::operator=(FloatBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void FloatBuffer::release() {
  if (data_ == nullptr) return;
  float* const data = std::exchange(data_, nullptr);
  const size_t capacity = std::exchange(capacity_, 0);
  size_ = 0;
  if (!pool_alive || capacity > kPoolFloats) {
    delete[] data;
    return;
  }
  Pool& free = pool();
  free.buffers.push_back({data, capacity});
  free.floats += capacity;
  while (free.buffers.size() > kPoolBuffers || free.floats > kPoolFloats) {
    delete[] free.buffers.front().data;
    free.floats -= free.buffers.front().capacity;
    free.buffers.erase(free.buffers.begin());
  }
}

}  // namespace vitune::data
