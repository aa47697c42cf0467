// .npy parsing and a zip reader for .npz archives: end-of-central-directory search,
// zip64 records, stored and deflated entries, size and CRC-32 checks.
#include "nn/npz.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "little-endian .npy data is copied as the host's bytes");

namespace vitune::nn {

namespace {

uint16_t le16(const unsigned char* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t le32(const unsigned char* p) { return uint32_t(le16(p)) | (uint32_t(le16(p + 2)) << 16); }
uint64_t le64(const unsigned char* p) { return uint64_t(le32(p)) | (uint64_t(le32(p + 4)) << 32); }

// ---- .npy ----

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// Parses the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// with its three keys in any order, followed by padding spaces and a newline.
class NpyHeaderParser {
 public:
  NpyHeaderParser(const char* text, size_t size, const std::string& what)
      : text_(text), size_(size), what_(what) {}

  NpyHeader parse() {
    NpyHeader header;
    std::set<std::string> seen;
    expect('{', "the header dict to start");
    while (true) {
      skip_spaces();
      if (accept('}')) break;
      std::string key = parse_string("a dict key");
      if (!seen.insert(key).second) fail(cat("key '", key, "' appears twice in the header"));
      skip_spaces();
      expect(':', cat("':' after key '", key, "'"));
      skip_spaces();
      if (key == "descr") {
        if (peek() == '[') fail("structured arrays (a list descr) are not supported");
        header.descr = parse_string("the descr string");
      } else if (key == "fortran_order") {
        header.fortran_order = parse_bool();
      } else if (key == "shape") {
        header.shape = parse_shape();
      } else {
        fail(cat("unexpected key '", key, "' in the header (expected descr, fortran_order, shape)"));
      }
      skip_spaces();
      if (accept(',')) continue;
      expect('}', "',' or '}' after a dict value");
      break;
    }
    skip_spaces();
    if (position_ != size_) fail("unexpected text after the header dict");
    for (const char* key : {"descr", "fortran_order", "shape"}) {
      if (!seen.count(key)) fail(cat("the header has no '", key, "'"));
    }
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw Error(cat(what_, ": bad .npy header at character ", position_, ": ", message));
  }
  char peek() const { return position_ < size_ ? text_[position_] : '\0'; }
  void skip_spaces() {
    while (position_ < size_ && (text_[position_] == ' ' || text_[position_] == '\t' ||
                                 text_[position_] == '\n' || text_[position_] == '\r')) {
      ++position_;
    }
  }
  bool accept(char c) {
    if (peek() != c || position_ == size_) return false;
    ++position_;
    return true;
  }
  void expect(char c, const std::string& context) {
    if (!accept(c)) fail(cat("expected ", context));
  }

  std::string parse_string(const char* context) {
    char quote = peek();
    if (quote != '\'' && quote != '"') fail(cat("expected ", context, " (a quoted string)"));
    ++position_;
    std::string value;
    while (position_ < size_ && text_[position_] != quote) {
      if (text_[position_] == '\\') fail("escape sequences in header strings are not supported");
      value += text_[position_++];
    }
    if (position_ == size_) fail("unterminated string");
    ++position_;
    return value;
  }

  bool parse_bool() {
    for (const auto& [word, value] : {std::pair<const char*, bool>{"True", true}, {"False", false}}) {
      size_t length = std::strlen(word);
      if (size_ - position_ >= length && std::strncmp(text_ + position_, word, length) == 0) {
        position_ += length;
        return value;
      }
    }
    fail("expected True or False for fortran_order");
  }

  // A non-negative integer; old files written under Python 2 may end it with L.
  int64_t parse_dimension() {
    if (peek() == '-') fail("negative dimension in shape");
    if (peek() < '0' || peek() > '9') fail("expected an integer in shape");
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      int digit = text_[position_++] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("dimension too large");
      value = value * 10 + digit;
    }
    if (peek() == 'L' || peek() == 'l') ++position_;
    return value;
  }

  // A tuple: (), (3,), (3, 4) or (3, 4,).
  Shape parse_shape() {
    expect('(', "a tuple for shape");
    Shape shape;
    bool trailing_comma = false;
    while (true) {
      skip_spaces();
      if (accept(')')) break;
      if (!shape.empty() && !trailing_comma) fail("expected ',' or ')' in shape");
      shape.push_back(parse_dimension());
      skip_spaces();
      trailing_comma = accept(',');
    }
    if (shape.size() == 1 && !trailing_comma) fail("shape is not a tuple (a one-element tuple needs a comma)");
    return shape;
  }

  const char* text_;
  size_t size_;
  size_t position_ = 0;
  const std::string& what_;
};

std::string shape_tuple(const Shape& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return out + (shape.size() == 1 ? ",)" : ")");
}

// Maps a descr such as '<f4' to a dtype. Multi-byte types must be little-endian
// ('<', or '=' native on this little-endian host); for u1 the byte order is moot.
DType parse_descr(const std::string& descr, const std::string& what) {
  struct Known {
    const char* type;
    DType dtype;
  };
  static constexpr Known kKnown[] = {{"f4", DType::F32}, {"f8", DType::F64}, {"i4", DType::I32},
                                     {"i8", DType::I64}, {"u1", DType::U8},  {"f2", DType::F16}};
  if (descr.size() >= 2) {
    const char order = descr[0];
    const std::string type = descr.substr(1);
    for (const Known& known : kKnown) {
      if (type != known.type) continue;
      bool single_byte = dtype_size(known.dtype) == 1;
      if (order == '<' || order == '=' || (single_byte && (order == '|' || order == '>'))) return known.dtype;
      if (order == '>') {
        throw Error(cat(what, ": big-endian arrays are not supported (descr '", descr,
                        "'); save the array as little-endian"));
      }
      break;
    }
  }
  throw Error(cat(what, ": unsupported dtype descr '", descr,
                  "' (supported: '<f4', '<f8', '<i4', '<i8', '|u1', '<f2')"));
}

Tensor parse_npy_bytes(const unsigned char* bytes, size_t size, const std::string& what) {
  static const unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(bytes, kMagic, 6) != 0) {
    throw Error(cat(what, ": not a .npy array (bad magic; expected \\x93NUMPY)"));
  }
  int major = bytes[6], minor = bytes[7];
  size_t header_start;
  uint64_t header_size;
  if (major == 1) {
    header_start = 10;
    header_size = le16(bytes + 8);
  } else if (major == 2 || major == 3) {
    if (size < 12) throw Error(cat(what, ": .npy file ends inside its header length"));
    header_start = 12;
    header_size = le32(bytes + 8);
  } else {
    throw Error(cat(what, ": unsupported .npy format version ", major, ".", minor));
  }
  if (header_size > size - header_start) {
    throw Error(cat(what, ": .npy header length ", header_size, " runs past the end of the ", size,
                    "-byte array file"));
  }
  NpyHeader header =
      NpyHeaderParser(reinterpret_cast<const char*>(bytes + header_start), size_t(header_size), what).parse();
  if (header.fortran_order) {
    throw Error(cat(what, ": fortran_order arrays are not supported (save the array in C order)"));
  }
  DType dtype = parse_descr(header.descr, what);

  const uint64_t data_size = size - header_start - header_size;
  uint64_t needed = dtype_size(dtype);
  for (int64_t dim : header.shape) {
    if (dim != 0 && needed > std::numeric_limits<uint64_t>::max() / uint64_t(dim)) {
      throw Error(cat(what, ": shape ", shape_tuple(header.shape), " is too large"));
    }
    needed *= uint64_t(dim);
  }
  if (needed != data_size) {
    throw Error(cat(what, ": data length mismatch: shape ", shape_tuple(header.shape), " of '",
                    header.descr, "' needs ", needed, " bytes but the array holds ", data_size));
  }
  Tensor tensor(header.shape, dtype);
  if (data_size) std::memcpy(tensor.raw(), bytes + header_start + header_size, size_t(data_size));
  return tensor;
}

// ---- zip ----

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr size_t kEndRecordSize = 22;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kZip64EndRecordSize = 56;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kLocalHeaderSize = 30;
constexpr uint16_t kZip64ExtraId = 0x0001;
// Deflate cannot expand data by more than about 1032 times; a recorded size beyond
// that is a corrupt header, refused before allocating for it.
constexpr uint64_t kMaxDeflateRatio = 1032;

// The whole file mapped read-only for the duration of the read.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(cat("cannot open npz file '", path, "': ", std::strerror(errno)));
    struct stat info;
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      ::close(fd);
      throw Error(cat("npz file '", path, "': not a regular file"));
    }
    size_ = size_t(info.st_size);
    if (size_ > 0) {
      void* data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      int error = errno;
      ::close(fd);
      if (data == MAP_FAILED) {
        throw Error(cat("npz file '", path, "': cannot map the file into memory: ", std::strerror(error)));
      }
      data_ = static_cast<const unsigned char*>(data);
    } else {
      ::close(fd);
    }
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

// Where the central directory is, from the end-of-central-directory record (and the
// zip64 one when present).
struct CentralDirectory {
  uint64_t entries;
  uint64_t offset;
  uint64_t size;
  uint64_t end;  // where the records that follow the directory begin
};

struct ZipEntry {
  std::string name;
  uint16_t flags;
  uint16_t method;
  uint32_t crc;
  uint64_t compressed_size;
  uint64_t size;
  uint64_t local_header_offset;
};

class ZipReader {
 public:
  ZipReader(const std::string& path, const MappedFile& file)
      : path_(path), bytes_(file.data()), size_(file.size()) {}

  std::vector<ZipEntry> entries() const {
    CentralDirectory directory = find_central_directory();
    std::vector<ZipEntry> entries;
    uint64_t position = directory.offset;
    const uint64_t directory_end = directory.offset + directory.size;
    for (uint64_t i = 0; i < directory.entries; ++i) {
      if (directory_end - position < kCentralHeaderSize || le32(bytes_ + position) != kCentralHeaderSignature) {
        fail(cat("corrupt central directory: entry ", i, " of ", directory.entries, " is not where expected"));
      }
      const unsigned char* header = bytes_ + position;
      ZipEntry entry;
      entry.flags = le16(header + 8);
      entry.method = le16(header + 10);
      entry.crc = le32(header + 16);
      entry.compressed_size = le32(header + 20);
      entry.size = le32(header + 24);
      uint16_t name_size = le16(header + 28);
      uint16_t extra_size = le16(header + 30);
      uint16_t comment_size = le16(header + 32);
      uint16_t disk = le16(header + 34);
      entry.local_header_offset = le32(header + 42);
      uint64_t record_size = kCentralHeaderSize + uint64_t(name_size) + extra_size + comment_size;
      if (directory_end - position < record_size) {
        fail(cat("corrupt central directory: entry ", i, " runs past its end"));
      }
      entry.name.assign(reinterpret_cast<const char*>(header + kCentralHeaderSize), name_size);
      apply_zip64_extra(entry, disk, header + kCentralHeaderSize + name_size, extra_size);
      entries.push_back(entry);
      position += record_size;
    }
    return entries;
  }

  // The entry's uncompressed bytes, checked against its recorded size and CRC-32: a
  // stored entry's bytes in the mapped file, or a deflated one's, inflated into `inflated`.
  std::pair<const unsigned char*, size_t> read(const ZipEntry& entry, std::string& inflated) const {
    if (entry.flags & 1) fail_entry(entry, "encrypted entries are not supported");
    const unsigned char* data = entry_data(entry);
    if (entry.method == 0) {
      if (entry.compressed_size != entry.size) {
        fail_entry(entry, cat("stored entry has compressed size ", entry.compressed_size, " but size ", entry.size));
      }
    } else if (entry.method == 8) {
      inflated = inflate_entry(entry, data);
      data = reinterpret_cast<const unsigned char*>(inflated.data());
    } else {
      fail_entry(entry, cat("unsupported compression method ", entry.method,
                            " (only 0, stored, and 8, deflate, are supported)"));
    }
    uint32_t crc = uint32_t(crc32_z(0, data, size_t(entry.size)));
    if (crc != entry.crc) {
      fail_entry(entry, cat("CRC-32 mismatch: the data has ", crc, " but the archive records ", entry.crc,
                            " (corrupt file)"));
    }
    return {data, size_t(entry.size)};
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw Error(cat("npz file '", path_, "': ", message));
  }
  [[noreturn]] void fail_entry(const ZipEntry& entry, const std::string& message) const {
    throw Error(cat("npz file '", path_, "', entry '", entry.name, "': ", message));
  }

 private:
  // Searches backwards for the end-of-central-directory record, which ends the file
  // exactly, after its comment of up to 65535 bytes.
  size_t find_end_record() const {
    if (size_ < 4) fail(cat("not a zip archive (", size_, " bytes; no end of central directory record)"));
    size_t lowest = size_ > kEndRecordSize + 0xffff ? size_ - kEndRecordSize - 0xffff : 0;
    bool cut_off = false;
    for (size_t position = size_ - 4 + 1; position-- > lowest;) {
      if (le32(bytes_ + position) != kEndSignature) continue;
      if (size_ - position < kEndRecordSize) {
        cut_off = true;
        continue;
      }
      uint64_t comment_size = le16(bytes_ + position + 20);
      if (position + kEndRecordSize + comment_size == size_) return position;
      if (position + kEndRecordSize + comment_size > size_) cut_off = true;
    }
    if (cut_off) fail("truncated file: the end of central directory record is cut off");
    fail("not a zip archive (no end of central directory record found; the file may also be truncated)");
  }

  CentralDirectory find_central_directory() const {
    size_t end_record = find_end_record();
    const unsigned char* record = bytes_ + end_record;
    CentralDirectory directory;
    uint16_t disk = le16(record + 4), directory_disk = le16(record + 6);
    directory.entries = le16(record + 10);
    directory.size = le32(record + 12);
    directory.offset = le32(record + 16);
    directory.end = end_record;

    if (end_record >= kZip64LocatorSize && le32(record - kZip64LocatorSize) == kZip64LocatorSignature) {
      const unsigned char* locator = record - kZip64LocatorSize;
      uint64_t zip64_end = le64(locator + 8);
      if (le32(locator + 4) != 0 || le32(locator + 16) > 1) fail("multi-part zip archives are not supported");
      if (zip64_end > end_record - kZip64LocatorSize ||
          end_record - kZip64LocatorSize - zip64_end < kZip64EndRecordSize ||
          le32(bytes_ + zip64_end) != kZip64EndSignature) {
        fail("corrupt zip64 end of central directory record (truncated or damaged file)");
      }
      const unsigned char* zip64 = bytes_ + zip64_end;
      disk = le32(zip64 + 16) != 0 ? 1 : 0;
      directory_disk = le32(zip64 + 20) != 0 ? 1 : 0;
      directory.entries = le64(zip64 + 32);
      directory.size = le64(zip64 + 40);
      directory.offset = le64(zip64 + 48);
      directory.end = zip64_end;
    }
    if (disk != 0 || directory_disk != 0) fail("multi-part zip archives are not supported");
    if (directory.offset > directory.end || directory.end - directory.offset < directory.size) {
      fail(cat("central directory (", directory.size, " bytes at offset ", directory.offset,
               ") runs past the end of the archive (truncated or corrupt file)"));
    }
    return directory;
  }

  // Sizes and offsets that do not fit 32 bits are recorded as 0xffffffff, their real
  // values following in this order in the zip64 extended information extra field.
  void apply_zip64_extra(ZipEntry& entry, uint16_t disk, const unsigned char* extra, size_t extra_size) const {
    bool zip64_size = entry.size == 0xffffffffu;
    bool zip64_compressed = entry.compressed_size == 0xffffffffu;
    bool zip64_offset = entry.local_header_offset == 0xffffffffu;
    bool zip64_disk = disk == 0xffffu;
    size_t position = 0;
    while (extra_size - position >= 4) {
      uint16_t id = le16(extra + position);
      uint16_t field_size = le16(extra + position + 2);
      if (extra_size - position - 4 < field_size) {
        fail_entry(entry, "corrupt extra field in the central directory");
      }
      if (id == kZip64ExtraId) {
        const unsigned char* field = extra + position + 4;
        size_t needed = 8 * (zip64_size + zip64_compressed + zip64_offset) + 4 * zip64_disk;
        if (field_size < needed) fail_entry(entry, "zip64 extra field is too short");
        if (zip64_size) {
          entry.size = le64(field);
          field += 8;
        }
        if (zip64_compressed) {
          entry.compressed_size = le64(field);
          field += 8;
        }
        if (zip64_offset) {
          entry.local_header_offset = le64(field);
          field += 8;
        }
        if (zip64_disk) disk = uint16_t(le32(field) != 0);
      }
      position += 4 + field_size;
    }
    if (disk != 0) fail_entry(entry, "multi-part zip archives are not supported");
  }

  // Checks the local header and returns where the entry's data starts.
  const unsigned char* entry_data(const ZipEntry& entry) const {
    uint64_t offset = entry.local_header_offset;
    if (offset > size_ || size_ - offset < kLocalHeaderSize || le32(bytes_ + offset) != kLocalHeaderSignature) {
      fail_entry(entry, cat("no local file header at offset ", offset, " (corrupt file)"));
    }
    uint16_t name_size = le16(bytes_ + offset + 26);
    uint16_t extra_size = le16(bytes_ + offset + 28);
    uint64_t data_start = offset + kLocalHeaderSize + name_size + extra_size;
    if (data_start > size_ || size_ - data_start < entry.compressed_size) {
      fail_entry(entry, cat("the entry's ", entry.compressed_size,
                            " bytes of data run past the end of the file (truncated file)"));
    }
    if (name_size != entry.name.size() ||
        std::memcmp(bytes_ + offset + kLocalHeaderSize, entry.name.data(), name_size) != 0) {
      fail_entry(entry, "the local file header names a different entry (corrupt file)");
    }
    return bytes_ + data_start;
  }

  std::string inflate_entry(const ZipEntry& entry, const unsigned char* data) const {
    if (entry.size > entry.compressed_size * kMaxDeflateRatio + 1024) {
      fail_entry(entry, cat("recorded size ", entry.size, " cannot come from ", entry.compressed_size,
                            " deflated bytes (corrupt file)"));
    }
    std::string out(size_t(entry.size), '\0');
    z_stream stream{};
    if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) fail_entry(entry, "cannot start zlib's inflate");
    struct EndInflate {
      z_stream* stream;
      ~EndInflate() { inflateEnd(stream); }
    } end_inflate{&stream};

    // zlib counts in unsigned int, so large entries are fed and drained in chunks.
    constexpr uint64_t kChunk = 1u << 30;
    uint64_t input_left = entry.compressed_size, output_left = entry.size;
    stream.next_in = const_cast<Bytef*>(data);
    stream.next_out = reinterpret_cast<Bytef*>(&out[0]);
    int result = Z_OK;
    while (result == Z_OK) {
      if (stream.avail_in == 0) {
        stream.avail_in = uInt(std::min(input_left, kChunk));
        input_left -= stream.avail_in;
      }
      if (stream.avail_out == 0) {
        stream.avail_out = uInt(std::min(output_left, kChunk));
        output_left -= stream.avail_out;
      }
      result = inflate(&stream, Z_NO_FLUSH);
    }
    if (result == Z_STREAM_END) {
      if (stream.total_out != entry.size) {
        fail_entry(entry, cat("inflates to ", stream.total_out, " bytes but the archive records ", entry.size));
      }
      return out;
    }
    if (result == Z_BUF_ERROR && stream.avail_out == 0 && output_left == 0) {
      fail_entry(entry, cat("inflates to more than the ", entry.size, " bytes the archive records"));
    }
    if (result == Z_BUF_ERROR) fail_entry(entry, "deflate data ends early (truncated or corrupt file)");
    fail_entry(entry, cat("corrupt deflate data: ", stream.msg ? stream.msg : "zlib error"));
  }

  const std::string& path_;
  const unsigned char* bytes_;
  size_t size_;
};

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& what) {
  return parse_npy_bytes(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), what);
}

const Tensor& NpzFile::at(const std::string& name) const {
  auto found = arrays.find(name);
  if (found == arrays.end()) throw Error(cat("npz file '", path, "' has no array named '", name, "'"));
  return found->second;
}

NpzFile read_npz(const std::string& path) {
  MappedFile file(path);
  ZipReader zip(path, file);
  NpzFile npz;
  npz.path = path;
  for (const ZipEntry& entry : zip.entries()) {
    const std::string suffix = ".npy";
    if (entry.name.size() <= suffix.size() ||
        entry.name.compare(entry.name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      zip.fail_entry(entry, "not a .npy array (an npz archive holds only NAME.npy entries)");
    }
    std::string name = entry.name.substr(0, entry.name.size() - suffix.size());
    if (npz.arrays.count(name)) zip.fail_entry(entry, "the archive holds this entry twice");
    std::string inflated;
    auto [data, size] = zip.read(entry, inflated);
    npz.arrays.emplace(name, parse_npy_bytes(data, size, cat("npz file '", path, "', entry '", entry.name, "'")));
    npz.names.push_back(name);
  }
  return npz;
}

}  // namespace vitune::nn
