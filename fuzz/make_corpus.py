"""Writes the seed corpora of the fuzz targets under fuzz/corpus/<target>/: small
files cut from the tests' golden data (tests/golden) and the kinds of files the tests
write (IDX, CIFAR, VTAB lists, FGVC splits, dataset specs, images). Run it with
python3 from the repository root; needs numpy and Pillow. Given the folder of a fuzz
build (-DVITUNE_FUZZ=ON) as its argument, it also has fuzz_mask and fuzz_anchor write
a mask and an anchor for their model (whose backbone hash only vitune computes)."""
import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, "tools")
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

CORPUS = "fuzz/corpus"


def put(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def safetensors_seeds():
    shutil.copy("tests/golden/ops_golden.safetensors", os.path.join(CORPUS, "safetensors", "ops_golden"))
    tensors, _ = read_safetensors("tests/golden/tiny_vit.safetensors")
    small = {k: v for k, v in tensors.items() if v.size <= 64}
    path = os.path.join(CORPUS, "safetensors", "tiny_vit_small")
    write_safetensors(path, small, {"format": "pt"})
    mixed = {"i32": np.arange(3, dtype=np.int32), "i64": np.array([[1, -2]], dtype=np.int64),
             "empty": np.zeros((0, 4), np.float32), "f64": np.array(1.5)}
    write_safetensors(os.path.join(CORPUS, "safetensors", "mixed_dtypes"), mixed, {})


def npz_seeds():
    arrays = {k: v for k, v in np.load("tests/golden/tiny_vit_npz_stored.npz").items() if v.size <= 64}
    arrays["u8"] = np.arange(6, dtype=np.uint8).reshape(2, 3)
    arrays["i4"] = np.array([7], dtype=np.int32)
    arrays["scalar"] = np.array(2.0, dtype=np.float64)
    for name, save in (("stored", np.savez), ("deflated", np.savez_compressed)):
        buffer = io.BytesIO()
        save(buffer, **arrays)
        put("npz", name, buffer.getvalue())
    npy_seeds = {"cls": arrays["cls"], "u8": arrays["u8"], "i4": arrays["i4"], "scalar": arrays["scalar"],
                 "f2": np.arange(4, dtype=np.float16), "i8_empty": np.zeros((2, 0), np.int64)}
    for name, value in npy_seeds.items():
        buffer = io.BytesIO()
        np.save(buffer, value)
        put("npy", name, buffer.getvalue())


def idx_seeds():
    # The target's first byte times 16 is the images file's length: 4 images of 2x2
    # make a 32-byte file.
    images = struct.pack(">IIII", 0x803, 4, 2, 2) + bytes(range(16))
    labels = struct.pack(">II", 0x801, 4) + bytes([0, 2, 1, 2])
    put("idx", "plain", bytes([len(images) // 16]) + images + labels)
    zipped = gzip.compress(images, mtime=0)
    zipped += bytes(-len(zipped) % 16)  # zlib ignores what follows the gzip stream
    put("idx", "gzipped", bytes([len(zipped) // 16]) + zipped + gzip.compress(labels, mtime=0))


def cifar_seeds():
    pixels = bytes((i * 7) % 256 for i in range(3072))
    put("cifar", "cifar10_two_records", bytes([0]) + bytes([3]) + pixels + bytes([9]) + pixels)
    put("cifar", "cifar100_one_record", bytes([1]) + bytes([4, 57]) + pixels)


def list_seeds():
    put("vtab_list", "two_lines", bytes([0]) + b"a.png 0\nb.jpg 1\n")
    put("vtab_list", "tabs_blank_lines", bytes([3]) + b"\n  a.png\t2\n\na.png 1\r\n")
    put("fgvc_json", "two_keys", bytes([0]) + json.dumps({"a.png": 0, "b.jpg": 1}).encode())
    put("fgvc_json", "nested_path", bytes([4]) + json.dumps({"sub/../a.png": 2}).encode())


def spec_seeds():
    specs = ["fashion-mnist:train?classes=5-9&per_class=200&part=0:160&seed=0",
             "fashion-mnist:test?classes=5-9",
             "cifar10:/data/cifar?ratio=0.25&seed=7&limit=100",
             "vtab:/data/list.txt?root=/data/images&num_classes=10",
             "fgvc:split.json?root=imgs&classes=0-2,7"]
    for i, spec in enumerate(specs):
        put("dataset_spec", "spec%d" % i, spec.encode())


def image_seeds():
    rgb = Image.fromarray(np.arange(4 * 3 * 3, dtype=np.uint8).reshape(4, 3, 3) * 7)
    grey = Image.fromarray(np.arange(6, dtype=np.uint8).reshape(2, 3) * 40)
    for name, image, fmt in (("rgb.png", rgb, "PNG"), ("grey.png", grey, "PNG"), ("rgb.jpg", rgb, "JPEG"),
                             ("grey.jpg", grey, "JPEG"), ("rgb.bmp", rgb, "BMP"), ("grey.gif", grey, "GIF"),
                             ("grey.pgm", grey, "PPM"), ("rgba.png", rgb.convert("RGBA"), "PNG")):
        buffer = io.BytesIO()
        image.save(buffer, fmt)
        put("image", name, buffer.getvalue())


def peft_seeds(fuzz_build):
    for target in ("mask", "anchor"):
        folder = os.path.join(CORPUS, target)
        os.makedirs(folder, exist_ok=True)
        env = dict(os.environ, VITUNE_FUZZ_WRITE_SEEDS=folder)
        subprocess.run([os.path.join(fuzz_build, "fuzz", "fuzz_" + target)], env=env, check=True)


if __name__ == "__main__":
    os.makedirs(os.path.join(CORPUS, "safetensors"), exist_ok=True)
    safetensors_seeds()
    npz_seeds()
    idx_seeds()
    cifar_seeds()
    list_seeds()
    spec_seeds()
    image_seeds()
    if len(sys.argv) > 1:
        peft_seeds(sys.argv[1])
