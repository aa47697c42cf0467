// Numeric flag checks with short messages.
#include "cli/flag_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "engine/error.h"

namespace vitune::cli {

namespace {

// The text as a finite number, or an error message.
bool parse_number(const std::string& text, double& value, std::string& error) {
  char* end = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || errno == ERANGE) {
    error = "expected a number, got '" + text + "'";
    return false;
  }
  return true;
}

bool whole(const std::string& text) {
  size_t start = text[0] == '-' || text[0] == '+' ? 1 : 0;
  return text.size() > start && text.find_first_not_of("0123456789", start) == std::string::npos;
}

}  // namespace

CLI::Validator number_from(double min, bool strict) {
  return CLI::Validator(
      [min, strict](std::string& text) -> std::string {
        double value;
        std::string error;
        if (!parse_number(text, value, error)) return error;
        if (strict ? value > min : value >= min) return "";
        return cat("expected a number ", strict ? ">" : ">=", " ", min, ", got ", text);
      },
      strict ? cat("NUMBER>", min) : cat("NUMBER>=", min));
}

CLI::Validator positive_number() { return number_from(0.0, true); }

CLI::Validator number_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double value;
        std::string error;
        if (!parse_number(text, value, error)) return error;
        if (value >= lo && value <= hi) return "";
        return cat("expected a number from ", lo, " to ", hi, ", got ", text);
      },
      cat("NUMBER in [", lo, ", ", hi, "]"));
}

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double value;
        std::string error;
        if (!whole(text) || !parse_number(text, value, error)) return "expected a whole number, got '" + text + "'";
        errno = 0;
        const long long n = std::strtoll(text.c_str(), nullptr, 10);
        if (errno != ERANGE && n >= lo && n <= hi) return "";
        if (hi == std::numeric_limits<int64_t>::max()) return cat("expected a whole number >= ", lo, ", got ", text);
        return cat("expected a whole number from ", lo, " to ", hi, ", got ", text);
      },
      hi == std::numeric_limits<int64_t>::max() ? cat("INT>=", lo) : cat("INT in [", lo, ", ", hi, "]"));
}

CLI::Validator integer_from(int64_t min) { return integer_in(min, std::numeric_limits<int64_t>::max()); }

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (!whole(text)) return "expected a whole number, got '" + text + "'";
        if (text[0] == '-') return "a seed must be 0 or more, got " + text;
        errno = 0;
        std::strtoull(text.c_str(), nullptr, 10);
        return errno == ERANGE ? "expected a seed below 2^64, got " + text : "";
      },
      "UINT64");
}

}  // namespace vitune::cli
