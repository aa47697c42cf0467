// The zip reader: the end-of-central-directory search, zip64 records, the central
// directory and local headers, stored and deflated entries, size and CRC-32 checks.
#include "nn/zip_archive.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/allocator.h"
#include "engine/error.h"
#include "nn/little_endian.h"

namespace vitune::nn {

namespace {

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
// Archives of more entries are refused (a checkpoint holds a few thousand at most).
constexpr uint64_t kMaxEntries = 100'000;

// Where the central directory is, from the end-of-central-directory record (and the
// zip64 one when present).
struct CentralDirectory {
  uint64_t entries;
  uint64_t offset;
  uint64_t size;
  uint64_t end;  // where the records that follow the directory begin
};

// The zip format read from an archive's bytes in memory; `kind` and `path` name the
// file in errors.
class ZipReader {
 public:
  ZipReader(const std::string& path, const std::string& kind, const unsigned char* bytes, size_t size)
      : path_(path), kind_(kind), bytes_(bytes), size_(size) {}

  // The records of the central directory, in order.
  std::vector<ZipEntry> entries() const {
    CentralDirectory directory = find_central_directory();
    if (directory.entries > kMaxEntries) {
      fail(cat("the archive lists ", directory.entries, " entries, more than the limit of ", kMaxEntries));
    }
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

  // The checked bytes of `entry`, as ZipArchive::read gives them.
  ZipBytes read(const ZipEntry& entry, std::string& inflated) const {
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
    throw Error(cat(kind_, " '", path_, "': ", message));
  }
  [[noreturn]] void fail_entry(const ZipEntry& entry, const std::string& message) const {
    throw Error(cat(kind_, " '", path_, "', entry '", entry.name, "': ", message));
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
    if (entry.size > host_memory_limit()) {
      fail_entry(entry, cat("inflates to ", entry.size, " bytes, more than the host memory limit of ",
                            host_memory_limit(), " bytes"));
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
  const std::string& kind_;
  const unsigned char* bytes_;
  size_t size_;
};

}  // namespace

// The whole file mapped read-only while the archive lives.
class ZipArchive::MappedFile {
 public:
  MappedFile(const std::string& path, const std::string& kind) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(cat("cannot open ", kind, " '", path, "': ", std::strerror(errno)));
    struct stat info;
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      ::close(fd);
      throw Error(cat(kind, " '", path, "': not a regular file"));
    }
    size_ = size_t(info.st_size);
    if (size_ > 0) {
      void* data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      int error = errno;
      ::close(fd);
      if (data == MAP_FAILED) {
        throw Error(cat(kind, " '", path, "': cannot map the file into memory: ", std::strerror(error)));
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

ZipArchive::ZipArchive(const std::string& path, const std::string& kind)
    : path_(path), kind_(kind), file_(std::make_unique<MappedFile>(path, kind)) {
  entries_ = ZipReader(path_, kind_, file_->data(), file_->size()).entries();
}

ZipArchive::~ZipArchive() = default;

ZipBytes ZipArchive::read(const ZipEntry& entry, std::string& inflated) const {
  return ZipReader(path_, kind_, file_->data(), file_->size()).read(entry, inflated);
}

void ZipArchive::fail_entry(const ZipEntry& entry, const std::string& message) const {
  ZipReader(path_, kind_, file_->data(), file_->size()).fail_entry(entry, message);
}

}  // namespace vitune::nn
