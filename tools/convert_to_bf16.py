"""Writes a copy of a safetensors checkpoint with its F32 tensors rounded to BF16
(round to nearest even, as torch's .to(torch.bfloat16)); other dtypes and the metadata
are kept. vitune loads BF16 weights and computes in f32. Used for the committed larger
Fashion-MNIST model, to halve its size.

    /usr/bin/python3 tools/convert_to_bf16.py IN.safetensors OUT.safetensors
"""

import json
import os
import struct
import sys

import numpy as np
import torch

from safetensors_io import read_safetensors


def main(source, target):
    arrays, metadata = read_safetensors(source)
    header = {} if metadata is None else {"__metadata__": metadata}
    blobs = []
    offset = 0
    for name, array in arrays.items():
        if array.dtype == np.dtype("<f4"):
            bits = torch.from_numpy(array.copy()).to(torch.bfloat16).view(torch.int16).numpy()
            blob, dtype = bits.astype("<i2").tobytes(), "BF16"
        else:
            blob, dtype = array.tobytes(), {v: k for k, v in _NAMES.items()}[array.dtype.newbyteorder("=")]
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)
    temporary = target + ".tmp"
    with open(temporary, "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)))
        f.write(header_bytes)
        for blob in blobs:
            f.write(blob)
    os.replace(temporary, target)


_NAMES = {"F16": np.dtype("float16"), "F64": np.dtype("float64"), "I64": np.dtype("int64"), "I32": np.dtype("int32")}

if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
