// A fingerprint of a model's backbone: every parameter except the head, by name,
// shape and exact value bits. Anchors and masks record it, so that neither is ever
// used with a model other than the one it was computed on. The same weights give the
// same hash on any device: the values are hashed as their host bytes.
#pragma once
#include <string>
#include "nn/vit.h"

namespace vitune::peft {

// 16 lowercase hex digits. The head is left out: finetuning starts from a fresh head,
// and a selection never depends on it.
std::string backbone_hash(const nn::VisionTransformer& model);

}  // namespace vitune::peft
