"""Minimal safetensors writer and reader (no third-party package needed).

Layout: an 8-byte little-endian header length, a JSON header mapping each tensor name
to {"dtype", "shape", "data_offsets"} (plus an optional "__metadata__" string map),
padded with spaces to a multiple of 8 bytes, then the raw little-endian tensor bytes
in header order. The reader exists so the writer's output can be checked round-trip.
"""

import json
import struct

import numpy as np
import torch

DTYPE_NAMES = {
    np.dtype("float16"): "F16",
    np.dtype("float32"): "F32",
    np.dtype("float64"): "F64",
    np.dtype("int64"): "I64",
    np.dtype("int32"): "I32",
}
NUMPY_DTYPES = {name: dtype for dtype, name in DTYPE_NAMES.items()}


def to_numpy(value):
    """A C-contiguous little-endian numpy copy of a torch tensor or numpy array."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().contiguous().numpy()
    array = np.ascontiguousarray(value)
    if array.dtype not in DTYPE_NAMES:
        raise ValueError(f"unsupported dtype {array.dtype} for safetensors")
    return array.astype(array.dtype.newbyteorder("<"), copy=False)


def write_safetensors(path, tensors, metadata=None):
    """Writes `tensors` (name -> tensor/array, in that order) and returns the file size."""
    arrays = {name: to_numpy(value) for name, value in tensors.items()}
    header = {}
    if metadata is not None:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    for name, array in arrays.items():
        header[name] = {
            "dtype": DTYPE_NAMES[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + array.nbytes],
        }
        offset += array.nbytes
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)))
        f.write(header_bytes)
        for array in arrays.values():
            f.write(array.tobytes(order="C"))
    return 8 + len(header_bytes) + offset


def read_safetensors(path):
    """Returns (name -> numpy array, metadata dict or None) read back from `path`."""
    with open(path, "rb") as f:
        blob = f.read()
    (header_len,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + header_len].decode("utf-8"))
    metadata = header.pop("__metadata__", None)
    data = blob[8 + header_len:]
    arrays = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = np.dtype(NUMPY_DTYPES[entry["dtype"]]).newbyteorder("<")
        arrays[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(entry["shape"])
    return arrays, metadata
