#!/usr/bin/env python3
"""Writes tests/golden/families/: one tiny random checkpoint per ViT family in the key
names of the library that writes it (vit_families.py), and beside it
<family>.expected.safetensors with a batch of images, the logits (or embeddings) PyTorch
computes, and for some families the cross-entropy gradients of a few parameters.
Deterministic: fixed seed, one thread, float32.
"""

import json
import os
import sys

sys.dont_write_bytecode = True

import numpy as np
import torch
import torch.nn.functional as F

from safetensors_io import write_safetensors
from vit_families import (OpenClipVisual, TimmViT, quick_gelu, randomize, resample_abs_pos_embed,
                          timm_clip_to_hf, timm_clip_to_open_clip, timm_deit_to_hf, timm_dinov2_to_hf)
from vit_layouts import timm_to_npz

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                                    "families"))
LABELS = torch.tensor([1, 3])
BIG_VISION_RENAMES = {"Transformer/posembed_input/pos_embedding": "pos_embedding"}


def path(name):
    return os.path.join(OUT, name)


def state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def half(tensors):
    """float16 copies: the values are float16 already (randomize), so nothing changes."""
    out = {k: v.half() if isinstance(v, torch.Tensor) else v.astype(np.float16) for k, v in tensors.items()}
    for k, v in tensors.items():
        back = out[k].float() if isinstance(v, torch.Tensor) else out[k].astype(np.float32)
        assert (back == v).all(), k
    return out


def expected(name, images, output, model=None, grads=()):
    """images, the output, and d cross_entropy(output, LABELS) / d p for p in grads."""
    tensors = {"images": images, "logits": output.detach()}
    if grads:
        model.zero_grad(set_to_none=True)
        F.cross_entropy(output, LABELS).backward()
        params = dict(model.named_parameters())
        for g in grads:
            tensors["grad." + g] = params[g].grad.clone()
    write_safetensors(path(name + ".expected.safetensors"), tensors)


def timm_family(name, grads=(), **config):
    model = TimmViT(**config)
    randomize(model)
    images = torch.randn(2, 3, 16, 16)
    write_safetensors(path(name + ".safetensors"), half(state(model)))
    expected(name, images, model(images), model, grads)
    return model


@torch.no_grad()
def at_size(name, model, img_size, **overrides):
    """The model run at img_size with pos_embed resampled as timm's checkpoint_filter_fn does (antialiased):
    <name>.at<img_size>.expected.safetensors with images, logits and pos_embed."""
    resized = TimmViT(**dict(model.c, img_size=img_size, **overrides))
    sd = state(model)
    prefix = 0 if model.c["no_embed_class"] else model.prefix
    sd["pos_embed"] = resample_abs_pos_embed(sd["pos_embed"], (img_size // 4, img_size // 4), prefix, antialias=True)
    resized.load_state_dict(sd)
    images = torch.randn(2, 3, img_size, img_size)
    write_safetensors(path(f"{name}.at{img_size}.expected.safetensors"),
                      {"images": images, "logits": resized(images), "pos_embed": sd["pos_embed"]})


def main():
    torch.manual_seed(2024)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(OUT, exist_ok=True)

    avg = timm_family("timm_avg_fc_norm", ["fc_norm.weight", "blocks.1.mlp.fc2.weight", "pos_embed"],
                      global_pool="avg", fc_norm=True)
    timm_family("timm_avg_no_fc_norm", ["norm.weight", "blocks.0.attn.qkv.weight"], global_pool="avg")
    timm_family("timm_no_class_token", class_token=False, global_pool="avg", fc_norm=True)
    timm_family("timm_no_qkv_bias", qkv_bias=False)
    dino = timm_family("timm_dinov2_reg4", ["blocks.0.ls1.gamma", "blocks.1.ls2.gamma", "reg_token", "cls_token"],
                       layer_scale=True, reg_tokens=4, no_embed_class=True)
    deit = timm_family("timm_deit_distilled", ["head_dist.weight", "dist_token"], distilled=True)
    # Position embeddings resampled: up (4x4 -> 6x6 patches) and down (4x4 -> 3x3).
    at_size("timm_avg_fc_norm", avg, 24)
    at_size("timm_dinov2_reg4", dino, 24)
    at_size("timm_deit_distilled", deit, 12)
    timm_family("timm_clip_quickgelu", pre_norm=True, act="quick_gelu", ln_eps=1e-5)

    # open_clip / OpenAI CLIP visual tower: open_clip's module run on the weights of a timm
    # CLIP port in open_clip's names; both must agree.
    port = TimmViT(pre_norm=True, act="quick_gelu", ln_eps=1e-5, head_bias=False, num_classes=8)
    randomize(port)
    images = torch.randn(2, 3, 16, 16)
    clip_sd = timm_clip_to_open_clip(state(port), 2)
    visual = OpenClipVisual(16, 4, 32, 2, 2, 2, 8, quick_gelu)
    visual.load_state_dict({k[len("visual."):]: v for k, v in clip_sd.items()})
    embeds = visual(images)
    assert torch.allclose(embeds, port(images), atol=1e-5), "open_clip and timm CLIP port differ"
    text_tower = {"logit_scale": torch.tensor([4.625]), "text_projection": torch.randn(32, 8).half().float()}
    write_safetensors(path("open_clip_visual.safetensors"), half({**clip_sd, **text_tower}))
    expected("open_clip_visual", images, embeds)

    # Hugging Face CLIPVisionModelWithProjection: image_embeds, config.json beside.
    os.makedirs(path("hf_clip_vision"), exist_ok=True)
    write_safetensors(path("hf_clip_vision/model.safetensors"), half(timm_clip_to_hf(state(port), 2)))
    with open(path("hf_clip_vision/config.json"), "w") as f:
        json.dump({"model_type": "clip_vision_model", "architectures": ["CLIPVisionModelWithProjection"],
                   "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
                   "num_hidden_layers": 2, "hidden_act": "quick_gelu", "layer_norm_eps": 1e-5,
                   "image_size": 16, "patch_size": 4, "projection_dim": 8}, f, indent=2)
    expected("hf_clip_vision", images, embeds)

    # Hugging Face Dinov2Model: pooler_output (the final-normed class token).
    dino = TimmViT(layer_scale=True, num_classes=0)
    randomize(dino)
    images = torch.randn(2, 3, 16, 16)
    os.makedirs(path("hf_dinov2"), exist_ok=True)
    write_safetensors(path("hf_dinov2/model.safetensors"), half(timm_dinov2_to_hf(state(dino), 2)))
    with open(path("hf_dinov2/config.json"), "w") as f:
        json.dump({"model_type": "dinov2", "architectures": ["Dinov2Model"], "hidden_size": 32,
                   "num_attention_heads": 2, "num_hidden_layers": 2, "mlp_ratio": 2,
                   "hidden_act": "gelu", "layer_norm_eps": 1e-6, "image_size": 16, "patch_size": 4,
                   "layerscale_value": 1.0, "qkv_bias": True}, f, indent=2)
    expected("hf_dinov2", images, dino(images))

    # Google npz under big_vision's prefixes, told apart as timm's _load_weights does:
    # opt/target/ holds the original (AugReg) names; params/ big_vision's, whose
    # pos_embedding sits at the top and covers the patches only (no_embed_class).
    for prefix, name, config in (("opt/target/", "big_vision_opt_target", {}),
                                 ("params/", "big_vision_params", {"no_embed_class": True})):
        model = TimmViT(**config)
        randomize(model)
        images = torch.randn(2, 3, 16, 16)
        npz = timm_to_npz({k: v.numpy() for k, v in state(model).items()}, 2, 2)
        if prefix == "params/":
            npz = {BIG_VISION_RENAMES.get(k, k).replace("MultiHeadDotProductAttention_1", "MultiHeadDotProductAttention_0")
                   .replace("MlpBlock_3", "MlpBlock_0").replace("LayerNorm_2", "LayerNorm_1"): v
                   for k, v in npz.items()}
        np.savez(path(name + ".npz"), **{prefix + k: v for k, v in half(npz).items()})
        expected(name, images, model(images))
    # Hugging Face DeiTForImageClassificationWithTeacher: the mean of the class and
    # distillation heads, as timm's distilled DeiT at eval.
    deit = TimmViT(distilled=True)
    randomize(deit)
    images = torch.randn(2, 3, 16, 16)
    os.makedirs(path("hf_deit"), exist_ok=True)
    write_safetensors(path("hf_deit/model.safetensors"), half(timm_deit_to_hf(state(deit), 2)))
    with open(path("hf_deit/config.json"), "w") as f:
        json.dump({"model_type": "deit", "architectures": ["DeiTForImageClassificationWithTeacher"],
                   "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
                   "num_hidden_layers": 2, "hidden_act": "gelu", "layer_norm_eps": 1e-6,
                   "image_size": 16, "patch_size": 4, "qkv_bias": True}, f, indent=2)
    expected("hf_deit", images, deit(images))

    # Position-embedding grids resampled by F.interpolate(mode='bicubic') with and without
    # antialias: 6x6 -> 4x4 and 7x7 -> 3x3 down, 4x4 -> 6x6 up; one prefix token, dim 3.
    grids = {}
    for old, new in ((6, 4), (7, 3), (4, 6)):
        pos = torch.randn(1, 1 + old * old, 3)
        grids[f"pos.{old}"] = pos
        for aa in (True, False):
            grids[f"pos.{old}to{new}.{'aa' if aa else 'plain'}"] = resample_abs_pos_embed(pos, (new, new), 1, aa)
    write_safetensors(path("pos_embed_resample.expected.safetensors"), grids)

    # Families added later, after every draw above so that the earlier files stay as they were.
    # timm with global_pool='' (no pooling): every token's logits [B, N, classes]; a hub
    # config.json beside the weights says so (timm writes '' only into model_args).
    no_pool = TimmViT(global_pool="")
    randomize(no_pool)
    images = torch.randn(2, 3, 16, 16)
    os.makedirs(path("timm_no_pool"), exist_ok=True)
    write_safetensors(path("timm_no_pool/model.safetensors"), half(state(no_pool)))
    with open(path("timm_no_pool/config.json"), "w") as f:
        json.dump({"architecture": "vit_tiny_patch4_16", "num_classes": 5, "num_features": 32,
                   "model_args": {"embed_dim": 32, "depth": 2, "num_heads": 2, "global_pool": ""}}, f, indent=2)
    expected("timm_no_pool", images, no_pool(images))

    # Hugging Face DeiTForImageClassification (no teacher): DeiTModel keeps the class and
    # distillation tokens, and one classifier reads the class token:
    # logits = classifier(layernorm(encoder(embeddings))[:, 0]), with transformers' eps 1e-12.
    deit = TimmViT(distilled=True, ln_eps=1e-12)
    randomize(deit)
    images = torch.randn(2, 3, 16, 16)
    os.makedirs(path("hf_deit_no_teacher"), exist_ok=True)
    write_safetensors(path("hf_deit_no_teacher/model.safetensors"),
                      half(timm_deit_to_hf(state(deit), 2, teacher=False)))
    with open(path("hf_deit_no_teacher/config.json"), "w") as f:
        json.dump({"model_type": "deit", "architectures": ["DeiTForImageClassification"],
                   "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
                   "num_hidden_layers": 2, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
                   "image_size": 16, "patch_size": 4, "qkv_bias": True}, f, indent=2)
    expected("hf_deit_no_teacher", images, deit.head(deit.forward_features(images)[:, 0]))

    # timm qk_norm=True: LayerNorms over each head's q and k; gradients through both.
    timm_family("timm_qk_norm", ["blocks.0.attn.q_norm.weight", "blocks.1.attn.k_norm.bias",
                                 "blocks.0.attn.qkv.weight"], qk_norm=True)

    for name in sorted(os.listdir(OUT)):
        full = path(name)
        sizes = [os.path.getsize(os.path.join(full, f)) for f in os.listdir(full)] if os.path.isdir(full) \
            else [os.path.getsize(full)]
        print(f"wrote tests/golden/families/{name}: {sum(sizes)} bytes")


if __name__ == "__main__":
    main()
