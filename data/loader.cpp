// The loader's prefetch window, worker threads and batch assembly.
#include "data/loader.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include "engine/random.h"

namespace vitune::data {

// One batch being prepared: the examples it holds, the batch tensor the workers copy
// transformed images into (made by the first image done, in its shape; an image of
// another shape is not copied), and per row the image's shape (empty until done),
// whether it was a skipped bad image, or the error it raised.
struct Loader::Pending {
  LoaderPosition position;
  std::vector<int64_t> examples;
  Tensor images;
  std::vector<Shape> shapes;
  std::vector<char> bad;
  std::vector<std::exception_ptr> errors;
  size_t tasks_left = 0;
};

Loader::Loader(const Dataset& dataset, Transform transform, LoaderOptions options)
    : dataset_(dataset), transform_(std::move(transform)), options_(options) {
  VITUNE_CHECK(options.batch_size >= 1, "loader: batch_size ", options.batch_size,
               " must be at least 1");
  VITUNE_CHECK(options.threads >= 1, "loader: threads ", options.threads, " must be at least 1");
  VITUNE_CHECK(options.prefetch_batches >= 1, "loader: prefetch_batches ", options.prefetch_batches,
               " must be at least 1");
  const int64_t n = dataset.size();
  batches_per_epoch_ = options.drop_last ? n / options.batch_size
                                         : (n + options.batch_size - 1) / options.batch_size;
  VITUNE_CHECK(batches_per_epoch_ > 0, "loader: a dataset of ", n, " examples gives no batch of ",
               options.batch_size, options.drop_last ? " with drop_last" : "");
  for (int t = 0; t < options.threads; ++t) threads_.emplace_back([this] { worker(); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    tasks_.clear();
  }
  work_ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

const std::vector<int64_t>& Loader::epoch_order(int64_t epoch) {
  if (order_epoch_ == epoch) return order_;
  if (options_.shuffle) {
    order_ = permutation(dataset_.size(), options_.seed, uint64_t(epoch));
  } else {
    order_.resize(size_t(dataset_.size()));
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = int64_t(i);
  }
  order_epoch_ = epoch;
  return order_;
}

void Loader::fill_window() {
  const size_t rows_per_task =
      std::max<size_t>(1, size_t(options_.batch_size) / (2 * size_t(options_.threads)));
  while (window_.size() < size_t(options_.prefetch_batches)) {
    auto pending = std::make_shared<Pending>();
    pending->position = next_to_queue_;
    const std::vector<int64_t>& order = epoch_order(next_to_queue_.epoch);
    const size_t first = size_t(next_to_queue_.batch * options_.batch_size);
    const size_t last = std::min(order.size(), first + size_t(options_.batch_size));
    pending->examples.assign(order.begin() + std::ptrdiff_t(first),
                             order.begin() + std::ptrdiff_t(last));
    const size_t rows = pending->examples.size();
    pending->shapes.resize(rows);
    pending->bad.assign(rows, 0);
    pending->errors.resize(rows);
    for (size_t begin = 0; begin < rows; begin += rows_per_task) {
      tasks_.push_back({pending, begin, std::min(rows, begin + rows_per_task)});
      ++pending->tasks_left;
    }
    window_.push_back(pending);
    if (++next_to_queue_.batch == batches_per_epoch_) {
      next_to_queue_ = {next_to_queue_.epoch + 1, 0};
    }
  }
  work_ready_.notify_all();
}

void Loader::worker() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    process(task);
    {
      // Drop this thread's reference before announcing the task done, so that the
      // batch (and any exception in it) ends its life with the caller of next().
      std::lock_guard<std::mutex> lock(mutex_);
      --task.batch->tasks_left;
      task.batch.reset();
    }
    batch_done_.notify_all();
  }
}

void Loader::process(const Task& task) {
  Pending& pending = *task.batch;
  const int64_t rows = int64_t(pending.examples.size());
  for (size_t row = task.begin; row < task.end; ++row) {
    const int64_t example = pending.examples[row];
    try {
      const RandomKey key{options_.seed, pending.position.epoch, example};
      const FloatImage image = transform_.run(dataset_.load(example), key);
      const Shape shape = {image.channels, image.height, image.width};
      float* slot = nullptr;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!pending.images.defined()) {
          pending.images = Tensor({rows, shape[0], shape[1], shape[2]}, DType::F32, Device::cpu());
        }
        const Shape& stored_shape = pending.images.shape();
        if (Shape(stored_shape.begin() + 1, stored_shape.end()) == shape) {
          slot = pending.images.data<float>() + int64_t(row) * shape_numel(shape);
        }
      }
      pending.shapes[row] = shape;
      if (slot != nullptr) {
        std::memcpy(slot, image.values.data(), image.values.size() * sizeof(float));
      }
    } catch (const BadImageError&) {
      if (options_.skip_bad_images) {
        pending.bad[row] = 1;
      } else {
        pending.errors[row] = std::current_exception();
      }
    } catch (...) {
      pending.errors[row] = std::current_exception();
    }
  }
}

Batch Loader::next() {
  std::shared_ptr<Pending> pending;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    fill_window();
    pending = window_.front();
    batch_done_.wait(lock, [&] { return pending->tasks_left == 0; });
    window_.pop_front();
    fill_window();
  }
  for (const std::exception_ptr& error : pending->errors) {
    if (error) std::rethrow_exception(error);
  }
  Batch batch = assemble(*pending);
  std::lock_guard<std::mutex> lock(mutex_);
  skipped_images_ += int64_t(batch.skipped.size());
  return batch;
}

Batch Loader::assemble(Pending& pending) {
  Batch batch;
  batch.epoch = pending.position.epoch;
  batch.index = pending.position.batch;
  std::vector<size_t> rows;
  for (size_t row = 0; row < pending.examples.size(); ++row) {
    if (pending.bad[row]) {
      batch.skipped.push_back(pending.examples[row]);
    } else {
      rows.push_back(row);
      batch.indices.push_back(pending.examples[row]);
    }
  }
  // Every image must have the shape of the batch's first; then all of them were copied.
  if (!rows.empty()) item_shape_ = pending.shapes[rows[0]];
  for (size_t row : rows) {
    const Shape& shape = pending.shapes[row];
    VITUNE_CHECK(shape == item_shape_, "loader: ", dataset_.describe(pending.examples[row]),
                 " came out of the transform as ", shape[0], "x", shape[1], "x", shape[2],
                 " but the batch's first image as ", item_shape_[0], "x", item_shape_[1], "x",
                 item_shape_[2], " (add a resize or crop to the transform)");
  }
  const Shape item = item_shape_.empty() ? Shape{0, 0, 0} : item_shape_;
  if (rows.size() == pending.examples.size()) {
    batch.images = pending.images;
  } else {
    // Bad images left out: the good rows, moved together.
    const int64_t item_size = shape_numel(item);
    batch.images = Tensor({int64_t(rows.size()), item[0], item[1], item[2]}, DType::F32, Device::cpu());
    for (size_t k = 0; k < rows.size(); ++k) {
      std::memcpy(batch.images.data<float>() + int64_t(k) * item_size,
                  pending.images.data<float>() + int64_t(rows[k]) * item_size,
                  size_t(item_size) * sizeof(float));
    }
  }
  batch.labels = Tensor({int64_t(rows.size())}, DType::I64, Device::cpu());
  for (size_t k = 0; k < rows.size(); ++k) {
    batch.labels.data<int64_t>()[k] = dataset_.label(pending.examples[rows[k]]);
  }
  return batch;
}

LoaderPosition Loader::position() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return window_.empty() ? next_to_queue_ : window_.front()->position;
}

void Loader::seek(int64_t epoch, int64_t batch) {
  VITUNE_CHECK(epoch >= 0 && batch >= 0 && batch < batches_per_epoch_, "loader: cannot seek to ",
               "epoch ", epoch, " batch ", batch, " (an epoch has ", batches_per_epoch_,
               " batches)");
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_.clear();
  window_.clear();
  next_to_queue_ = {epoch, batch};
}

int64_t Loader::skipped_images() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return skipped_images_;
}

}  // namespace vitune::data
