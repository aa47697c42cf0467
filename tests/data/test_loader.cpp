// The loader: batch contents and order, the last partial batch, determinism across
// thread counts and runs, seek(), and bad images.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "data/loader.h"
#include "data/transform_presets.h"
#include "data/transform_steps.h"
#include "engine/random.h"
#include "fake_dataset.h"
#include "test_util.h"

namespace vitune::data {
namespace {

using testing::cycling_labels;
using testing::error_of;
using testing::FakeDataset;
using vitune::testing::bitwise_equal;

// A random pipeline, so that determinism covers the augmentation draws too.
Transform random_transform() {
  TrainTransformOptions options;
  options.size = 3;
  return train_transform(options);
}

LoaderOptions batches_of(int64_t batch_size, int threads = 2) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.threads = threads;
  options.seed = 77;
  return options;
}

std::vector<Batch> take(Loader& loader, int count) {
  std::vector<Batch> batches;
  for (int b = 0; b < count; ++b) batches.push_back(loader.next());
  return batches;
}

void expect_same_batches(const std::vector<Batch>& a, const std::vector<Batch>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].epoch, b[k].epoch) << "batch " << k;
    EXPECT_EQ(a[k].index, b[k].index) << "batch " << k;
    EXPECT_EQ(a[k].indices, b[k].indices) << "batch " << k;
    EXPECT_TRUE(bitwise_equal(a[k].images, b[k].images)) << "batch " << k;
    EXPECT_TRUE(bitwise_equal(a[k].labels, b[k].labels)) << "batch " << k;
  }
}

TEST(Loader, BatchesInOrderWithTheLastOnePartial) {
  const FakeDataset dataset(cycling_labels(10, 3), 3);
  const Transform transform = random_transform();
  Loader loader(dataset, transform, batches_of(4));
  ASSERT_EQ(loader.batches_per_epoch(), 3);
  const std::vector<int64_t> sizes = {4, 4, 2};
  for (int b = 0; b < 3; ++b) {
    EXPECT_EQ(loader.position().epoch, 0);
    EXPECT_EQ(loader.position().batch, b);
    const Batch batch = loader.next();
    EXPECT_EQ(batch.epoch, 0);
    EXPECT_EQ(batch.index, b);
    ASSERT_EQ(batch.images.shape(), (Shape{sizes[size_t(b)], 3, 3, 3}));
    ASSERT_EQ(batch.labels.shape(), (Shape{sizes[size_t(b)]}));
    for (int64_t row = 0; row < sizes[size_t(b)]; ++row) {
      const int64_t example = 4 * b + row;
      EXPECT_EQ(batch.indices[size_t(row)], example);
      EXPECT_EQ(batch.labels.data<int64_t>()[row], example % 3);
      const Tensor expected = transform.apply(dataset.load(example), {77, 0, example});
      EXPECT_EQ(std::memcmp(batch.images.data<float>() + row * 27, expected.data<float>(),
                            27 * sizeof(float)),
                0)
          << "example " << example;
    }
  }
  EXPECT_EQ(loader.position().epoch, 1);
  EXPECT_EQ(loader.position().batch, 0);
  EXPECT_EQ(loader.next().indices, (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(Loader, DropLastLeavesOutThePartialBatch) {
  const FakeDataset dataset(cycling_labels(10, 3), 3);
  LoaderOptions options = batches_of(4);
  options.drop_last = true;
  Loader loader(dataset, random_transform(), options);
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  take(loader, 2);
  EXPECT_EQ(loader.next().epoch, 1);
}

TEST(Loader, ShuffledEpochsFollowThePermutation) {
  const FakeDataset dataset(cycling_labels(11, 3), 3);
  LoaderOptions options = batches_of(5);
  options.shuffle = true;
  Loader loader(dataset, random_transform(), options);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> seen;
    for (const Batch& batch : take(loader, 3)) {
      seen.insert(seen.end(), batch.indices.begin(), batch.indices.end());
    }
    EXPECT_EQ(seen, permutation(11, 77, uint64_t(epoch))) << "epoch " << epoch;
  }
}

TEST(Loader, OutputIsIdenticalForAnyThreadCountAndRun) {
  const FakeDataset dataset(cycling_labels(37, 4), 4, 9, 7);
  const Transform transform = random_transform();
  LoaderOptions options = batches_of(8, 1);
  options.shuffle = true;
  Loader one(dataset, transform, options);
  const std::vector<Batch> reference = take(one, 12);  // two and a half epochs
  for (int threads : {1, 2, 3}) {
    for (int prefetch : {1, 4}) {
      options.threads = threads;
      options.prefetch_batches = prefetch;
      Loader loader(dataset, transform, options);
      expect_same_batches(take(loader, 12), reference);
    }
  }
}

TEST(Loader, SeekGivesTheBatchesOfARunThrough) {
  const FakeDataset dataset(cycling_labels(23, 4), 4);
  LoaderOptions options = batches_of(5);
  options.shuffle = true;
  options.prefetch_batches = 3;
  Loader through(dataset, random_transform(), options);
  const std::vector<Batch> all = take(through, 15);  // 3 epochs of 5 batches

  Loader resumed(dataset, random_transform(), options);
  resumed.seek(1, 3);
  EXPECT_EQ(resumed.position().epoch, 1);
  EXPECT_EQ(resumed.position().batch, 3);
  expect_same_batches(take(resumed, 7), std::vector<Batch>(all.begin() + 8, all.end()));

  // Seeking back while batches are prefetched drops them.
  Loader busy(dataset, random_transform(), options);
  take(busy, 4);
  busy.seek(0, 1);
  expect_same_batches(take(busy, 3), std::vector<Batch>(all.begin() + 1, all.begin() + 4));
  EXPECT_THROW(busy.seek(0, 5), Error);
  EXPECT_THROW(busy.seek(-1, 0), Error);
}

TEST(Loader, BadImagesAreSkippedAndCountedWhenAsked) {
  FakeDataset dataset(cycling_labels(9, 3), 3);
  dataset.bad_images = {2, 4, 5};
  LoaderOptions options = batches_of(3);
  options.skip_bad_images = true;
  {
    Loader loader(dataset, random_transform(), options);
    const Batch first = loader.next();
    EXPECT_EQ(first.indices, (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(first.skipped, (std::vector<int64_t>{2}));
    EXPECT_EQ(first.images.dim(0), 2);
    EXPECT_EQ(first.labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(loader.skipped_images(), 1);
    const Batch second = loader.next();
    EXPECT_EQ(second.indices, (std::vector<int64_t>{3}));
    EXPECT_EQ(loader.skipped_images(), 3);
    EXPECT_EQ(loader.next().indices, (std::vector<int64_t>{6, 7, 8}));  // later batches not shifted
  }
  // A batch of bad images only is empty; before any good image its shape is unknown.
  dataset.bad_images = {0, 1, 2};
  Loader loader(dataset, random_transform(), options);
  EXPECT_EQ(loader.next().images.shape(), (Shape{0, 0, 0, 0}));
  EXPECT_EQ(loader.next().images.shape(), (Shape{3, 3, 3, 3}));
}

TEST(Loader, BadImageIsAnErrorNamingTheFileByDefault) {
  FakeDataset dataset(cycling_labels(9, 3), 3);
  dataset.bad_images = {4};
  Loader loader(dataset, random_transform(), batches_of(3));
  loader.next();
  try {
    loader.next();
    ADD_FAILURE() << "no error for the bad image";
  } catch (const BadImageError& error) {
    EXPECT_NE(std::string(error.what()).find("fake/4.png"), std::string::npos) << error.what();
  }
}

TEST(Loader, OtherErrorsStopItEvenWhenSkipping) {
  FakeDataset dataset(cycling_labels(9, 3), 3);
  dataset.failing = {1};
  LoaderOptions options = batches_of(3);
  options.skip_bad_images = true;
  Loader loader(dataset, random_transform(), options);
  EXPECT_NE(error_of([&] { loader.next(); }).find("fake/1.png failed"), std::string::npos);
}

TEST(Loader, ImagesOfDifferentShapesAreAnError) {
  FakeDataset dataset(cycling_labels(6, 3), 3);
  dataset.wrong_size = {4};
  Loader loader(dataset, Transform(), batches_of(3));
  EXPECT_EQ(loader.next().images.shape(), (Shape{3, 3, 4, 5}));
  EXPECT_NE(error_of([&] { loader.next(); }).find("fake/4.png came out of the transform as 3x5x5"),
            std::string::npos);
}

TEST(Loader, BadOptionsAreErrors) {
  const FakeDataset dataset(cycling_labels(3, 3), 3);
  EXPECT_THROW(Loader(dataset, Transform(), batches_of(0)), Error);
  EXPECT_THROW(Loader(dataset, Transform(), batches_of(2, 0)), Error);
  LoaderOptions options = batches_of(4);
  options.drop_last = true;
  EXPECT_NE(error_of([&] {
              Loader(dataset, Transform(), options);
            }).find("a dataset of 3 examples gives no batch of 4 with drop_last"),
            std::string::npos);
  const FakeDataset empty({}, 1);
  EXPECT_THROW(Loader(empty, Transform(), batches_of(4)), Error);
}

}  // namespace
}  // namespace vitune::data
