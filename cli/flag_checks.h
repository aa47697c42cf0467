// Checks of numeric flags whose messages say in a few words what was expected; CLI11
// puts the flag in front: "--lr: expected a number, got 'abc'". (CLI11's own range
// checks print the whole range of the type, 309 digits for a double.)
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>

namespace vitune::cli {

// A finite number >= `min`, or > `min` when `strict`.
CLI::Validator number_from(double min, bool strict = false);
// A finite number > 0.
CLI::Validator positive_number();
// A finite number in [lo, hi].
CLI::Validator number_in(double lo, double hi);
// A whole number in [lo, hi].
CLI::Validator integer_in(int64_t lo, int64_t hi);
// A whole number >= `min`.
CLI::Validator integer_from(int64_t min);
// A whole number >= 0 that fits in 64 bits unsigned: the seeds.
CLI::Validator seed_value();

}  // namespace vitune::cli
