// The process-wide bf16 autocast switch of engine/autocast.h.
#include "engine/autocast.h"

#include <atomic>

namespace vitune {

namespace {
std::atomic<bool> autocast_bf16_enabled{false};
}  // namespace

void set_autocast_bf16(bool enabled) { autocast_bf16_enabled.store(enabled); }

bool autocast_bf16() { return autocast_bf16_enabled.load(); }

AutocastBf16Scope::AutocastBf16Scope(bool enabled) : previous_(autocast_bf16()) { set_autocast_bf16(enabled); }

AutocastBf16Scope::~AutocastBf16Scope() { set_autocast_bf16(previous_); }

}  // namespace vitune
