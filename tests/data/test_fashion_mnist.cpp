// Fashion-MNIST as installed by the Debian package dataset-fashion-mnist, opened by spec
// (skipped when the package is not installed).
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <set>

#include "data/open_dataset.h"

namespace vitune::data {
namespace {

bool installed() {
  std::error_code error;
  return std::filesystem::exists(std::string(kFashionMnistFolder) + "/train-images-idx3-ubyte.gz",
                                 error) &&
         std::filesystem::exists(std::string(kFashionMnistFolder) + "/t10k-images-idx3-ubyte.gz",
                                 error);
}

#define SKIP_UNLESS_INSTALLED()                                               \
  if (!installed())                                                           \
  GTEST_SKIP() << "Fashion-MNIST is not installed at " << kFashionMnistFolder \
               << " (Debian package dataset-fashion-mnist)"

int pixel_sum(const Image& image) {
  return std::accumulate(image.pixels.begin(), image.pixels.end(), 0);
}

TEST(FashionMnist, TestSplitSizeAndFirstExample) {
  SKIP_UNLESS_INSTALLED();
  const auto test = open_dataset("fashion-mnist:test");
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(test->num_classes(), 10);
  EXPECT_EQ(test->label(0), 9);  // an ankle boot
  EXPECT_EQ(test->label(1), 2);
  const Image first = test->load(0);
  EXPECT_EQ(first.height, 28);
  EXPECT_EQ(first.width, 28);
  EXPECT_EQ(first.channels, 1);
  EXPECT_EQ(pixel_sum(first), 33456);
}

TEST(FashionMnist, TrainSplitAndAn800200SplitOfFiveClasses) {
  SKIP_UNLESS_INSTALLED();
  const auto train = open_dataset("fashion-mnist:train");
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(train->label(0), 9);
  EXPECT_EQ(train->label(3), 3);
  EXPECT_EQ(pixel_sum(train->load(0)), 76247);

  const std::string subset = "fashion-mnist:train?classes=5-9&per_class=200&seed=0&part=";
  const auto train800 = open_dataset(subset + "0:160");
  const auto val200 = open_dataset(subset + "160:200");
  ASSERT_EQ(train800->size(), 800);
  ASSERT_EQ(val200->size(), 200);
  EXPECT_EQ(train800->num_classes(), 5);
  std::vector<int> counts(5, 0);
  std::set<std::string> records;  // "<file> record <n>"
  for (int64_t i = 0; i < train800->size(); ++i) {
    ++counts[size_t(train800->label(i))];
    records.insert(train800->describe(i));
  }
  EXPECT_EQ(counts, std::vector<int>(5, 160));
  for (int64_t i = 0; i < val200->size(); ++i) {
    EXPECT_EQ(records.count(val200->describe(i)), 0u) << val200->describe(i) << " is in both";
  }
}

}  // namespace
}  // namespace vitune::data
