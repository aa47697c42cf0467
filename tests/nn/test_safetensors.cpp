// Tests of the safetensors reader and writer: round trips of every dtype, the exact
// bytes of a small file, and one malformed file per validation rule, each checked for
// its own message naming the file and the tensor.
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nn/safetensors.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Shape;
using vitune::Tensor;
using vitune::nn::read_safetensors;
using vitune::nn::SafetensorsFile;
using vitune::nn::write_safetensors;
using vitune::testing::read_raw;
using vitune::testing::TempPath;
using vitune::testing::write_raw;

// A file from its parts: the header length as 8 little-endian bytes, the header, the data.
std::string file_bytes(const std::string& header, const std::string& data = "") {
  std::string out;
  uint64_t size = header.size();
  for (int i = 0; i < 8; ++i) out += char((size >> (8 * i)) & 0xff);
  return out + header + data;
}

// A tensor of `bytes` bytes whose content is 0, 1, 2, ... (mod 251).
Tensor patterned(Shape shape, DType dtype, int seed) {
  Tensor t(std::move(shape), dtype, vitune::Device::cpu());
  auto* p = static_cast<unsigned char*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<unsigned char>((i * 7 + size_t(seed)) % 251);
  return t;
}

// Writes `bytes` and expects reading them to fail with a message containing the path
// and each of `phrases`.
void expect_read_error(const std::string& name, const std::string& bytes,
                       std::initializer_list<std::string> phrases) {
  TempPath path_file("safetensors_" + name, ".safetensors");
  const std::string& path = path_file.str();
  write_raw(path, bytes);
  try {
    read_safetensors(path);
    ADD_FAILURE() << name << ": expected an error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << name << ": " << message;
    for (const std::string& phrase : phrases) {
      EXPECT_NE(message.find(phrase), std::string::npos) << name << ": missing '" << phrase << "' in: " << message;
    }
  }
}

// A header entry as JSON text.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  uint64_t begin, uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

TEST(Safetensors, RoundTripOfEveryDtypeWithMetadata) {
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"f32", patterned({2, 3}, DType::F32, 1)},   {"f64", patterned({4}, DType::F64, 2)},
      {"i32", patterned({3, 1}, DType::I32, 3)},   {"i64", patterned({2, 2}, DType::I64, 4)},
      {"u8", patterned({5}, DType::U8, 5)},        {"empty", patterned({0, 3}, DType::F32, 0)},
      {"bf16", patterned({3}, DType::BF16, 6)},    {"f16", patterned({2, 1, 2}, DType::F16, 7)},
      {"scalar", patterned({}, DType::F32, 8)},    {"empty_last", patterned({4, 0}, DType::I64, 0)},
  };
  std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "na\xc3\xafve \"quoted\""}};
  TempPath path_file("safetensors_roundtrip", ".safetensors");
  const std::string& path = path_file.str();
  write_safetensors(path, tensors, metadata);

  std::string bytes = read_raw(path);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | uint8_t(bytes[size_t(i)]);
  EXPECT_EQ(header_size % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + header_size + 24 + 32 + 12 + 32 + 5 + 6 + 8 + 4);

  SafetensorsFile file = read_safetensors(path);
  EXPECT_EQ(file.path, path);
  EXPECT_EQ(file.metadata, metadata);
  ASSERT_EQ(file.names.size(), tensors.size());
  uint64_t offset = 8 + header_size;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, expected] = tensors[i];
    EXPECT_EQ(file.names[i], name);
    const Tensor& actual = file.at(name);
    EXPECT_EQ(actual.dtype(), expected.dtype()) << name;
    EXPECT_EQ(actual.shape(), expected.shape()) << name;
    EXPECT_TRUE(vitune::testing::bitwise_equal(actual, expected)) << name;
    // Aligned tensors are views of the one mapping; unaligned ones (i64 after 12
    // bytes of i32, bf16 after 5 bytes of u8, ...) are aligned copies.
    bool aligned = offset % vitune::dtype_size(expected.dtype()) == 0;
    EXPECT_EQ(actual.same_storage(file.at("f32")), aligned) << name << " at file offset " << offset;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(actual.raw()) % vitune::dtype_size(expected.dtype()), 0u) << name;
    offset += expected.nbytes();
  }

  // The mapping is private: writing into a tensor leaves the file as it was.
  file.at("u8").data<uint8_t>()[0] = 200;
  EXPECT_EQ(read_raw(path), bytes);
}

TEST(Safetensors, WritesTheBytesTheFormatPrescribes) {
  TempPath path_file("safetensors_known_bytes", ".safetensors");
  const std::string& path = path_file.str();
  write_safetensors(path, {{"a", Tensor::from_vector<float>({2}, {1.0f, -2.0f}, vitune::Device::cpu())}}, {{"k", "v"}});
  // 79 bytes of JSON plus one space of padding: header length 80 = 0x50.
  std::string expected = std::string("\x50\0\0\0\0\0\0\0", 8) +
                         "{\"__metadata__\":{\"k\":\"v\"},"
                         "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} " +
                         std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8);
  EXPECT_EQ(read_raw(path), expected);

  TempPath empty_path_file("safetensors_known_empty", ".safetensors");
  const std::string& empty_path = empty_path_file.str();
  write_safetensors(empty_path, {});
  EXPECT_EQ(read_raw(empty_path), std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
}

TEST(Safetensors, EmptyHeaderAndTrailingSpacesAreValid) {
  TempPath path_file("safetensors_empty", ".safetensors");
  const std::string& path = path_file.str();
  write_raw(path, file_bytes("{}"));
  SafetensorsFile empty = read_safetensors(path);
  EXPECT_TRUE(empty.names.empty());
  EXPECT_TRUE(empty.tensors.empty());
  EXPECT_TRUE(empty.metadata.empty());

  std::string data("\x01\x02\x03\x04", 4);
  write_raw(path, file_bytes("{" + entry("b", "U8", "[4]", 0, 4) + "}   \t ", data));
  SafetensorsFile file = read_safetensors(path);
  ASSERT_EQ(file.names, std::vector<std::string>{"b"});
  EXPECT_EQ(file.at("b").to_vector<uint8_t>(), (std::vector<uint8_t>{1, 2, 3, 4}));
}

TEST(Safetensors, NamesFollowDataOffsetsNotHeaderOrder) {
  TempPath path_file("safetensors_order", ".safetensors");
  const std::string& path = path_file.str();
  std::string header = "{" + entry("second", "I32", "[1]", 4, 8) + "," + entry("zero", "F32", "[0]", 4, 4) +
                       "," + entry("first", "I32", "[1]", 0, 4) + "}";
  write_raw(path, file_bytes(header, std::string("\x07\0\0\0\x09\0\0\0", 8)));
  SafetensorsFile file = read_safetensors(path);
  EXPECT_EQ(file.names, (std::vector<std::string>{"first", "zero", "second"}));
  EXPECT_EQ(file.at("first").to_vector<int32_t>(), std::vector<int32_t>{7});
  EXPECT_EQ(file.at("second").to_vector<int32_t>(), std::vector<int32_t>{9});
}

TEST(Safetensors, MissingFileAndMissingTensorAreNamed) {
  TempPath path_file("safetensors_does_not_exist", ".safetensors");
  const std::string& path = path_file.str();
  try {
    read_safetensors(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
  TempPath present_file("safetensors_present", ".safetensors");
  const std::string& present = present_file.str();
  write_safetensors(present, {{"x", Tensor::from_vector<float>({1}, {1.0f}, vitune::Device::cpu())}});
  SafetensorsFile file = read_safetensors(present);
  try {
    file.at("head.weight");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(present), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'head.weight'"), std::string::npos) << e.what();
  }
}

TEST(Safetensors, WriterRefusesBadNames) {
  TempPath path_file("safetensors_bad_names", ".safetensors");
  const std::string& path = path_file.str();
  Tensor t = Tensor::from_vector<float>({1}, {1.0f}, vitune::Device::cpu());
  EXPECT_THROW(write_safetensors(path, {{"", t}}), Error);
  EXPECT_THROW(write_safetensors(path, {{"__metadata__", t}}), Error);
  try {
    write_safetensors(path, {{"w", t}, {"w", t}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'w' is given twice"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(read_raw(path).empty()) << "a refused write must not create the file";
}

// ---- one test per validation rule ----

TEST(SafetensorsValidation, Rule1FileShorterThanEightBytes) {
  expect_read_error("rule1", std::string("\x02\0\0\0\0", 5), {"shorter than 8 bytes"});
}

TEST(SafetensorsValidation, Rule2HeaderLengthAboveLimit) {
  // 100,000,001 = 0x05F5E101.
  expect_read_error("rule2", std::string("\x01\xe1\xf5\x05\0\0\0\0{}", 10),
                    {"header length 100000001", "larger than the limit of 100000000 bytes"});
}

TEST(SafetensorsValidation, TorchPicklesAreNamedWithHowToConvertThem) {
  // torch.save since PyTorch 1.6: a zip archive; before: pickle protocol 2 (0x80 0x02),
  // whose first 15 bytes are the opcode, the magic number as a 10-byte LONG1, and STOP.
  expect_read_error("torch_zip", std::string("PK\x03\x04\x00\x00\x08\x00archive/data.pkl", 24),
                    {"PyTorch pickle (torch.save zip archive", "st.save_file(", "torch.load("});
  expect_read_error("torch_legacy", std::string("\x80\x02\x8a\x0al\xfc\x9c" "F\xf9 j\xa8P\x19.", 15),
                    {"PyTorch pickle (torch.save legacy pickle", "not safetensors"});
}

TEST(SafetensorsValidation, AHeaderLengthThatBeginsLikeAPickleIsStillSafetensors) {
  // 640 = 0x280: the length field starts 0x80 0x02, as a protocol-2 pickle does.
  TempPath path_file("safetensors_640", ".safetensors");
  write_raw(path_file.str(), file_bytes("{}" + std::string(638, ' ')));
  EXPECT_TRUE(read_safetensors(path_file.str()).tensors.empty());
}

TEST(SafetensorsValidation, Rule3HeaderLengthBeyondFile) {
  expect_read_error("rule3", std::string("\x64\0\0\0\0\0\0\0{\"a\":1}   ", 18),
                    {"header length 100", "larger than the 10 bytes that follow it"});
}

TEST(SafetensorsValidation, Rule4HeaderNotUtf8NotJsonNotObject) {
  expect_read_error("rule4_utf8", file_bytes("{\"t\xff\":1}"), {"header is not valid UTF-8"});
  expect_read_error("rule4_overlong", file_bytes("{\"t\xc0\xaf\":1}"), {"header is not valid UTF-8"});
  expect_read_error("rule4_json", file_bytes("{\"t\":"), {"header is not valid JSON"});
  expect_read_error("rule4_array", file_bytes("[1, 2]"), {"header is not a JSON object"});
  expect_read_error("rule4_leading_space", file_bytes(" {}"), {"header is not a JSON object"});
}

TEST(SafetensorsValidation, Rule5DuplicateTensorNames) {
  std::string header = "{" + entry("blocks.0.norm1.weight", "F32", "[1]", 0, 4) + "," +
                       entry("blocks.0.norm1.weight", "F32", "[1]", 4, 8) + "}";
  expect_read_error("rule5", file_bytes(header, std::string(8, '\0')),
                    {"'blocks.0.norm1.weight'", "duplicate tensor name"});
  std::string inner = "{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  expect_read_error("rule5_inner", file_bytes(inner, std::string(4, '\0')),
                    {"duplicate key 'dtype'", "'w'"});
}

TEST(SafetensorsValidation, Rule6EntryShape) {
  expect_read_error("rule6_not_object", file_bytes("{\"pos_embed\":[1,2]}"),
                    {"'pos_embed'", "entry must be an object with exactly dtype, shape and data_offsets"});
  expect_read_error("rule6_missing", file_bytes("{\"pos_embed\":{\"dtype\":\"F32\",\"shape\":[1]}}", "1234"),
                    {"'pos_embed'", "entry has no 'data_offsets'"});
  expect_read_error("rule6_extra_key",
                    file_bytes("{\"pos_embed\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],"
                               "\"stride\":[1]}}",
                               "1234"),
                    {"'pos_embed'", "unexpected key 'stride'"});
  expect_read_error("rule6_dtype_type",
                    file_bytes("{\"pos_embed\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", "1234"),
                    {"'pos_embed'", "dtype must be a string"});
  expect_read_error("rule6_negative_dim", file_bytes("{" + entry("pos_embed", "F32", "[-1]", 0, 4) + "}", "1234"),
                    {"'pos_embed'", "shape must be an array of non-negative integers"});
  expect_read_error("rule6_float_dim", file_bytes("{" + entry("pos_embed", "F32", "[1.0]", 0, 4) + "}", "1234"),
                    {"'pos_embed'", "shape must be an array of non-negative integers"});
  expect_read_error("rule6_three_offsets",
                    file_bytes("{\"pos_embed\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]}}", "1234"),
                    {"'pos_embed'", "data_offsets must be an array of 2 non-negative integers"});
  expect_read_error("rule6_negative_offset",
                    file_bytes("{\"pos_embed\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", "1234"),
                    {"'pos_embed'", "data_offsets must be an array of 2 non-negative integers"});
}

TEST(SafetensorsValidation, DtypeUnsupportedOrInvalid) {
  expect_read_error("dtype_bool", file_bytes("{" + entry("mask", "BOOL", "[4]", 0, 4) + "}", "1234"),
                    {"'mask'", "unsupported dtype 'BOOL'"});
  expect_read_error("dtype_f8", file_bytes("{" + entry("mask", "F8_E4M3", "[4]", 0, 4) + "}", "1234"),
                    {"'mask'", "unsupported dtype 'F8_E4M3'"});
  expect_read_error("dtype_invalid", file_bytes("{" + entry("mask", "f32", "[1]", 0, 4) + "}", "1234"),
                    {"'mask'", "invalid dtype 'f32'"});
}

TEST(SafetensorsValidation, Rule7MetadataNotStringObject) {
  expect_read_error("rule7_value", file_bytes("{\"__metadata__\":{\"epoch\":3}}"),
                    {"__metadata__ must be a JSON object of string values", "'epoch'"});
  expect_read_error("rule7_array", file_bytes("{\"__metadata__\":[\"a\"]}"),
                    {"__metadata__ must be a JSON object of string values"});
}

TEST(SafetensorsValidation, Rule8BeginAfterEnd) {
  expect_read_error("rule8", file_bytes("{" + entry("cls_token", "U8", "[0]", 8, 4) + "}", std::string(8, '\0')),
                    {"'cls_token'", "data_offsets [8, 4]: begin is after end"});
}

TEST(SafetensorsValidation, Rule9ElementCountOverflow) {
  expect_read_error("rule9_numel",
                    file_bytes("{" + entry("cls_token", "U8", "[4294967296,4294967296]", 0, 0) + "}"),
                    {"'cls_token'", "element count of shape [4294967296,4294967296] overflows"});
  // 2^62 elements fit a count but not 4 bytes each.
  expect_read_error("rule9_bytes", file_bytes("{" + entry("cls_token", "F32", "[4611686018427387904]", 0, 0) + "}"),
                    {"'cls_token'", "overflows"});
}

TEST(SafetensorsValidation, Rule10SizeDoesNotMatchShape) {
  expect_read_error("rule10", file_bytes("{" + entry("head.bias", "F32", "[3]", 0, 8) + "}", std::string(8, '\0')),
                    {"'head.bias'", "span 8 bytes but F32 shape [3] needs 12 bytes"});
}

TEST(SafetensorsValidation, Rule11OffsetsMustTileTheData) {
  expect_read_error("rule11_start", file_bytes("{" + entry("a", "U8", "[4]", 4, 8) + "}", std::string(8, '\0')),
                    {"'a'", "must start at 0"});
  expect_read_error("rule11_hole",
                    file_bytes("{" + entry("a", "U8", "[4]", 0, 4) + "," + entry("b", "U8", "[4]", 6, 10) + "}",
                               std::string(10, '\0')),
                    {"hole of 2 bytes", "'a'", "'b'"});
  expect_read_error("rule11_overlap",
                    file_bytes("{" + entry("a", "U8", "[4]", 0, 4) + "," + entry("b", "U8", "[4]", 2, 6) + "}",
                               std::string(6, '\0')),
                    {"overlap", "'a'", "'b'"});
  expect_read_error("rule11_trailing", file_bytes("{" + entry("a", "U8", "[4]", 0, 4) + "}", std::string(5, '\0')),
                    {"trailing bytes", "'a'"});
  expect_read_error("rule11_trailing_no_tensors", file_bytes("{}", std::string(3, '\0')), {"trailing bytes"});
  expect_read_error("rule11_missing", file_bytes("{" + entry("a", "U8", "[4]", 0, 4) + "}", std::string(3, '\0')),
                    {"missing bytes", "'a'"});
}

}  // namespace
