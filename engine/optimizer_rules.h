// The per-entry update rules of SGD and AdamW, written once for both backends: the host
// loops of engine/cpu/optimizer_update.cpp and the CUDA kernels of
// engine/cuda/optimizer_update.cu call these on each updated entry, so the two compute
// the same float expressions.
#pragma once

#include <cmath>

#include "engine/ops.h"

#if defined(__CUDACC__)
#define VITUNE_HOST_DEVICE __host__ __device__
#else
#define VITUNE_HOST_DEVICE
#endif

namespace vitune {

// SGD: d = g + wd p; with a momentum buffer entry, buf = (first ? d : momentum buf + d)
// and d = (nesterov ? d + momentum buf : buf); then p -= lr d. `buffer` may be null.
VITUNE_HOST_DEVICE inline void sgd_entry(float& p, float g, float* buffer, const SgdUpdate& u) {
  float d = g + u.weight_decay * p;
  if (buffer) {
    *buffer = u.first ? d : u.momentum * *buffer + d;
    d = u.nesterov ? d + u.momentum * *buffer : *buffer;
  }
  p -= u.lr * d;
}

// AdamW (decoupled decay): p *= 1 - lr wd; m += (g - m)(1 - b1); v = b2 v + (1 - b2) g^2;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
VITUNE_HOST_DEVICE inline void adamw_entry(float& p, float g, float& m, float& v, const AdamWUpdate& u) {
  p *= u.decay;
  m += (g - m) * (1.0f - u.beta1);
  v = v * u.beta2 + (1.0f - u.beta2) * g * g;
  p -= u.step_size * m / (std::sqrt(v) / u.bias2_sqrt + u.eps);
}

}  // namespace vitune

#undef VITUNE_HOST_DEVICE
