// The shape of a Vision Transformer, as timm's constructor arguments name it.
#pragma once

#include <string>

namespace vitune::nn {

struct VitConfig {
  int img_size = 224;
  int patch = 16;
  int in_chans = 3;
  int dim = 768;
  int depth = 12;
  int heads = 12;
  double mlp_ratio = 4.0;
  int num_classes = 1000;  // 0: no head; the model returns the pooled feature
  double ln_eps = 1e-6;

  int grid() const { return img_size / patch; }
  int num_patches() const { return grid() * grid(); }
  int tokens() const { return num_patches() + 1; }  // with the cls token
  int hidden() const;                               // dim * mlp_ratio, exact
  int head_dim() const { return dim / heads; }

  // Throws vitune::Error naming `source` when a field is out of range or inconsistent.
  void validate(const std::string& source) const;
  // JSON object with exactly the field names above.
  std::string to_json() const;
  // Reads the fields present in a JSON object over `base`; `source` names it in errors.
  static VitConfig from_json(const std::string& text, const std::string& source, VitConfig base);
};

}  // namespace vitune::nn
