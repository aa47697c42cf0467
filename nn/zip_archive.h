// A reader of zip archives such as numpy's .npz files: it finds the end of central
// directory record (and the zip64 records that extend it), lists the entries of the
// central directory, and gives each entry's bytes, stored or inflated from deflate,
// checked against the recorded size and CRC-32. Encrypted and multi-part archives are
// refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vitune::nn {

// One entry of the central directory; sizes and offset come from the zip64 extra
// field where the 32-bit fields are saturated.
struct ZipEntry {
  std::string name;
  uint16_t flags;
  uint16_t method;  // 0 stored, 8 deflate
  uint32_t crc;
  uint64_t compressed_size;
  uint64_t size;
  uint64_t local_header_offset;
};

// An entry's uncompressed bytes.
struct ZipBytes {
  const unsigned char* data;
  size_t size;
};

// A zip archive, mapped read-only while this lives. Errors throw vitune::Error with a
// message that begins "<kind> '<path>'" and names the entry where there is one.
class ZipArchive {
 public:
  // Maps the file at `path` and reads its central directory; `kind` (e.g. "npz file")
  // names the file in error messages.
  ZipArchive(const std::string& path, const std::string& kind);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  // The entries in central directory order.
  const std::vector<ZipEntry>& entries() const { return entries_; }

  // The entry's uncompressed bytes, checked against its recorded size and CRC-32: a
  // stored entry's bytes in the mapped file, or a deflated one's, inflated into
  // `inflated`. They stay valid while the archive and `inflated` do.
  ZipBytes read(const ZipEntry& entry, std::string& inflated) const;

  // Throws vitune::Error naming the archive and `entry`.
  [[noreturn]] void fail_entry(const ZipEntry& entry, const std::string& message) const;

 private:
  class MappedFile;

  std::string path_;
  std::string kind_;
  std::unique_ptr<MappedFile> file_;
  std::vector<ZipEntry> entries_;
};

}  // namespace vitune::nn
