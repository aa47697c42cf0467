// Whole-file reads with std::ifstream and with zlib's gzread.
#include "data/file_bytes.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "engine/error.h"

namespace vitune::data {

namespace {

// Bytes asked of gzread at a time (it takes an unsigned count), and zlib's buffer size:
// at most 1 MiB, at least 64 KiB, otherwise the expected content's size, so that a small
// file does not cost megabytes of buffers.
constexpr size_t kGzipChunkMax = size_t(1) << 20;
constexpr size_t kGzipChunkMin = size_t(1) << 16;
// Deflate cannot expand data by more than about 1032 to 1.
constexpr size_t kDeflateMaxRatio = 1032;

// The size of the file's content as far as it can be told cheaply: a gzip file's
// trailer holds its uncompressed size modulo 2^32 (exact for one member under 4 GiB),
// believed up to deflate's largest ratio so that a damaged trailer cannot ask for
// gigabytes; any other file is its own size. 0 when the file cannot be read.
size_t expected_content_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const std::streamoff length = in.tellg();
  if (!in || length < 18) return length > 0 ? size_t(length) : 0;
  unsigned char magic[2] = {0, 0}, trailer[4] = {0, 0, 0, 0};
  in.seekg(0);
  in.read(reinterpret_cast<char*>(magic), 2);
  if (magic[0] != 0x1f || magic[1] != 0x8b) return size_t(length);
  in.seekg(length - 4);
  in.read(reinterpret_cast<char*>(trailer), 4);
  if (!in) return 0;
  const size_t stated = size_t(trailer[0]) | size_t(trailer[1]) << 8 | size_t(trailer[2]) << 16 |
                        size_t(trailer[3]) << 24;
  return std::min(stated, kDeflateMaxRatio * size_t(length));
}

}  // namespace

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  VITUNE_CHECK(in.good(), "cannot open file ", path, ": ", std::strerror(errno));
  const std::streamoff length = in.tellg();
  VITUNE_CHECK(length >= 0, "cannot read file ", path, " (is it a directory?)");
  std::vector<uint8_t> bytes(static_cast<size_t>(length));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), length);
  VITUNE_CHECK(in.good() || length == 0, "cannot read file ", path, ": read failed after ",
               in.gcount(), " of ", length, " bytes");
  return bytes;
}

std::vector<uint8_t> read_gzip_or_plain(const std::string& path) {
  const size_t expected = expected_content_size(path);
  gzFile file = gzopen(path.c_str(), "rb");
  VITUNE_CHECK(file != nullptr, "cannot open file ", path, ": ", std::strerror(errno));
  const unsigned chunk = unsigned(std::clamp(expected, kGzipChunkMin, kGzipChunkMax));
  gzbuffer(file, chunk);
  // Room for the expected content and one more chunk, so the end is found without
  // growing; a wrong expectation only costs reallocations.
  std::vector<uint8_t> bytes(expected + chunk);
  size_t filled = 0;
  for (;;) {
    if (bytes.size() - filled < chunk) bytes.resize(2 * bytes.size());
    const int got = gzread(file, bytes.data() + filled, chunk);
    if (got < 0) {
      int code = 0;
      const std::string reason = gzerror(file, &code);
      gzclose(file);
      throw Error(cat("file ", path, ": corrupt or truncated gzip data (", reason, ")"));
    }
    if (got == 0) break;
    filled += size_t(got);
  }
  // A stream cut short is not an error of gzread but of gzclose.
  const int closed = gzclose(file);
  VITUNE_CHECK(closed != Z_BUF_ERROR, "file ", path,
               ": truncated gzip data (the file ends inside the compressed stream, after ", filled,
               " bytes)");
  VITUNE_CHECK(closed == Z_OK, "file ", path, ": error ", closed, " reading gzip data");
  bytes.resize(filled);
  if (bytes.capacity() > filled + 2 * size_t(chunk)) bytes.shrink_to_fit();
  return bytes;
}

}  // namespace vitune::data
