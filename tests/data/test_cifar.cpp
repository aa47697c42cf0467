// CIFAR-10 and CIFAR-100 binary files written record by record.
#include <gtest/gtest.h>

#include "data/cifar_dataset.h"
#include "data/subset.h"
#include "data_test_files.h"

namespace vitune::data {
namespace {

using testing::cifar_record;
using testing::error_of;
using testing::fresh_folder;
using testing::pixel_value;
using testing::write_bytes;

std::vector<uint8_t> records(const std::vector<int>& labels, bool cifar100, int first_seed) {
  std::vector<uint8_t> bytes;
  for (size_t r = 0; r < labels.size(); ++r) {
    const std::vector<uint8_t> record =
        cifar_record(labels[r], /*coarse_label=*/19, cifar100, first_seed + int(r));
    bytes.insert(bytes.end(), record.begin(), record.end());
  }
  return bytes;
}

TEST(CifarDataset, ReadsSeveralCifar10BatchFilesInOrder) {
  const std::string folder = fresh_folder();
  write_bytes(folder + "/a.bin", records({3, 9}, false, 0));
  write_bytes(folder + "/b.bin", records({1}, false, 2));
  const CifarDataset dataset(CifarVariant::Cifar10, {folder + "/a.bin", folder + "/b.bin"});
  ASSERT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.num_classes(), 10);
  EXPECT_EQ(dataset.label(0), 3);
  EXPECT_EQ(dataset.label(1), 9);
  EXPECT_EQ(dataset.label(2), 1);
  EXPECT_EQ(dataset.describe(1), folder + "/a.bin record 1");
  EXPECT_EQ(dataset.describe(2), folder + "/b.bin record 0");
  // Planes R, G, B become interleaved pixels.
  const Image image = dataset.load(2);
  ASSERT_EQ(image.height, 32);
  ASSERT_EQ(image.width, 32);
  ASSERT_EQ(image.channels, 3);
  for (int y : {0, 5, 31}) {
    for (int x : {0, 17, 31}) {
      for (int c = 0; c < 3; ++c) EXPECT_EQ(image.at(y, x, c), pixel_value(2, y, x, c));
    }
  }
}

TEST(CifarDataset, Cifar100UsesTheFineLabel) {
  const std::string folder = fresh_folder();
  write_bytes(folder + "/train.bin", records({57, 0, 99}, true, 5));
  const CifarDataset dataset(CifarVariant::Cifar100, {folder + "/train.bin"});
  ASSERT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.label(0), 57);
  EXPECT_EQ(dataset.label(2), 99);
  EXPECT_EQ(dataset.num_classes(), 100);
  EXPECT_EQ(dataset.load(1).at(4, 6, 1), pixel_value(6, 4, 6, 1));
}

TEST(CifarDataset, EveryImageIs32x32AndASubsetSaysSo) {
  const std::string folder = fresh_folder();
  write_bytes(folder + "/train.bin", records({1, 2, 3}, false, 0));
  auto dataset = std::make_shared<CifarDataset>(CifarVariant::Cifar10, std::vector<std::string>{folder + "/train.bin"});
  ASSERT_TRUE(dataset->fixed_size().has_value());
  EXPECT_TRUE(*dataset->fixed_size() == (ImageSize{32, 32}));
  const auto first = first_examples(dataset, 2);
  ASSERT_TRUE(first->fixed_size().has_value());
  EXPECT_TRUE(*first->fixed_size() == (ImageSize{32, 32}));
}

TEST(CifarDataset, PartialRecordIsAnError) {
  const std::string folder = fresh_folder();
  std::vector<uint8_t> bytes = records({1, 2}, false, 0);
  bytes.resize(bytes.size() - 100);
  write_bytes(folder + "/cut.bin", bytes);
  const std::string message =
      error_of([&] { CifarDataset(CifarVariant::Cifar10, {folder + "/cut.bin"}); });
  EXPECT_NE(message.find("CIFAR-10 file " + folder +
                         "/cut.bin: 6046 bytes is not a whole number "
                         "of 3073-byte records"),
            std::string::npos)
      << message;
  // A CIFAR-10 file read as CIFAR-100 has the wrong record size too.
  write_bytes(folder + "/ten.bin", records({1, 2}, false, 0));
  EXPECT_NE(error_of([&] {
              CifarDataset(CifarVariant::Cifar100, {folder + "/ten.bin"});
            }).find("3074-byte records"),
            std::string::npos);
}

TEST(CifarDataset, LabelOutOfRangeIsAnError) {
  const std::string folder = fresh_folder();
  write_bytes(folder + "/bad.bin", records({2, 10}, false, 0));
  const std::string message =
      error_of([&] { CifarDataset(CifarVariant::Cifar10, {folder + "/bad.bin"}); });
  EXPECT_NE(message.find("record 1 has label 10, expected below 10"), std::string::npos) << message;
  write_bytes(folder + "/ok.bin", records({2, 4}, false, 0));
  EXPECT_NE(error_of([&] {
              CifarDataset(CifarVariant::Cifar10, {folder + "/ok.bin"}, 3);
            }).find("record 1 has label 4, expected below 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              CifarDataset(CifarVariant::Cifar10, {folder + "/missing.bin"});
            }).find(folder + "/missing.bin"),
            std::string::npos);
}

}  // namespace
}  // namespace vitune::data
