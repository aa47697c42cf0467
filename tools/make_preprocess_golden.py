#!/usr/bin/env python3
"""Writes tests/golden/preprocessing/: tiny ViT checkpoints carrying preprocessing metadata
the way timm and Hugging Face write it, and expected.safetensors with what PyTorch makes of
two 8-bit images through each checkpoint's evaluation preprocessing -- the reference for
nn/preprocessing.h and the evaluation transform (data/transform_presets.h).

  timm_metadata.safetensors         __metadata__ pretrained_cfg: CLIP's mean and std,
                                    crop_pct 0.875, bilinear, crop_mode center
  timm_hub/model.safetensors        config.json beside it as timm's hub writes it, with a
                                    pretrained_cfg object: ImageNet mean and std, crop_pct
                                    0.9, bicubic, crop_mode squash
  hf_vit/model.safetensors          Hugging Face ViT names, config.json and
                                    preprocessor_config.json beside them: shortest_edge
                                    18, crop_size 16, resample 3 (bicubic)

The reference is torchvision's eval pipeline written with torch alone: resize (the shorter
side to floor(16 / crop_pct), keeping the aspect ratio as torchvision's Resize(int) does, or
both sides for squash) with F.interpolate(align_corners=False, antialias=False), centre
crop 16x16 at round((size - 16) / 2) (ties to even), then (x - mean) / std.

Contents of expected.safetensors: `image.<i>` f32 [C, H, W] holding the pixel values 0..255
of image i; `<case>.<i>` f32 [3, 16, 16], image i through case's preprocessing.
Run with Debian's Python (python3-torch): /usr/bin/python3 tools/make_preprocess_golden.py
Deterministic: rerunning gives byte-identical files.
"""

import json
import math
import os
import sys

sys.dont_write_bytecode = True

import torch
import torch.nn.functional as F

from safetensors_io import write_safetensors
from vit_families import TimmViT, randomize
from vit_layouts import timm_to_hf

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                                    "preprocessing"))
SIZE = 16
IMAGE_SHAPES = [(3, 20, 27), (3, 23, 19)]
CONFIG = dict(img_size=SIZE, patch=4, dim=8, depth=1, heads=2, num_classes=3)
CASES = {
    "timm_metadata": dict(mean=[0.48145466, 0.4578275, 0.40821073], std=[0.26862954, 0.26130258, 0.27577711],
                          crop_pct=0.875, interpolation="bilinear", crop_mode="center"),
    "timm_hub": dict(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225], crop_pct=0.9,
                     interpolation="bicubic", crop_mode="squash"),
    "hf_vit": dict(mean=[0.4, 0.45, 0.5], std=[0.2, 0.25, 0.3], crop_pct=SIZE / 18, interpolation="bicubic",
                   crop_mode="center"),
}
HF_PREPROCESSOR = {"do_resize": True, "size": {"shortest_edge": 18}, "do_center_crop": True,
                   "crop_size": {"height": SIZE, "width": SIZE}, "resample": 3, "do_normalize": True,
                   "image_mean": CASES["hf_vit"]["mean"], "image_std": CASES["hf_vit"]["std"],
                   "image_processor_type": "ViTImageProcessor"}


def path(name):
    return os.path.join(OUT, name)


def preprocess(image, cfg):
    """image: [C, H, W] floats 0..255."""
    _, h, w = image.shape
    scale = math.floor(SIZE / cfg["crop_pct"])
    if cfg["crop_mode"] == "squash":
        size = (scale, scale)
    elif h <= w:
        size = (scale, int(scale * w / h))
    else:
        size = (int(scale * h / w), scale)
    x = F.interpolate(image[None] / 255, size=size, mode=cfg["interpolation"], align_corners=False,
                      antialias=False)[0]
    top, left = int(round((size[0] - SIZE) / 2.0)), int(round((size[1] - SIZE) / 2.0))
    x = x[:, top:top + SIZE, left:left + SIZE]
    mean = torch.tensor(cfg["mean"], dtype=torch.float32)[:, None, None]
    std = torch.tensor(cfg["std"], dtype=torch.float32)[:, None, None]
    return (x - mean) / std


def write_json(name, value):
    with open(path(name), "w") as f:
        json.dump(value, f, indent=2)
        f.write("\n")


def main():
    torch.manual_seed(2024)
    torch.set_num_threads(1)
    os.makedirs(path("timm_hub"), exist_ok=True)
    os.makedirs(path("hf_vit"), exist_ok=True)
    model = TimmViT(**CONFIG)
    randomize(model)
    weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    vit_config = json.dumps({"img_size": SIZE, "patch": 4, "in_chans": 3, "dim": 8, "depth": 1, "heads": 2,
                             "mlp_ratio": 2.0, "num_classes": 3, "ln_eps": 1e-6})
    write_safetensors(path("timm_metadata.safetensors"), weights,
                      {"vit_config": vit_config, "pretrained_cfg": json.dumps(CASES["timm_metadata"])})
    write_safetensors(path("timm_hub/model.safetensors"), weights)
    write_json("timm_hub/config.json", {
        "architecture": "vit_tiny_test", "num_classes": 3, "num_features": 8, "global_pool": "token",
        "model_args": {"num_heads": 2},
        "pretrained_cfg": dict(CASES["timm_hub"], input_size=[3, SIZE, SIZE], num_classes=3)})
    write_safetensors(path("hf_vit/model.safetensors"), timm_to_hf({k: v.numpy() for k, v in weights.items()}, 1))
    write_json("hf_vit/config.json", {"model_type": "vit", "architectures": ["ViTForImageClassification"],
                                      "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                                      "image_size": SIZE, "patch_size": 4, "hidden_act": "gelu",
                                      "layer_norm_eps": 1e-12})
    write_json("hf_vit/preprocessor_config.json", HF_PREPROCESSOR)

    generator = torch.Generator().manual_seed(7)
    images = [torch.randint(0, 256, shape, generator=generator).to(torch.float32) for shape in IMAGE_SHAPES]
    tensors = {f"image.{i}": image for i, image in enumerate(images)}
    for case, cfg in CASES.items():
        for i, image in enumerate(images):
            tensors[f"{case}.{i}"] = preprocess(image, cfg)
    size = write_safetensors(path("expected.safetensors"), tensors)
    print(f"wrote tests/golden/preprocessing: {len(tensors)} expected arrays, {size} bytes")


if __name__ == "__main__":
    main()
