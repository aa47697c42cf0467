"""ViT families as their libraries define them, small enough for golden files.

TimmViT follows timm's VisionTransformer (and VisionTransformerDistilled) forward and
state-dict key names: class_token, reg_tokens, no_embed_class, global_pool, fc_norm,
qkv_bias, qk_norm (attn.q_norm / k_norm), init_values (LayerScale ls1/ls2.gamma), pre_norm (norm_pre, bias-free patch
conv), act_layer gelu or quick_gelu, distilled (dist_token, head_dist). OpenClipVisual
follows open_clip's VisionTransformer (conv1, class_embedding, positional_embedding,
ln_pre, transformer.resblocks.N with nn.MultiheadAttention in_proj, ln_post, proj).
The renames give Hugging Face Dinov2Model, DeiTForImageClassification(WithTeacher) and
CLIPVisionModelWithProjection keys.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


class Attention(nn.Module):
    def __init__(self, dim, heads, qkv_bias, qk_norm=False, eps=1e-6):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        # timm's qk_norm: norm_layer(head_dim) on q and k after the heads are split.
        self.q_norm = nn.LayerNorm(dim // heads, eps=eps) if qk_norm else nn.Identity()
        self.k_norm = nn.LayerNorm(dim // heads, eps=eps) if qk_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k = self.q_norm(q), self.k_norm(k)
        attn = ((q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, d))


class LayerScale(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * self.gamma


class Mlp(nn.Module):
    def __init__(self, dim, hidden, act):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = act
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        act = quick_gelu if c["act"] == "quick_gelu" else F.gelu
        self.norm1 = nn.LayerNorm(c["dim"], eps=c["ln_eps"])
        self.attn = Attention(c["dim"], c["heads"], c["qkv_bias"], c["qk_norm"], c["ln_eps"])
        self.ls1 = LayerScale(c["dim"]) if c["layer_scale"] else nn.Identity()
        self.norm2 = nn.LayerNorm(c["dim"], eps=c["ln_eps"])
        self.mlp = Mlp(c["dim"], c["mlp_ratio"] * c["dim"], act)
        self.ls2 = LayerScale(c["dim"]) if c["layer_scale"] else nn.Identity()

    def forward(self, x):
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


TIMM_DEFAULTS = {
    "img_size": 16, "patch": 4, "dim": 32, "depth": 2, "heads": 2, "mlp_ratio": 2, "num_classes": 5,
    "ln_eps": 1e-6, "class_token": True, "reg_tokens": 0, "no_embed_class": False,
    "global_pool": "token", "fc_norm": False, "qkv_bias": True, "layer_scale": False,
    "pre_norm": False, "act": "gelu", "distilled": False, "head_bias": True, "qk_norm": False,
}


class TimmViT(nn.Module):
    def __init__(self, **overrides):
        super().__init__()
        c = dict(TIMM_DEFAULTS, **overrides)
        self.c = c
        d = c["dim"]
        patches = (c["img_size"] // c["patch"]) ** 2
        self.prefix = int(c["class_token"]) + c["reg_tokens"] + int(c["distilled"])
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(3, d, c["patch"], stride=c["patch"], bias=not c["pre_norm"])
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d)) if c["class_token"] else None
        self.reg_token = nn.Parameter(torch.zeros(1, c["reg_tokens"], d)) if c["reg_tokens"] else None
        self.dist_token = nn.Parameter(torch.zeros(1, 1, d)) if c["distilled"] else None
        self.pos_embed = nn.Parameter(torch.zeros(1, patches + (0 if c["no_embed_class"] else self.prefix), d))
        self.norm_pre = nn.LayerNorm(d, eps=c["ln_eps"]) if c["pre_norm"] else nn.Identity()
        self.blocks = nn.ModuleList([Block(c) for _ in range(c["depth"])])
        self.norm = nn.Identity() if c["fc_norm"] else nn.LayerNorm(d, eps=c["ln_eps"])
        self.fc_norm = nn.LayerNorm(d, eps=c["ln_eps"]) if c["fc_norm"] else nn.Identity()
        self.head = nn.Linear(d, c["num_classes"], bias=c["head_bias"]) if c["num_classes"] else nn.Identity()
        self.head_dist = nn.Linear(d, c["num_classes"]) if c["distilled"] else None

    def _pos_embed(self, x):
        to_cat = [t.expand(x.shape[0], -1, -1) for t in (self.cls_token, self.reg_token, self.dist_token)
                  if t is not None]
        if self.c["no_embed_class"]:
            return torch.cat(to_cat + [x + self.pos_embed], dim=1)
        return torch.cat(to_cat + [x], dim=1) + self.pos_embed

    def forward_features(self, images):
        x = self.patch_embed.proj(images).flatten(2).transpose(1, 2)
        x = self.norm_pre(self._pos_embed(x))
        for block in self.blocks:
            x = block(x)
        return self.norm(x)

    def forward(self, images):
        x = self.forward_features(images)
        if self.head_dist is not None:  # VisionTransformerDistilled at eval
            return (self.head(x[:, 0]) + self.head_dist(x[:, 1])) / 2
        if self.c["global_pool"] == "avg":
            x = x[:, self.prefix:].mean(dim=1)
        elif self.c["global_pool"] == "token":
            x = x[:, 0]
        # global_pool '': every token, as timm's global_pool_nlc leaves them; the head acts on each.
        return self.head(self.fc_norm(x))


class OpenClipVisual(nn.Module):
    """open_clip.transformer.VisionTransformer, token pooling, final_ln_after_pool False."""

    class ResBlock(nn.Module):
        def __init__(self, d, heads, mlp_ratio, act):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.ln_2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential()
            self.mlp.add_module("c_fc", nn.Linear(d, mlp_ratio * d))
            self.mlp.add_module("c_proj", nn.Linear(mlp_ratio * d, d))
            self.act = act

        def forward(self, x):
            h = self.ln_1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.mlp.c_proj(self.act(self.mlp.c_fc(self.ln_2(x))))

    def __init__(self, img_size, patch, width, layers, heads, mlp_ratio, output_dim, act):
        super().__init__()
        scale = width ** -0.5
        self.conv1 = nn.Conv2d(3, width, patch, stride=patch, bias=False)
        self.class_embedding = nn.Parameter(scale * torch.randn(width))
        self.positional_embedding = nn.Parameter(scale * torch.randn((img_size // patch) ** 2 + 1, width))
        self.ln_pre = nn.LayerNorm(width)
        self.transformer = nn.Module()
        self.transformer.resblocks = nn.ModuleList([self.ResBlock(width, heads, mlp_ratio, act) for _ in range(layers)])
        self.ln_post = nn.LayerNorm(width)
        self.proj = nn.Parameter(scale * torch.randn(width, output_dim))

    def forward(self, images):
        x = self.conv1(images).flatten(2).transpose(1, 2)
        cls = self.class_embedding.to(x.dtype) + torch.zeros(x.shape[0], 1, x.shape[-1])
        x = self.ln_pre(torch.cat([cls, x], dim=1) + self.positional_embedding)
        for block in self.transformer.resblocks:
            x = block(x)
        return self.ln_post(x)[:, 0] @ self.proj


@torch.no_grad()
def randomize(model):
    """Values that make every path matter: weights N(0, 1/fan_in), biases and tokens
    0.1 N(0,1), LayerNorm weights and LayerScale gammas 1 + 0.1 N(0,1); each rounded to
    float16, so that the checkpoints can store them as f16 without changing them."""
    for name, param in model.named_parameters():
        noise = torch.randn(param.shape)
        if param.ndim == 1 and ("norm" in name or "ln_" in name or name.endswith("gamma")) and \
                name.endswith(("weight", "gamma")):
            param.copy_(1.0 + 0.1 * noise)
        elif param.ndim >= 2 and name.endswith(("weight", "proj")) and "embed" not in name:
            param.copy_(noise / math.sqrt(param[0].numel() if not name.endswith("proj") else param.shape[0]))
        else:
            param.copy_(0.1 * noise)
        param.copy_(param.half().float())


def timm_clip_to_open_clip(timm, depth):
    """A timm CLIP port (pre_norm, bias-free head) in open_clip's visual key names."""
    out = {
        "visual.conv1.weight": timm["patch_embed.proj.weight"],
        "visual.class_embedding": timm["cls_token"].reshape(-1),
        "visual.positional_embedding": timm["pos_embed"][0],
        "visual.ln_pre.weight": timm["norm_pre.weight"], "visual.ln_pre.bias": timm["norm_pre.bias"],
        "visual.ln_post.weight": timm["norm.weight"], "visual.ln_post.bias": timm["norm.bias"],
        "visual.proj": timm["head.weight"].t(),
    }
    for i in range(depth):
        s, d = f"blocks.{i}.", f"visual.transformer.resblocks.{i}."
        pairs = [("norm1", "ln_1"), ("norm2", "ln_2"), ("attn.proj", "attn.out_proj"),
                 ("mlp.fc1", "mlp.c_fc"), ("mlp.fc2", "mlp.c_proj")]
        for a, b in pairs:
            out[f"{d}{b}.weight"], out[f"{d}{b}.bias"] = timm[f"{s}{a}.weight"], timm[f"{s}{a}.bias"]
        out[f"{d}attn.in_proj_weight"] = timm[f"{s}attn.qkv.weight"]
        out[f"{d}attn.in_proj_bias"] = timm[f"{s}attn.qkv.bias"]
    return {k: v.contiguous() for k, v in out.items()}


def timm_to_hf_encoder(timm, depth, layer, names):
    """Block tensors in HF names: q/k/v split from qkv; `names` maps the rest."""
    out = {}
    for i in range(depth):
        s, d = f"blocks.{i}.", f"{layer}.{i}."
        for kind in ("weight", "bias"):
            for part, value in zip(names["qkv"], timm[f"{s}attn.qkv.{kind}"].chunk(3)):
                out[f"{d}{part}.{kind}"] = value
            for a, b in names["pairs"]:
                if f"{s}{a}.{kind}" in timm:
                    out[f"{d}{b}.{kind}"] = timm[f"{s}{a}.{kind}"]
        for a, b in names.get("gammas", []):
            out[f"{d}{b}"] = timm[f"{s}{a}"]
    return out


def timm_dinov2_to_hf(timm, depth):
    out = {
        "embeddings.cls_token": timm["cls_token"],
        "embeddings.mask_token": torch.zeros(1, timm["cls_token"].shape[-1]),
        "embeddings.position_embeddings": timm["pos_embed"],
        "embeddings.patch_embeddings.projection.weight": timm["patch_embed.proj.weight"],
        "embeddings.patch_embeddings.projection.bias": timm["patch_embed.proj.bias"],
        "layernorm.weight": timm["norm.weight"], "layernorm.bias": timm["norm.bias"],
    }
    out.update(timm_to_hf_encoder(timm, depth, "encoder.layer", {
        "qkv": [f"attention.attention.{p}" for p in ("query", "key", "value")],
        "pairs": [("norm1", "norm1"), ("norm2", "norm2"), ("attn.proj", "attention.output.dense"),
                  ("mlp.fc1", "mlp.fc1"), ("mlp.fc2", "mlp.fc2")],
        "gammas": [("ls1.gamma", "layer_scale1.lambda1"), ("ls2.gamma", "layer_scale2.lambda1")],
    }))
    return {k: v.contiguous() for k, v in out.items()}


def timm_deit_to_hf(timm, depth, teacher=True):
    """A timm distilled DeiT in transformers' DeiTForImageClassificationWithTeacher names, or
    with teacher False in DeiTForImageClassification's: the same DeiTModel and one
    `classifier` (timm's head; head_dist has no counterpart there)."""
    out = {
        "deit.embeddings.cls_token": timm["cls_token"],
        "deit.embeddings.distillation_token": timm["dist_token"],
        "deit.embeddings.position_embeddings": timm["pos_embed"],
        "deit.embeddings.patch_embeddings.projection.weight": timm["patch_embed.proj.weight"],
        "deit.embeddings.patch_embeddings.projection.bias": timm["patch_embed.proj.bias"],
        "deit.layernorm.weight": timm["norm.weight"], "deit.layernorm.bias": timm["norm.bias"],
        "cls_classifier.weight": timm["head.weight"], "cls_classifier.bias": timm["head.bias"],
        "distillation_classifier.weight": timm["head_dist.weight"],
        "distillation_classifier.bias": timm["head_dist.bias"],
    }
    if not teacher:
        del out["distillation_classifier.weight"], out["distillation_classifier.bias"]
        out["classifier.weight"], out["classifier.bias"] = out.pop("cls_classifier.weight"), out.pop("cls_classifier.bias")
    out.update(timm_to_hf_encoder(timm, depth, "deit.encoder.layer", {
        "qkv": [f"attention.attention.{p}" for p in ("query", "key", "value")],
        "pairs": [("norm1", "layernorm_before"), ("norm2", "layernorm_after"), ("attn.proj", "attention.output.dense"),
                  ("mlp.fc1", "intermediate.dense"), ("mlp.fc2", "output.dense")],
    }))
    return {k: v.contiguous() for k, v in out.items()}


def timm_clip_to_hf(timm, depth):
    v = "vision_model."
    out = {
        v + "embeddings.class_embedding": timm["cls_token"].reshape(-1),
        v + "embeddings.patch_embedding.weight": timm["patch_embed.proj.weight"],
        v + "embeddings.position_embedding.weight": timm["pos_embed"][0],
        v + "pre_layrnorm.weight": timm["norm_pre.weight"], v + "pre_layrnorm.bias": timm["norm_pre.bias"],
        v + "post_layernorm.weight": timm["norm.weight"], v + "post_layernorm.bias": timm["norm.bias"],
        "visual_projection.weight": timm["head.weight"],
    }
    out.update(timm_to_hf_encoder(timm, depth, v + "encoder.layers", {
        "qkv": [f"self_attn.{p}_proj" for p in ("q", "k", "v")],
        "pairs": [("norm1", "layer_norm1"), ("norm2", "layer_norm2"), ("attn.proj", "self_attn.out_proj"),
                  ("mlp.fc1", "mlp.fc1"), ("mlp.fc2", "mlp.fc2")],
    }))
    return {k: v.contiguous() for k, v in out.items()}


def resample_abs_pos_embed(posemb, new_size, num_prefix_tokens=1, antialias=True):
    """timm.layers.resample_abs_pos_embed (square grids): prefix tokens kept, the patch
    grid resized with torch's bicubic interpolation, antialiased by default as timm."""
    hw = int(math.sqrt(posemb.shape[1] - num_prefix_tokens))
    prefix, grid = posemb[:, :num_prefix_tokens], posemb[:, num_prefix_tokens:]
    grid = grid.reshape(1, hw, hw, -1).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=new_size, mode="bicubic", align_corners=False, antialias=antialias)
    return torch.cat([prefix, grid.permute(0, 2, 3, 1).reshape(1, -1, posemb.shape[-1])], dim=1)
