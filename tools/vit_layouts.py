"""Converts timm ViT weights to the Hugging Face and Google (big_vision .npz) layouts
and back, so the golden files can check a loader of each layout.

All functions take and return dicts of name -> numpy float32 array.
"""

import numpy as np

HF_BLOCK_PAIRS = [
    ("norm1", "layernorm_before"),
    ("attn.proj", "attention.output.dense"),
    ("norm2", "layernorm_after"),
    ("mlp.fc1", "intermediate.dense"),
    ("mlp.fc2", "output.dense"),
]
HF_QKV = ["query", "key", "value"]

NPZ_ATTN = "MultiHeadDotProductAttention_1"


def timm_to_hf(timm, depth):
    hf = {
        "vit.embeddings.cls_token": timm["cls_token"],
        "vit.embeddings.position_embeddings": timm["pos_embed"],
        "vit.embeddings.patch_embeddings.projection.weight": timm["patch_embed.proj.weight"],
        "vit.embeddings.patch_embeddings.projection.bias": timm["patch_embed.proj.bias"],
    }
    for i in range(depth):
        src, dst = f"blocks.{i}.", f"vit.encoder.layer.{i}."
        for timm_name, hf_name in HF_BLOCK_PAIRS:
            for kind in ("weight", "bias"):
                hf[f"{dst}{hf_name}.{kind}"] = timm[f"{src}{timm_name}.{kind}"]
        for kind in ("weight", "bias"):
            parts = np.split(timm[f"{src}attn.qkv.{kind}"], 3, axis=0)
            for part_name, part in zip(HF_QKV, parts):
                hf[f"{dst}attention.attention.{part_name}.{kind}"] = np.ascontiguousarray(part)
    for kind in ("weight", "bias"):
        hf[f"vit.layernorm.{kind}"] = timm[f"norm.{kind}"]
        hf[f"classifier.{kind}"] = timm[f"head.{kind}"]
    return hf


def hf_to_timm(hf, depth):
    timm = {
        "cls_token": hf["vit.embeddings.cls_token"],
        "pos_embed": hf["vit.embeddings.position_embeddings"],
        "patch_embed.proj.weight": hf["vit.embeddings.patch_embeddings.projection.weight"],
        "patch_embed.proj.bias": hf["vit.embeddings.patch_embeddings.projection.bias"],
    }
    for i in range(depth):
        src, dst = f"vit.encoder.layer.{i}.", f"blocks.{i}."
        for timm_name, hf_name in HF_BLOCK_PAIRS:
            for kind in ("weight", "bias"):
                timm[f"{dst}{timm_name}.{kind}"] = hf[f"{src}{hf_name}.{kind}"]
        for kind in ("weight", "bias"):
            parts = [hf[f"{src}attention.attention.{p}.{kind}"] for p in HF_QKV]
            timm[f"{dst}attn.qkv.{kind}"] = np.concatenate(parts, axis=0)
    for kind in ("weight", "bias"):
        timm[f"norm.{kind}"] = hf[f"vit.layernorm.{kind}"]
        timm[f"head.{kind}"] = hf[f"classifier.{kind}"]
    return timm


def timm_to_npz(timm, depth, heads):
    """Google layout: Dense kernels are [in, out] (the transpose of torch's weight);
    attention kernels split the head axis out: q/k/v [D, H, dh], out [H, dh, D]."""
    dim = timm["norm.weight"].shape[0]
    head_dim = dim // heads
    npz = {
        "cls": timm["cls_token"],
        "Transformer/posembed_input/pos_embedding": timm["pos_embed"],
        "embedding/kernel": timm["patch_embed.proj.weight"].transpose(2, 3, 1, 0),
        "embedding/bias": timm["patch_embed.proj.bias"],
    }
    for i in range(depth):
        src, dst = f"blocks.{i}.", f"Transformer/encoderblock_{i}/"
        for timm_name, npz_name in (("norm1", "LayerNorm_0"), ("norm2", "LayerNorm_2")):
            npz[f"{dst}{npz_name}/scale"] = timm[f"{src}{timm_name}.weight"]
            npz[f"{dst}{npz_name}/bias"] = timm[f"{src}{timm_name}.bias"]
        weights = np.split(timm[f"{src}attn.qkv.weight"], 3, axis=0)
        biases = np.split(timm[f"{src}attn.qkv.bias"], 3, axis=0)
        for part_name, weight, bias in zip(HF_QKV, weights, biases):
            npz[f"{dst}{NPZ_ATTN}/{part_name}/kernel"] = weight.T.reshape(dim, heads, head_dim)
            npz[f"{dst}{NPZ_ATTN}/{part_name}/bias"] = bias.reshape(heads, head_dim)
        npz[f"{dst}{NPZ_ATTN}/out/kernel"] = timm[f"{src}attn.proj.weight"].T.reshape(
            heads, head_dim, dim)
        npz[f"{dst}{NPZ_ATTN}/out/bias"] = timm[f"{src}attn.proj.bias"]
        for timm_name, npz_name in (("mlp.fc1", "Dense_0"), ("mlp.fc2", "Dense_1")):
            npz[f"{dst}MlpBlock_3/{npz_name}/kernel"] = timm[f"{src}{timm_name}.weight"].T
            npz[f"{dst}MlpBlock_3/{npz_name}/bias"] = timm[f"{src}{timm_name}.bias"]
    npz["Transformer/encoder_norm/scale"] = timm["norm.weight"]
    npz["Transformer/encoder_norm/bias"] = timm["norm.bias"]
    npz["head/kernel"] = timm["head.weight"].T
    npz["head/bias"] = timm["head.bias"]
    return {name: np.ascontiguousarray(value) for name, value in npz.items()}


def npz_to_timm(npz, depth):
    dim = npz["Transformer/encoder_norm/scale"].shape[0]
    timm = {
        "cls_token": npz["cls"],
        "pos_embed": npz["Transformer/posembed_input/pos_embedding"],
        "patch_embed.proj.weight": npz["embedding/kernel"].transpose(3, 2, 0, 1),
        "patch_embed.proj.bias": npz["embedding/bias"],
    }
    for i in range(depth):
        src, dst = f"Transformer/encoderblock_{i}/", f"blocks.{i}."
        for timm_name, npz_name in (("norm1", "LayerNorm_0"), ("norm2", "LayerNorm_2")):
            timm[f"{dst}{timm_name}.weight"] = npz[f"{src}{npz_name}/scale"]
            timm[f"{dst}{timm_name}.bias"] = npz[f"{src}{npz_name}/bias"]
        timm[f"{dst}attn.qkv.weight"] = np.concatenate(
            [npz[f"{src}{NPZ_ATTN}/{p}/kernel"].reshape(dim, dim).T for p in HF_QKV], axis=0)
        timm[f"{dst}attn.qkv.bias"] = np.concatenate(
            [npz[f"{src}{NPZ_ATTN}/{p}/bias"].reshape(dim) for p in HF_QKV], axis=0)
        timm[f"{dst}attn.proj.weight"] = npz[f"{src}{NPZ_ATTN}/out/kernel"].reshape(dim, dim).T
        timm[f"{dst}attn.proj.bias"] = npz[f"{src}{NPZ_ATTN}/out/bias"]
        for timm_name, npz_name in (("mlp.fc1", "Dense_0"), ("mlp.fc2", "Dense_1")):
            timm[f"{dst}{timm_name}.weight"] = npz[f"{src}MlpBlock_3/{npz_name}/kernel"].T
            timm[f"{dst}{timm_name}.bias"] = npz[f"{src}MlpBlock_3/{npz_name}/bias"]
    timm["norm.weight"] = npz["Transformer/encoder_norm/scale"]
    timm["norm.bias"] = npz["Transformer/encoder_norm/bias"]
    timm["head.weight"] = npz["head/kernel"].T
    timm["head.bias"] = npz["head/bias"]
    return {name: np.ascontiguousarray(value) for name, value in timm.items()}
