// Deferred validation of i64 index tensors on a CUDA device, for the ops that must
// refuse a bad index or label with an Error as their CPU versions do (gather, scatter,
// masked_weight_grad, cross-entropy), without waiting for the device on every call.
//
// A check is queued on the device's stream like any kernel: it records the first bad
// position of the indices, and the values there, in a small record on the device, and
// copies that record into pinned host memory. The ops' own kernels, queued after it,
// read the record's position and do nothing when the check failed, so a bad index never
// reaches memory and the op's outputs stay as they were. The verdict is read when the
// host next waits for the device (wait_for in cuda_context.h: every read-back, every
// synchronize), which throws an Error naming the op, the bad value and its position --
// for the loss that is the read-back inside cross_entropy_forward itself. With
// VITUNE_CUDA_SYNC=1 the check waits at once, so the op that was given the bad index
// throws, as on the CPU.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/tensor.h"

namespace vitune::cuda {

// The position a record holds while no bad index was found.
constexpr unsigned long long kNoFault = ~0ull;

// The message of a failed check, from the first bad position, the index there and the
// index before it (0 at position 0).
using DescribeFault = std::function<std::string(int64_t position, int64_t value, int64_t previous)>;

// Queues the check that every indices[i] (i64, on a CUDA device) lies in [0, limit) and,
// when `strictly_increasing`, exceeds indices[i - 1]. Returns the device word holding the
// first bad position (kNoFault when none), for the op's kernels to read.
const unsigned long long* check_indices_deferred(const Tensor& indices, int64_t limit, bool strictly_increasing,
                                                 DescribeFault describe);

// After the stream of `device` was waited for: throws the Error of the first failed check
// queued before the wait, in queue order; every check queued before it is then settled.
void report_failed_checks(int device);

}  // namespace vitune::cuda
