// Tests of the .npy parser and the .npz (zip) reader on archives built here: stored and
// deflated entries, zip64 records, several dtypes and header layouts, and the errors
// for damaged archives and unsupported arrays.
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nn/npy.h"
#include "nn/npz.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Tensor;
using vitune::nn::NpzFile;
using vitune::nn::parse_npy;
using vitune::nn::read_npz;
using vitune::testing::TempPath;
using vitune::testing::write_raw;

void put16(std::string& out, uint32_t v) {
  out += char(v & 0xff);
  out += char((v >> 8) & 0xff);
}
void put32(std::string& out, uint32_t v) {
  put16(out, v & 0xffff);
  put16(out, v >> 16);
}
void put64(std::string& out, uint64_t v) {
  put32(out, uint32_t(v & 0xffffffffu));
  put32(out, uint32_t(v >> 32));
}

template <typename T>
std::string bytes_of(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// A .npy file: magic, version, header length, the dict padded with spaces and a
// newline to a multiple of 64 bytes, then the data.
std::string make_npy(const std::string& dict, const std::string& data, int major = 1) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += char(major);
  out += char(0);
  if (major == 1) {
    put16(out, uint32_t(header.size()));
  } else {
    put32(out, uint32_t(header.size()));
  }
  return out + header + data;
}

std::string raw_deflate(const std::string& data) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, uLong(data.size())), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = uInt(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(&out[0]);
  stream.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

struct Member {
  std::string name;
  std::string data;
  uint16_t method = 0;       // 0 stored, 8 deflated, anything else written stored
  bool wrong_crc = false;    // record a CRC that does not match the data
  int64_t size_error = 0;    // added to the recorded uncompressed size
};

// A zip archive as numpy.savez writes one; with `zip64`, every size and offset goes
// through zip64 extra fields and the zip64 end records, as zip writers do for large files.
std::string make_zip(const std::vector<Member>& members, bool zip64 = false, const std::string& comment = "") {
  std::string out, directory;
  for (const Member& m : members) {
    std::string stored = m.method == 8 ? raw_deflate(m.data) : m.data;
    uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(m.data.data()), uInt(m.data.size())));
    if (m.wrong_crc) crc ^= 0x1u;
    uint64_t size = uint64_t(int64_t(m.data.size()) + m.size_error);
    uint64_t offset = out.size();
    std::string local_extra, central_extra;
    if (zip64) {
      put16(local_extra, 1);
      put16(local_extra, 16);
      put64(local_extra, size);
      put64(local_extra, stored.size());
      put16(central_extra, 1);
      put16(central_extra, 24);
      put64(central_extra, size);
      put64(central_extra, stored.size());
      put64(central_extra, offset);
    }
    uint32_t size32 = zip64 ? 0xffffffffu : uint32_t(size);
    uint32_t stored32 = zip64 ? 0xffffffffu : uint32_t(stored.size());
    uint32_t offset32 = zip64 ? 0xffffffffu : uint32_t(offset);

    put32(out, 0x04034b50);
    put16(out, zip64 ? 45 : 20);
    put16(out, 0);  // flags
    put16(out, m.method);
    put16(out, 0);     // time
    put16(out, 0x21);  // date: 1980-01-01
    put32(out, crc);
    put32(out, stored32);
    put32(out, size32);
    put16(out, uint32_t(m.name.size()));
    put16(out, uint32_t(local_extra.size()));
    out += m.name + local_extra + stored;

    put32(directory, 0x02014b50);
    put16(directory, zip64 ? 45 : 20);
    put16(directory, zip64 ? 45 : 20);
    put16(directory, 0);
    put16(directory, m.method);
    put16(directory, 0);
    put16(directory, 0x21);
    put32(directory, crc);
    put32(directory, stored32);
    put32(directory, size32);
    put16(directory, uint32_t(m.name.size()));
    put16(directory, uint32_t(central_extra.size()));
    put16(directory, 0);  // comment
    put16(directory, 0);  // disk
    put16(directory, 0);  // internal attributes
    put32(directory, 0);  // external attributes
    put32(directory, offset32);
    directory += m.name + central_extra;
  }
  uint64_t directory_offset = out.size();
  out += directory;
  if (zip64) {
    uint64_t record_offset = out.size();
    put32(out, 0x06064b50);
    put64(out, 44);  // size of the rest of the record
    put16(out, 45);
    put16(out, 45);
    put32(out, 0);
    put32(out, 0);
    put64(out, members.size());
    put64(out, members.size());
    put64(out, directory.size());
    put64(out, directory_offset);
    put32(out, 0x07064b50);
    put32(out, 0);
    put64(out, record_offset);
    put32(out, 1);
  }
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, zip64 ? 0xffff : uint32_t(members.size()));
  put16(out, zip64 ? 0xffff : uint32_t(members.size()));
  put32(out, zip64 ? 0xffffffffu : uint32_t(directory.size()));
  put32(out, zip64 ? 0xffffffffu : uint32_t(directory_offset));
  put16(out, uint32_t(comment.size()));
  return out + comment;
}

const std::vector<float> kWeights = {0.5f, -1.25f, 3.0f, 1e-8f, -0.0f, 7.75f, 2.5f, -3.5f, 100.0f, 0.1f, 0.2f, 0.3f};
const std::vector<double> kBias = {1.0 / 3.0, -2.0, 1e300, 0.0, 42.0};

std::string weights_npy() {
  return make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", bytes_of(kWeights));
}
std::string bias_npy() {
  return make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }", bytes_of(kBias));
}

NpzFile write_and_read(const std::string& name, const std::string& archive) {
  TempPath path_file("npz_" + name, ".npz");
  const std::string& path = path_file.str();
  write_raw(path, archive);
  return read_npz(path);
}

// Expects reading `archive` to fail with a message naming the file and holding `phrases`.
void expect_npz_error(const std::string& name, const std::string& archive, std::vector<std::string> phrases) {
  TempPath path_file("npz_" + name, ".npz");
  const std::string& path = path_file.str();
  write_raw(path, archive);
  try {
    read_npz(path);
    ADD_FAILURE() << name << ": expected an error";
  } catch (const Error& e) {
    std::string message = e.what();
    phrases.push_back(path);
    for (const std::string& phrase : phrases) {
      EXPECT_NE(message.find(phrase), std::string::npos) << name << ": missing '" << phrase << "' in: " << message;
    }
  }
}

void expect_npy_error(const std::string& npy, const std::string& phrase) {
  try {
    parse_npy(npy, "array 'x'");
    ADD_FAILURE() << "expected an error containing '" << phrase << "'";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("array 'x'"), std::string::npos) << message;
    EXPECT_NE(message.find(phrase), std::string::npos) << "missing '" << phrase << "' in: " << message;
  }
}

TEST(Npz, StoredAndDeflatedEntriesReadBackExactly) {
  NpzFile npz = write_and_read("stored_deflated", make_zip({{"blocks.0.weight.npy", weights_npy(), 0},
                                                            {"blocks.0.bias.npy", bias_npy(), 8}}));
  EXPECT_EQ(npz.names, (std::vector<std::string>{"blocks.0.weight", "blocks.0.bias"}));
  const Tensor& weights = npz.at("blocks.0.weight");
  EXPECT_TRUE(vitune::testing::bitwise_equal(weights, Tensor::from_vector<float>({3, 4}, kWeights, vitune::Device::cpu())));
  EXPECT_TRUE(vitune::testing::bitwise_equal(npz.at("blocks.0.bias"), Tensor::from_vector<double>({5}, kBias, vitune::Device::cpu())));
}

TEST(Npz, Zip64RecordsAndArchiveComment) {
  NpzFile npz = write_and_read("zip64", make_zip({{"w.npy", weights_npy(), 8}, {"b.npy", bias_npy(), 0}},
                                                 /*zip64=*/true, "made by a test"));
  EXPECT_EQ(npz.names, (std::vector<std::string>{"w", "b"}));
  EXPECT_EQ(npz.at("w").to_vector<float>(), kWeights);
  EXPECT_EQ(npz.at("b").to_vector<double>(), kBias);

  NpzFile commented = write_and_read("comment", make_zip({{"w.npy", weights_npy(), 0}}, false, "PK\x05\x06 look-alike"));
  EXPECT_EQ(commented.at("w").to_vector<float>(), kWeights);
}

TEST(Npz, ZeroDimensionalArray) {
  Tensor scalar = parse_npy(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                                     bytes_of(std::vector<double>{3.5})),
                            "scalar");
  EXPECT_EQ(scalar.shape(), vitune::Shape{});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.item(), 3.5);
  Tensor empty = parse_npy(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", ""), "empty");
  EXPECT_EQ(empty.shape(), (vitune::Shape{0, 3}));
}

TEST(Npz, SeveralDtypes) {
  std::vector<int32_t> i32 = {-7, 0, 2147483647};
  std::vector<int64_t> i64 = {-9000000000LL, 5};
  std::vector<uint8_t> u8 = {0, 128, 255};
  std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x7bff};  // 1, -2, 65504
  std::vector<float> f32 = {1.5f, -2.5f};
  NpzFile npz = write_and_read(
      "dtypes",
      make_zip({{"i32.npy", make_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", bytes_of(i32)), 8},
                {"i64.npy", make_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", bytes_of(i64)), 0},
                {"u8.npy", make_npy("{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", bytes_of(u8)), 8},
                {"f16.npy", make_npy("{'descr': '<f2', 'fortran_order': False, 'shape': (1, 3), }", bytes_of(f16)), 0},
                {"native.npy", make_npy("{'descr': '=f4', 'fortran_order': False, 'shape': (2,), }", bytes_of(f32)), 0}}));
  EXPECT_EQ(npz.at("i32").dtype(), DType::I32);
  EXPECT_EQ(npz.at("i32").to_vector<int32_t>(), i32);
  EXPECT_EQ(npz.at("i64").dtype(), DType::I64);
  EXPECT_EQ(npz.at("i64").to_vector<int64_t>(), i64);
  EXPECT_EQ(npz.at("u8").dtype(), DType::U8);
  EXPECT_EQ(npz.at("u8").to_vector<uint8_t>(), u8);
  const Tensor& half = npz.at("f16");
  EXPECT_EQ(half.dtype(), DType::F16);
  EXPECT_EQ(half.shape(), (vitune::Shape{1, 3}));
  EXPECT_EQ(half.item(0), 1.0);
  EXPECT_EQ(half.item(1), -2.0);
  EXPECT_EQ(half.item(2), 65504.0);
  EXPECT_EQ(npz.at("native").to_vector<float>(), f32);
}

TEST(Npz, NpyVersionsAndHeaderLayouts) {
  std::string data = bytes_of(std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f});
  const char* dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  for (int major : {1, 2, 3}) {
    Tensor t = parse_npy(make_npy(dict, data, major), "versioned");
    EXPECT_EQ(t.shape(), (vitune::Shape{2, 3})) << "version " << major;
    EXPECT_EQ(t.item(5), 6.0) << "version " << major;
  }
  // Keys in another order, double quotes, no trailing commas, Python 2 long integers.
  for (const char* reordered : {"{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
                                "{\"fortran_order\":False,\"shape\":(2,3,),\"descr\":\"<f4\"}",
                                "{'descr': '<f4', 'shape': (2L, 3L), 'fortran_order': False, }"}) {
    Tensor t = parse_npy(make_npy(reordered, data), "reordered");
    EXPECT_EQ(t.shape(), (vitune::Shape{2, 3})) << reordered;
    EXPECT_EQ(t.item(4), 5.0) << reordered;
  }
}

TEST(Npz, MissingFileAndMissingArrayAreNamed) {
  TempPath path_file("npz_does_not_exist", ".npz");
  const std::string& path = path_file.str();
  try {
    read_npz(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  NpzFile npz = write_and_read("present", make_zip({{"w.npy", weights_npy(), 0}}));
  try {
    npz.at("head/kernel");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(npz.path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'head/kernel'"), std::string::npos) << e.what();
  }
}

// ---- damaged archives ----

TEST(NpzErrors, NotAZip) {
  expect_npz_error("not_zip", "this is plain text, not a zip archive at all", {"not a zip archive"});
  expect_npz_error("empty", "", {"not a zip archive"});
}

TEST(NpzErrors, TruncatedFile) {
  std::string archive = make_zip({{"w.npy", weights_npy(), 0}});
  expect_npz_error("truncated_tail", archive.substr(0, archive.size() - 5), {"truncated"});
  expect_npz_error("truncated_half", archive.substr(0, archive.size() / 2), {"truncated"});
}

TEST(NpzErrors, BadCrc) {
  expect_npz_error("bad_crc", make_zip({{"w.npy", weights_npy(), 0, /*wrong_crc=*/true}}),
                   {"entry 'w.npy'", "CRC-32 mismatch"});
}

TEST(NpzErrors, RecordedSizeDoesNotMatchInflatedData) {
  expect_npz_error("size_short", make_zip({{"w.npy", weights_npy(), 8, false, -4}}),
                   {"entry 'w.npy'", "inflates to more than"});
  expect_npz_error("size_long", make_zip({{"w.npy", weights_npy(), 8, false, 4}}),
                   {"entry 'w.npy'", "but the archive records"});
}

TEST(NpzErrors, UnsupportedCompressionMethod) {
  expect_npz_error("bzip2", make_zip({{"w.npy", weights_npy(), 12}}),
                   {"entry 'w.npy'", "unsupported compression method 12"});
}

TEST(NpzErrors, BadNpyMagic) {
  expect_npz_error("bad_magic", make_zip({{"w.npy", "\x93NUMPZ\x01\x00 and then some bytes", 0}}),
                   {"entry 'w.npy'", "bad magic"});
}

TEST(NpzErrors, BigEndianDescr) {
  expect_npz_error("big_endian",
                   make_zip({{"w.npy", make_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                                                std::string(8, '\0')), 8}}),
                   {"entry 'w.npy'", "big-endian arrays are not supported"});
}

TEST(NpzErrors, FortranOrder) {
  expect_npz_error("fortran",
                   make_zip({{"w.npy", make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                                                std::string(16, '\0')), 0}}),
                   {"entry 'w.npy'", "fortran_order arrays are not supported"});
}

TEST(NpzErrors, DataLengthMismatch) {
  expect_npz_error("length",
                   make_zip({{"w.npy", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
                                                std::string(8, '\0')), 0}}),
                   {"entry 'w.npy'", "data length mismatch", "needs 12 bytes but the array holds 8"});
}

TEST(NpzErrors, EntriesThatAreNotArrays) {
  expect_npz_error("not_npy", make_zip({{"readme.txt", "hello", 0}}), {"entry 'readme.txt'", "not a .npy array"});
}

TEST(NpyErrors, MalformedHeaders) {
  std::string data(12, '\0');
  expect_npy_error(make_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", data),
                   "unsupported dtype descr '<c8'");
  expect_npy_error(make_npy("{'descr': '|f4', 'fortran_order': False, 'shape': (3,), }", data),
                   "unsupported dtype descr '|f4'");
  expect_npy_error(make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", data),
                   "structured arrays");
  expect_npy_error(make_npy("{'descr': '<f4', 'shape': (3,), }", data), "no 'fortran_order'");
  expect_npy_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", data), "not a tuple");
  expect_npy_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", data),
                   "negative dimension");
  expect_npy_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}", data),
                   "unexpected key 'extra'");
  expect_npy_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'descr': '<f4'}", data),
                   "appears twice");
  expect_npy_error(make_npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,), }", data), "True or False");
  expect_npy_error(std::string("\x93NUMPY\x04\x00\x10\x00", 10) + std::string(16, ' '), "version 4.0");
}

}  // namespace
