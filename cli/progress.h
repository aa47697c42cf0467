// Progress of a long command: on a terminal a bar that redraws in place with the rate
// and the time left; otherwise (a log file, CI) one plain line every `plain_every` units.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace vitune::cli {

class Progress {
 public:
  // `unit` names what is counted ("step", "image").
  Progress(std::string label, int64_t total, std::string unit, int64_t plain_every);
  // Reports that `done` units are finished; `note` is shown after the bar ("loss 0.41").
  void update(int64_t done, const std::string& note = "");
  // Ends the bar with a newline (terminal) and a last line.
  void finish(const std::string& note = "");
  double seconds() const;

 private:
  std::string line(int64_t done, const std::string& note, bool bar) const;

  std::string label_;
  int64_t total_;
  std::string unit_;
  int64_t plain_every_;
  bool terminal_;
  int64_t last_plain_ = -1;
  int64_t done_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace vitune::cli
