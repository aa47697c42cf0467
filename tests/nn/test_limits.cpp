// Limits of the checkpoint readers: a safetensors header listing more than 20,000
// tensors or 10,000 metadata entries, and a zip archive listing more than 100,000
// entries, are refused with an error naming the limit, before anything is allocated
// for them (and, for the header, before its parse time grows with the square).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "engine/error.h"
#include "nn/npz.h"
#include "nn/safetensors.h"

namespace vitune::testing {
namespace {

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string error_of(void (*read)(const std::string&), const std::string& path) {
  try {
    read(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void write_safetensors_header(const std::string& path, const std::string& header) {
  const uint64_t length = header.size();
  write_file(path, std::string(reinterpret_cast<const char*>(&length), 8) + header);
}

TEST(ReaderLimits, SafetensorsWithTooManyTensors) {
  // 20,001 zero-size tensors: a valid file but for the count.
  std::string header = "{";
  for (int i = 0; i <= 20000; ++i) {
    header += (i ? ",\"t" : "\"t") + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}";
  }
  header += "}";
  const std::string path = ::testing::TempDir() + "/many_tensors.safetensors";
  write_safetensors_header(path, header);
  const std::string message = error_of([](const std::string& p) { nn::read_safetensors(p); }, path);
  EXPECT_NE(message.find("the header lists more than the limit of 20000 tensors"), std::string::npos) << message;
}

TEST(ReaderLimits, SafetensorsWithTooManyMetadataEntries) {
  std::string header = "{\"__metadata__\":{";
  for (int i = 0; i <= 10000; ++i) header += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":\"v\"";
  header += "}}";
  const std::string path = ::testing::TempDir() + "/many_metadata.safetensors";
  write_safetensors_header(path, header);
  const std::string message = error_of([](const std::string& p) { nn::read_safetensors(p); }, path);
  EXPECT_NE(message.find("__metadata__ holds more than the limit of 10000 entries"), std::string::npos) << message;
}

TEST(ReaderLimits, SafetensorsEntriesNestedTooDeeply) {
  const std::string path = ::testing::TempDir() + "/nested.safetensors";
  write_safetensors_header(path, "{\"w\":{\"shape\":[[[[1]]]]}}");
  const std::string message = error_of([](const std::string& p) { nn::read_safetensors(p); }, path);
  EXPECT_NE(message.find("the entry of 'w' nests JSON too deeply"), std::string::npos) << message;
}

TEST(ReaderLimits, ZipArchiveListingTooManyEntries) {
  // A zip64 end of central directory record claiming 200,000 entries in a 0-byte
  // directory, its locator, and the end record pointing at them.
  std::string bytes;
  auto u16 = [&](uint16_t v) { bytes += char(v & 0xff), bytes += char(v >> 8); };
  auto u32 = [&](uint32_t v) { u16(uint16_t(v)), u16(uint16_t(v >> 16)); };
  auto u64 = [&](uint64_t v) { u32(uint32_t(v)), u32(uint32_t(v >> 32)); };
  u32(0x06064b50), u64(44), u16(45), u16(45), u32(0), u32(0), u64(200000), u64(200000), u64(0), u64(0);
  u32(0x07064b50), u32(0), u64(0), u32(1);
  u32(0x06054b50), u16(0), u16(0), u16(0xffff), u16(0xffff), u32(0xffffffff), u32(0xffffffff), u16(0);
  const std::string path = ::testing::TempDir() + "/many_entries.npz";
  write_file(path, bytes);
  const std::string message = error_of([](const std::string& p) { nn::read_npz(p); }, path);
  EXPECT_NE(message.find("the archive lists 200000 entries, more than the limit of 100000"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace vitune::testing
