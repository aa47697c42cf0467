// Learning-rate schedules, as a pure function of the step, so a resumed run picks up
// exactly where it stopped: cosine with linear warmup, constant (with optional warmup)
// and step decay.
#pragma once

#include <cstdint>
#include <string>

namespace vitune::nn {

enum class ScheduleKind { Cosine, Constant, Step };

struct Schedule {
  ScheduleKind kind = ScheduleKind::Cosine;
  double base_lr = 1e-3;
  int64_t warmup_steps = 0;  // linear from base_lr / warmup_steps up to base_lr
  int64_t total_steps = 1;   // cosine reaches min_lr here
  double min_lr = 0.0;       // cosine floor
  int64_t step_size = 1;     // step decay: multiply by gamma every step_size steps
  double gamma = 0.1;

  // The learning rate for step `step` (0-based).
  double lr_at(int64_t step) const;
  // Throws vitune::Error naming the bad field.
  void validate() const;
};

// "cosine", "constant" or "step"; anything else is an error naming `flag`.
ScheduleKind parse_schedule_kind(const std::string& text, const std::string& flag);
const char* schedule_kind_name(ScheduleKind kind);

}  // namespace vitune::nn
