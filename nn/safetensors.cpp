// Reading and writing safetensors files. The reader applies the checks of the format's
// reference implementation, each with its own message naming the file and tensor.
#include "nn/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/atomic_file.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian and is read and written as the host's bytes");

namespace vitune::nn {

namespace {

// ordered_json keeps the header's key order, so tensors of equal offsets (zero-size
// ones) keep their order of appearance.
using Json = nlohmann::ordered_json;

// The reference implementation refuses headers above this size.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// vitune refuses files of more tensors (a ViT-H training checkpoint holds about 1,600)
// or more metadata entries. The JSON library keeps an object's keys in a list, so
// these limits also bound the time a header takes to parse.
constexpr size_t kMaxTensors = 20'000;
constexpr size_t kMaxMetadataEntries = 10'000;

struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kSupportedDTypes[] = {
    {"F32", DType::F32}, {"F64", DType::F64}, {"I32", DType::I32}, {"I64", DType::I64},
    {"U8", DType::U8},   {"BF16", DType::BF16}, {"F16", DType::F16}};
// The format's other dtypes, which vitune tensors cannot hold.
constexpr const char* kUnsupportedDTypes[] = {"BOOL",    "I8",      "I16",     "U16",
                                              "U32",     "U64",     "C64",     "F8_E4M3",
                                              "F8_E5M2", "F8_E8M0", "F4",      "F6_E2M3",
                                              "F6_E3M2"};

const char* safetensors_dtype_name(DType dtype) {
  for (const DTypeName& entry : kSupportedDTypes) {
    if (entry.dtype == dtype) return entry.name;
  }
  throw Error(cat("safetensors: dtype ", dtype_name(dtype), " has no safetensors name"));
}

[[noreturn]] void fail(const std::string& path, const std::string& message) {
  throw Error(cat("safetensors file '", path, "': ", message));
}

[[noreturn]] void fail_tensor(const std::string& path, const std::string& tensor,
                              const std::string& message) {
  fail(path, cat("tensor '", tensor, "': ", message));
}

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool is_valid_utf8(const unsigned char* text, size_t size) {
  size_t i = 0;
  while (i < size) {
    unsigned char lead = text[i];
    size_t length;
    uint32_t code;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if ((lead & 0xe0) == 0xc0) {
      length = 2;
      code = lead & 0x1f;
    } else if ((lead & 0xf0) == 0xe0) {
      length = 3;
      code = lead & 0x0f;
    } else if ((lead & 0xf8) == 0xf0) {
      length = 4;
      code = lead & 0x07;
    } else {
      return false;
    }
    if (size - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      if ((text[i + k] & 0xc0) != 0x80) return false;
      code = (code << 6) | (text[i + k] & 0x3f);
    }
    static constexpr uint32_t kSmallestOfLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kSmallestOfLength[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      return false;
    }
    i += length;
  }
  return true;
}

bool is_valid_utf8(const std::string& text) {
  return is_valid_utf8(reinterpret_cast<const unsigned char*>(text.data()), text.size());
}

// Parses the header, refusing a key that appears twice in one object (the JSON library
// would keep the last one silently), and, as soon as they appear, more tensors or
// metadata entries than the limits, keys an entry cannot have, and nesting deeper than
// an entry's arrays.
Json parse_header(const std::string& path, const char* text, size_t size) {
  std::vector<std::set<std::string>> keys_of_open_objects;
  std::string current_tensor;
  size_t tensors = 0;
  auto check_keys = [&](int depth, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        // The header object is at depth 0, entries at 1, their shape and offsets at 2.
        if (depth >= 3 || (depth == 2 && event == Json::parse_event_t::object_start)) {
          fail(path, cat("the entry of '", current_tensor,
                         "' nests JSON too deeply (an entry holds a dtype string and two arrays of integers)"));
        }
        if (event == Json::parse_event_t::object_start) keys_of_open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        keys_of_open_objects.pop_back();
        break;
      case Json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        std::set<std::string>& keys = keys_of_open_objects.back();
        bool is_new = keys.insert(key).second;
        if (depth == 1) {
          if (!is_new && key == "__metadata__") fail(path, "the header holds __metadata__ twice");
          if (!is_new) fail_tensor(path, key, "duplicate tensor name in the header");
          if (key != "__metadata__" && ++tensors > kMaxTensors) {
            fail(path, cat("the header lists more than the limit of ", kMaxTensors, " tensors"));
          }
          current_tensor = key;
        } else if (!is_new) {
          fail(path, cat("duplicate key '", key, "' inside the entry of '", current_tensor, "'"));
        } else if (current_tensor == "__metadata__") {
          if (keys.size() > kMaxMetadataEntries) {
            fail(path, cat("__metadata__ holds more than the limit of ", kMaxMetadataEntries, " entries"));
          }
        } else if (key != "dtype" && key != "shape" && key != "data_offsets") {
          fail_tensor(path, current_tensor,
                      cat("unexpected key '", key, "' in the entry (expected an object with exactly dtype, shape "
                          "and data_offsets)"));
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return Json::parse(text, text + size, check_keys);
  } catch (const Json::exception& e) {
    fail(path, cat("header is not valid JSON: ", e.what()));
  }
}

std::map<std::string, std::string> read_metadata(const std::string& path, const Json& value) {
  if (!value.is_object()) {
    fail(path, cat("__metadata__ must be a JSON object of string values, found JSON ", value.type_name()));
  }
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      fail(path, cat("__metadata__ must be a JSON object of string values; '", key, "' holds JSON ",
                     item.type_name()));
    }
    metadata[key] = item.get<std::string>();
  }
  return metadata;
}

// One tensor's entry, checked on its own (the tiling of offsets is checked later).
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin;
  uint64_t end;
};

bool is_array_of_unsigned(const Json& value) {
  if (!value.is_array()) return false;
  for (const Json& item : value) {
    if (!item.is_number_unsigned()) return false;
  }
  return true;
}

DType parse_dtype(const std::string& path, const std::string& name, const std::string& text) {
  for (const DTypeName& entry : kSupportedDTypes) {
    if (text == entry.name) return entry.dtype;
  }
  for (const char* unsupported : kUnsupportedDTypes) {
    if (text == unsupported) {
      fail_tensor(path, name, cat("unsupported dtype '", text,
                                  "' (vitune reads F32, F64, I32, I64, U8, BF16 and F16)"));
    }
  }
  fail_tensor(path, name, cat("invalid dtype '", text, "'"));
}

Entry read_entry(const std::string& path, const std::string& name, const Json& value) {
  static const char* const kExpected = "an object with exactly dtype, shape and data_offsets";
  if (!value.is_object()) fail_tensor(path, name, cat("entry must be ", kExpected, ", found JSON ", value.type_name()));
  for (const auto& item : value.items()) {
    const std::string& key = item.key();
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail_tensor(path, name, cat("unexpected key '", key, "' in the entry (expected ", kExpected, ")"));
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(key)) fail_tensor(path, name, cat("entry has no '", key, "' (expected ", kExpected, ")"));
  }
  const Json& dtype = value["dtype"];
  const Json& shape = value["shape"];
  const Json& offsets = value["data_offsets"];
  if (!dtype.is_string()) fail_tensor(path, name, "dtype must be a string");
  if (!is_array_of_unsigned(shape)) fail_tensor(path, name, "shape must be an array of non-negative integers");
  if (!is_array_of_unsigned(offsets) || offsets.size() != 2) {
    fail_tensor(path, name, "data_offsets must be an array of 2 non-negative integers");
  }

  Entry entry;
  entry.name = name;
  entry.dtype = parse_dtype(path, name, dtype.get<std::string>());
  entry.begin = offsets[0].get<uint64_t>();
  entry.end = offsets[1].get<uint64_t>();
  if (entry.begin > entry.end) {
    fail_tensor(path, name, cat("data_offsets [", entry.begin, ", ", entry.end, "]: begin is after end"));
  }

  // Counts elements and bytes in unsigned 64 bits, refusing anything a Tensor (int64
  // element count) could not hold.
  std::string shape_text = shape.dump();
  constexpr uint64_t kLimit = uint64_t(std::numeric_limits<int64_t>::max());
  uint64_t numel = 1;
  for (const Json& item : shape) {
    uint64_t dim = item.get<uint64_t>();
    if (dim > kLimit || (dim != 0 && numel > kLimit / dim)) {
      fail_tensor(path, name, cat("the element count of shape ", shape_text, " overflows"));
    }
    numel *= dim;
    entry.shape.push_back(int64_t(dim));
  }
  uint64_t element_bytes = dtype_size(entry.dtype);
  if (numel > kLimit / element_bytes) {
    fail_tensor(path, name, cat("the byte size of ", dtype.get<std::string>(), " shape ", shape_text, " overflows"));
  }
  uint64_t bytes = numel * element_bytes;
  if (entry.end - entry.begin != bytes) {
    fail_tensor(path, name, cat("data_offsets [", entry.begin, ", ", entry.end, "] span ",
                                entry.end - entry.begin, " bytes but ", dtype.get<std::string>(),
                                " shape ", shape_text, " needs ", bytes, " bytes"));
  }
  return entry;
}

// The tensors must tile the data buffer: sorted by offset, each starts where the
// previous one ended, the first at 0, the last at the end of the file.
void check_tiling(const std::string& path, std::vector<Entry>& entries, uint64_t data_bytes) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t position = 0;
  const Entry* previous = nullptr;
  for (const Entry& entry : entries) {
    if (entry.begin != position) {
      if (previous == nullptr) {
        fail_tensor(path, entry.name, cat("the first tensor starts at byte ", entry.begin,
                                          " of the data; a hole before it is not allowed, it must start at 0"));
      }
      if (entry.begin > position) {
        fail(path, cat("hole of ", entry.begin - position, " bytes in the data between tensor '",
                       previous->name, "' (ends at byte ", position, ") and tensor '", entry.name,
                       "' (starts at byte ", entry.begin, ")"));
      }
      fail(path, cat("tensors '", previous->name, "' (bytes [", previous->begin, ", ", previous->end,
                     ")) and '", entry.name, "' (bytes [", entry.begin, ", ", entry.end, ")) overlap"));
    }
    position = entry.end;
    previous = &entry;
  }
  if (position < data_bytes) {
    fail(path, cat("trailing bytes: the data holds ", data_bytes, " bytes but the tensors end at byte ",
                   position, previous ? cat(" (last tensor '", previous->name, "')") : std::string()));
  }
  if (position > data_bytes) {
    fail_tensor(path, previous->name, cat("missing bytes: the tensor ends at byte ", position,
                                          " of the data but the file holds only ", data_bytes,
                                          " data bytes (truncated file?)"));
  }
}

// A private, copy-on-write mapping of the whole file, released when the last tensor
// viewing it goes away. Writes into a tensor never reach the file.
std::shared_ptr<Storage> map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(cat("cannot open safetensors file '", path, "': ", std::strerror(errno)));
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    fail(path, cat("cannot stat: ", std::strerror(error)));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  size_t size = size_t(info.st_size);
  if (size < 8) {
    ::close(fd);
    fail(path, cat("file is ", size, " bytes, shorter than 8 bytes (the header length field)"));
  }
  void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int error = errno;
  ::close(fd);
  if (data == MAP_FAILED) fail(path, cat("cannot map the file into memory: ", std::strerror(error)));
  return std::make_shared<Storage>(data, size, Device::cpu(), [data, size] { ::munmap(data, size); });
}

// torch.save writes a zip archive (PK\3\4) since PyTorch 1.6 and a bare pickle (protocol
// 2 to 5 opcode 0x80 N) before; neither is safetensors, and reading their first bytes as a
// header length gives a meaningless number. Called only for a file that does not start
// like safetensors (a valid header length can begin with the same bytes); `bytes` holds
// at least 8 bytes.
void refuse_torch_pickle(const std::string& path, const char* bytes) {
  const bool zip = std::memcmp(bytes, "PK\x03\x04", 4) == 0;
  const bool pickle = uint8_t(bytes[0]) == 0x80 && bytes[1] >= 2 && bytes[1] <= 5;
  if (!zip && !pickle) return;
  fail(path, cat("a PyTorch pickle (torch.save ", zip ? "zip archive" : "legacy pickle",
                 ", as .pth/.pt/.bin files are), not safetensors; it is not read because unpickling ",
                 "runs code. Convert it once in Python:\n",
                 "  import torch, safetensors.torch as st\n",
                 "  sd = torch.load('model.pth', map_location='cpu', weights_only=True); ",
                 "st.save_file({k: v.contiguous() for k, v in sd.get('state_dict', sd).items()}, ",
                 "'model.safetensors')"));
}

}  // namespace

const Tensor& SafetensorsFile::at(const std::string& name) const {
  auto found = tensors.find(name);
  if (found == tensors.end()) fail(path, cat("no tensor named '", name, "'"));
  return found->second;
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::shared_ptr<Storage> mapping = map_file(path);
  const char* bytes = static_cast<const char*>(mapping->data());
  const uint64_t file_size = mapping->bytes();

  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | uint8_t(bytes[i]);
  if (header_size > kMaxHeaderBytes || header_size > file_size - 8 || header_size == 0 || bytes[8] != '{') {
    refuse_torch_pickle(path, bytes);
  }
  if (header_size > kMaxHeaderBytes) {
    fail(path, cat("header length ", header_size, " is larger than the limit of ", kMaxHeaderBytes, " bytes"));
  }
  if (header_size > file_size - 8) {
    fail(path, cat("header length ", header_size, " is larger than the ", file_size - 8,
                   " bytes that follow it"));
  }
  const char* header_text = bytes + 8;
  if (!is_valid_utf8(reinterpret_cast<const unsigned char*>(header_text), header_size)) {
    fail(path, "header is not valid UTF-8");
  }
  if (header_size == 0 || header_text[0] != '{') fail(path, "header is not a JSON object (it must start with '{')");
  Json header = parse_header(path, header_text, header_size);

  SafetensorsFile file;
  file.path = path;
  std::vector<Entry> entries;
  for (const auto& item : header.items()) {
    if (item.key() == "__metadata__") {
      file.metadata = read_metadata(path, item.value());
    } else {
      entries.push_back(read_entry(path, item.key(), item.value()));
    }
  }
  const uint64_t data_start = 8 + header_size;
  check_tiling(path, entries, file_size - data_start);

  for (const Entry& entry : entries) {
    // The mapping starts on a page boundary, so a tensor is aligned for its element
    // type when its offset in the file is. Kernels may rely on that alignment, so an
    // unaligned tensor (possible when a writer mixes dtypes freely) is copied.
    const size_t offset = size_t(data_start + entry.begin);
    Tensor tensor = Tensor::view_of(mapping, offset, entry.shape, entry.dtype);
    if (offset % dtype_size(entry.dtype) != 0) tensor = tensor.clone();
    file.names.push_back(entry.name);
    file.tensors.emplace(entry.name, std::move(tensor));
  }
  return file;
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  auto check = [&](bool condition, const std::string& message) {
    if (!condition) throw Error(cat("cannot write safetensors file '", path, "': ", message));
  };
  Json header = Json::object();
  if (!metadata.empty()) {
    Json object = Json::object();
    for (const auto& [key, value] : metadata) {
      check(is_valid_utf8(key) && is_valid_utf8(value), cat("metadata key '", key, "' or its value is not valid UTF-8"));
      object[key] = value;
    }
    header["__metadata__"] = std::move(object);
  }
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    check(!name.empty(), "a tensor has an empty name");
    check(name != "__metadata__", "'__metadata__' is reserved and cannot name a tensor");
    check(is_valid_utf8(name), cat("tensor name '", name, "' is not valid UTF-8"));
    check(names.insert(name).second, cat("tensor name '", name, "' is given twice"));
    check(tensor.defined(), cat("tensor '", name, "' is undefined"));
    Json entry = Json::object();
    entry["dtype"] = safetensors_dtype_name(tensor.dtype());
    entry["shape"] = tensor.shape();
    entry["data_offsets"] = {offset, offset + tensor.nbytes()};
    header[name] = std::move(entry);
    offset += tensor.nbytes();
  }
  std::string header_text = header.dump();
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  char length[8];
  for (int i = 0; i < 8; ++i) length[i] = char((uint64_t(header_text.size()) >> (8 * i)) & 0xff);

  write_file_atomically(path, [&](std::FILE* file) {
    auto write_bytes = [&](const void* data, size_t size) {
      if (size != 0 && std::fwrite(data, 1, size, file) != size) {
        throw Error(cat("cannot write safetensors file '", path, "': ", std::strerror(errno)));
      }
    };
    write_bytes(length, sizeof length);
    write_bytes(header_text.data(), header_text.size());
    for (const auto& named : tensors) {
      const Tensor host = named.second.to(Device::cpu());  // device tensors are saved from the host
      write_bytes(host.raw(), host.nbytes());
    }
  });
}

}  // namespace vitune::nn
