// The learning-rate schedules of schedule.h.
#include "nn/schedule.h"

#include <cmath>

#include "engine/error.h"

namespace vitune::nn {

double Schedule::lr_at(int64_t step) const {
  // Warmup: step t of w runs at base * (t + 1) / w, reaching base on the last one.
  if (step < warmup_steps) return base_lr * double(step + 1) / double(warmup_steps);
  switch (kind) {
    case ScheduleKind::Constant: return base_lr;
    case ScheduleKind::Step: return base_lr * std::pow(gamma, double((step - warmup_steps) / step_size));
    case ScheduleKind::Cosine: {
      // After warmup: min + (base - min) (1 + cos(pi p)) / 2 with p the fraction of the
      // remaining steps done, held at min beyond total_steps.
      int64_t span = std::max<int64_t>(1, total_steps - warmup_steps);
      double progress = std::min(1.0, double(step - warmup_steps) / double(span));
      return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
    }
  }
  return base_lr;
}

void Schedule::validate() const {
  VITUNE_CHECK(base_lr > 0 && std::isfinite(base_lr), "learning rate must be positive, got ", base_lr);
  VITUNE_CHECK(warmup_steps >= 0, "warmup steps must be non-negative, got ", warmup_steps);
  VITUNE_CHECK(total_steps >= 1, "total steps must be at least 1, got ", total_steps);
  VITUNE_CHECK(min_lr >= 0 && min_lr <= base_lr, "minimum learning rate must be in [0, ", base_lr, "], got ",
               min_lr);
  VITUNE_CHECK(step_size >= 1, "step size must be at least 1, got ", step_size);
  VITUNE_CHECK(gamma > 0 && gamma <= 1, "step decay gamma must be in (0, 1], got ", gamma);
}

ScheduleKind parse_schedule_kind(const std::string& text, const std::string& flag) {
  if (text == "cosine") return ScheduleKind::Cosine;
  if (text == "constant") return ScheduleKind::Constant;
  if (text == "step") return ScheduleKind::Step;
  throw Error(cat(flag, ": expected cosine, constant or step, got '", text, "'"));
}

const char* schedule_kind_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::Cosine: return "cosine";
    case ScheduleKind::Constant: return "constant";
    case ScheduleKind::Step: return "step";
  }
  return "?";
}

}  // namespace vitune::nn
