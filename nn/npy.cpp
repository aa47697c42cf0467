// Parsing of .npy arrays: the magic and version, the header dict (its three keys in any
// order), the dtype from descr, and the data length against the shape.
#include "nn/npy.h"

#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "engine/error.h"
#include "nn/little_endian.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "little-endian .npy data is copied as the host's bytes");

namespace vitune::nn {

namespace {

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

}  // namespace

Tensor parse_npy(const unsigned char* bytes, size_t size, const std::string& what) {
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
  Tensor tensor(header.shape, dtype, Device::cpu());
  if (data_size) std::memcpy(tensor.raw(), bytes + header_start + header_size, size_t(data_size));
  return tensor;
}

Tensor parse_npy(const std::string& bytes, const std::string& what) {
  return parse_npy(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), what);
}

}  // namespace vitune::nn
