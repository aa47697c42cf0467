// An uninitialised float array whose memory is recycled per thread. Transforms make and
// drop image-sized arrays for every example; memory fresh from the operating system
// costs a page fault per 4 KiB on first touch, which would cost more than the
// arithmetic. A freed buffer goes to the pool of the thread that frees it, if that
// thread has taken buffers before (at most 4 buffers and 64 MiB per thread), and is
// handed out again there for any size it can hold.
#pragma once

#include <cstddef>
#include <vector>

namespace vitune::data {

class FloatBuffer {
 public:
  FloatBuffer() = default;
  explicit FloatBuffer(size_t size);  // contents uninitialised
  ~FloatBuffer();
  FloatBuffer(FloatBuffer&& other) noexcept;
  FloatBuffer& operator=(FloatBuffer&& other) noexcept;
  FloatBuffer(const FloatBuffer&) = delete;
  FloatBuffer& operator=(const FloatBuffer&) = delete;

  size_t size() const { return size_; }
  float* data() { return data_; }
  const float* data() const { return data_; }
  float& operator[](size_t i) { return data_[i]; }
  float operator[](size_t i) const { return data_[i]; }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + size_; }

 private:
  void release();

  float* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace vitune::data
