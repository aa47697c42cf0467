// Reading whole files into memory: plain files, and files that may be gzip-compressed
// (read through zlib, which passes uncompressed files through unchanged).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vitune::data {

// The bytes of `path`; throws vitune::Error naming the file when it cannot be read.
std::vector<uint8_t> read_file_bytes(const std::string& path);

// The decompressed bytes of a gzip file, or the bytes of an uncompressed one. Throws
// vitune::Error naming the file on a read error or corrupt or truncated gzip data.
std::vector<uint8_t> read_gzip_or_plain(const std::string& path);

}  // namespace vitune::data
