// The one exception type vitune throws for bad input and misuse. Messages name the
// file, the field and what was expected; the command line prints them and exits 1.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace vitune {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Builds a message from any streamable parts: throw Error(cat("file ", path, ": ...")).
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

#define VITUNE_CHECK(condition, ...)                            \
  do {                                                          \
    if (!(condition)) throw ::vitune::Error(::vitune::cat(__VA_ARGS__)); \
  } while (0)

}  // namespace vitune
