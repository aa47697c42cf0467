// The progress bar and plain progress lines.
#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace vitune::cli {

Progress::Progress(std::string label, int64_t total, std::string unit, int64_t plain_every)
    : label_(std::move(label)),
      total_(total),
      unit_(std::move(unit)),
      plain_every_(plain_every < 1 ? 1 : plain_every),
      terminal_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()) {}

double Progress::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::line(int64_t done, const std::string& note, bool bar) const {
  double elapsed = seconds();
  double rate = elapsed > 0 ? double(done) / elapsed : 0.0;
  double left = rate > 0 ? double(total_ - done) / rate : 0.0;
  char text[256];
  std::string out = label_ + " ";
  if (bar) {
    const int width = 24;
    int filled = total_ > 0 ? int(width * done / total_) : width;
    out += "[" + std::string(size_t(filled), '#') + std::string(size_t(width - filled), '.') + "] ";
  }
  std::snprintf(text, sizeof text, "%lld/%lld %ss, %.1f %s/s, %.0fs elapsed, ETA %.0fs", (long long)done,
                (long long)total_, unit_.c_str(), rate, unit_.c_str(), elapsed, left);
  out += text;
  if (!note.empty()) out += ", " + note;
  return out;
}

void Progress::update(int64_t done, const std::string& note) {
  done_ = done;
  if (terminal_) {
    std::fprintf(stderr, "\r\033[K%s", line(done, note, true).c_str());
    std::fflush(stderr);
  } else if (last_plain_ < 0 || done - last_plain_ >= plain_every_ || done == total_) {
    last_plain_ = done;
    std::fprintf(stderr, "%s\n", line(done, note, false).c_str());
  }
}

void Progress::finish(const std::string& note) {
  if (terminal_) {
    std::fprintf(stderr, "\r\033[K%s\n", line(done_, note, true).c_str());
  } else if (last_plain_ != done_) {
    std::fprintf(stderr, "%s\n", line(done_, note, false).c_str());
  }
}

}  // namespace vitune::cli
