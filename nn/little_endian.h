// Little-endian unsigned integers read from byte buffers, as the zip and .npy formats
// store them.
#pragma once

#include <cstdint>

namespace vitune::nn {

inline uint16_t le16(const unsigned char* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t le32(const unsigned char* p) { return uint32_t(le16(p)) | (uint32_t(le16(p + 2)) << 16); }
inline uint64_t le64(const unsigned char* p) { return uint64_t(le32(p)) | (uint64_t(le32(p + 4)) << 32); }

}  // namespace vitune::nn
