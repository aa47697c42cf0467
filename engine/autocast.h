// The bf16 autocast switch: a process-wide setting that ops::gemm and ops::gemm_batched
// consult for f32 operands. When it is on, both operands of every such product are
// rounded to bfloat16 (round to nearest even) and the products are accumulated in fp32
// into an fp32 output: on a CUDA device through cuBLAS with bf16 inputs (tensor cores),
// on the CPU as an emulation (operands rounded to bf16 values, still stored as f32, then
// the ordinary fp32 kernel). f64 operands and every other op are never affected.
#pragma once

namespace vitune {

void set_autocast_bf16(bool enabled);
bool autocast_bf16();

// Sets the switch for its lifetime and restores the previous value when it ends.
class AutocastBf16Scope {
 public:
  explicit AutocastBf16Scope(bool enabled = true);
  ~AutocastBf16Scope();
  AutocastBf16Scope(const AutocastBf16Scope&) = delete;
  AutocastBf16Scope& operator=(const AutocastBf16Scope&) = delete;

 private:
  bool previous_;
};

}  // namespace vitune
