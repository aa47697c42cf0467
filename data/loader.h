// The batching loader. Epoch e visits the examples in the order permutation(n, seed, e)
// when shuffling, else 0..n-1, in batches of batch_size (the last one smaller unless
// drop_last). A small pool of its own threads decodes and transforms examples up to
// prefetch_batches batches ahead of the caller.
//
// Determinism: batch b of epoch e holds the same examples, transformed with the same
// random draws (keyed by seed, epoch and dataset index), whatever the thread count,
// timing or history, so the output is bit-identical for any `threads`, and seek() to a
// position gives exactly the batches a run that got there by next() would see.
//
// Bad images: with skip_bad_images, an example whose image cannot be read or decoded
// (BadImageError) is left out of its batch, which is that much smaller (possibly
// empty); later batches are not shifted. Batch::skipped lists them and
// skipped_images() counts them. Without it, next() rethrows the error, which names the
// file. Any other error is always rethrown, by the next() that reaches its batch.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "data/dataset.h"
#include "data/transform.h"
#include "engine/tensor.h"

namespace vitune::data {

struct LoaderOptions {
  int64_t batch_size = 32;
  bool shuffle = false;
  uint64_t seed = 0;
  bool drop_last = false;
  int threads = 2;           // background threads, at least 1
  int prefetch_batches = 2;  // batches prepared ahead, at least 1
  bool skip_bad_images = false;
};

struct Batch {
  Tensor images;                 // [B, C, H, W] f32, on the host
  Tensor labels;                 // [B] i64, on the host
  std::vector<int64_t> indices;  // the dataset index of each row
  std::vector<int64_t> skipped;  // dataset indices of bad images left out
  int64_t epoch = 0;
  int64_t index = 0;  // the batch's number within its epoch
};

struct LoaderPosition {
  int64_t epoch = 0;
  int64_t batch = 0;  // within the epoch, in [0, batches_per_epoch())
};

// One caller at a time: next(), seek() and position() are meant for the training loop's
// thread; the loader's own threads are internal.
class Loader {
 public:
  // The dataset must outlive the loader. Throws if an epoch would have no batch.
  Loader(const Dataset& dataset, Transform transform, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  const LoaderOptions& options() const { return options_; }

  // The batch at position(), then moves the position on (to batch 0 of the next epoch
  // after the last batch). Every image must come out of the transform with the same
  // shape; a mismatch throws naming the example.
  Batch next();

  // The position of the batch next() returns.
  LoaderPosition position() const;
  // Continues from batch `batch` of epoch `epoch`; work already prefetched is dropped.
  void seek(int64_t epoch, int64_t batch);

  // Bad images left out of the batches returned so far.
  int64_t skipped_images() const;

 private:
  struct Pending;
  struct Task {
    std::shared_ptr<Pending> batch;
    size_t begin, end;  // rows of the batch
  };

  void worker();
  void process(const Task& task);
  // Queues batches until prefetch_batches are pending. Caller holds mutex_.
  void fill_window();
  // The dataset indices in epoch `epoch`'s order. Caller holds mutex_.
  const std::vector<int64_t>& epoch_order(int64_t epoch);
  Batch assemble(Pending& pending);

  const Dataset& dataset_;
  const Transform transform_;
  const LoaderOptions options_;
  int64_t batches_per_epoch_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable batch_done_;
  std::deque<Task> tasks_;
  std::deque<std::shared_ptr<Pending>> window_;  // pending batches, in order
  LoaderPosition next_to_queue_;                 // the batch after the window's last
  int64_t order_epoch_ = -1;                     // the epoch whose order order_ holds
  std::vector<int64_t> order_;
  int64_t skipped_images_ = 0;
  Shape item_shape_;  // [C, H, W] of the last image returned (used by next() only)
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace vitune::data
