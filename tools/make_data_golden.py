#!/usr/bin/env python3
"""Writes tests/golden/data_transforms.safetensors: PyTorch's F.interpolate (bilinear
and bicubic, align_corners=False, no antialiasing) on small 8-bit images, the reference
for vitune's resize and resized-crop code (data/resample.h).

Run with Debian's Python (python3-torch, python3-numpy): /usr/bin/python3 tools/make_data_golden.py

Contents: `image.<i>` f32 [C, H, W] holding the integer pixel values 0..255 of input
image i; for each case k, `case.<k>.params` i64 [8] = (image, top, left, height, width,
out_height, out_width, mode with 0 bilinear and 1 bicubic) and `case.<k>.output` f32
[C, out_height, out_width] = interpolate(image[:, top:top+height, left:left+width] / 255).
Deterministic: rerunning gives a byte-identical file.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__ from the sibling import

import numpy as np
import torch
import torch.nn.functional as F

from safetensors_io import read_safetensors, write_safetensors

SEED = 2024
IMAGE_SHAPES = [(3, 5, 7), (1, 6, 4), (3, 16, 12)]
MODES = ["bilinear", "bicubic"]
# (image, region (top, left, height, width) or None for the whole image, output size)
CASES = [
    (0, None, (9, 4)),    # up in height, down in width
    (0, None, (3, 11)),
    (0, None, (5, 7)),    # same size: a copy
    (0, None, (1, 1)),
    (0, None, (12, 14)),  # exactly 2x up
    (1, None, (3, 2)),    # exactly 2x down
    (1, None, (13, 5)),
    (0, (1, 2, 3, 4), (5, 6)),   # resize of a crop: the crop's borders clamp
    (2, (3, 1, 10, 9), (7, 7)),
    (2, (0, 0, 16, 12), (24, 24)),
    (2, None, (5, 3)),
]
OUT_FILE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "tests", "golden", "data_transforms.safetensors"))


def main():
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(SEED)
    images = [torch.randint(0, 256, shape, generator=generator).to(torch.float32)
              for shape in IMAGE_SHAPES]
    tensors = {f"image.{i}": image for i, image in enumerate(images)}
    k = 0
    for image_index, region, size in CASES:
        channels, height, width = IMAGE_SHAPES[image_index]
        top, left, crop_height, crop_width = region or (0, 0, height, width)
        crop = images[image_index][:, top:top + crop_height, left:left + crop_width] / 255
        for mode_index, mode in enumerate(MODES):
            output = F.interpolate(crop[None], size=size, mode=mode, align_corners=False)[0]
            tensors[f"case.{k}.params"] = torch.tensor(
                [image_index, top, left, crop_height, crop_width, size[0], size[1], mode_index],
                dtype=torch.int64)
            tensors[f"case.{k}.output"] = output
            k += 1
    size = write_safetensors(OUT_FILE, tensors)
    arrays, _ = read_safetensors(OUT_FILE)
    for name, value in tensors.items():
        assert np.array_equal(arrays[name], value.numpy()), name
    print(f"wrote tests/golden/data_transforms.safetensors: {len(tensors)} arrays, {size} bytes")


if __name__ == "__main__":
    main()
