"""A tiny Vision Transformer in plain PyTorch with timm's parameter names and forward.

Class token, 'token' pooling, pre-norm blocks, explicit attention in timm's qkv layout
(reshape to [B, N, 3, H, dh]), exact erf GELU, LayerNorm eps from the config. The
forward can record every intermediate activation of every block into a trace dict.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

CONFIG = {
    "img_size": 16,
    "patch": 4,
    "in_chans": 3,
    "dim": 32,
    "depth": 2,
    "heads": 4,
    "mlp_ratio": 4.0,
    "num_classes": 10,
    "ln_eps": 1e-6,
}


def attention_context(qkv, heads):
    """softmax(q k^T * dh^-0.5) v for a fused qkv [B, N, 3D] in timm's layout (split as
    [B, N, 3, H, dh]), returned with the heads merged back: [B, N, D]."""
    batch, tokens, dim = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
    head_dim = dim // heads
    q, k, v = qkv.reshape(batch, tokens, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
    attn = ((q @ k.transpose(-2, -1)) * head_dim ** -0.5).softmax(dim=-1)
    return (attn @ v).transpose(1, 2).reshape(batch, tokens, dim)


class PatchEmbed(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.proj = nn.Conv2d(cfg["in_chans"], cfg["dim"], cfg["patch"], stride=cfg["patch"])

    def forward(self, images):
        return self.proj(images).flatten(2).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg["heads"]
        self.qkv = nn.Linear(cfg["dim"], 3 * cfg["dim"])
        self.proj = nn.Linear(cfg["dim"], cfg["dim"])

    def context(self, x):
        """The attention output before the projection: [B, N, D]."""
        return attention_context(self.qkv(x), self.heads)


class Mlp(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        hidden = int(cfg["dim"] * cfg["mlp_ratio"])
        self.fc1 = nn.Linear(cfg["dim"], hidden)
        self.fc2 = nn.Linear(hidden, cfg["dim"])


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg["dim"], eps=cfg["ln_eps"])
        self.attn = Attention(cfg)
        self.norm2 = nn.LayerNorm(cfg["dim"], eps=cfg["ln_eps"])
        self.mlp = Mlp(cfg)

    def forward(self, x, trace=None, prefix=""):
        steps = {"norm1_in": x}
        steps["norm1_out"] = self.norm1(x)
        steps["attn_ctx"] = self.attn.context(steps["norm1_out"])
        steps["attn_out"] = self.attn.proj(steps["attn_ctx"])
        steps["norm2_in"] = x + steps["attn_out"]
        steps["norm2_out"] = self.norm2(steps["norm2_in"])
        steps["fc1_pre"] = self.mlp.fc1(steps["norm2_out"])
        steps["fc1_act"] = F.gelu(steps["fc1_pre"], approximate="none")
        steps["fc2_out"] = self.mlp.fc2(steps["fc1_act"])
        steps["block_out"] = steps["norm2_in"] + steps["fc2_out"]
        if trace is not None:
            for name, value in steps.items():
                trace[prefix + name] = value.detach().clone()
        return steps["block_out"]


class TinyViT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        tokens = (cfg["img_size"] // cfg["patch"]) ** 2 + 1
        self.patch_embed = PatchEmbed(cfg)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg["dim"]))
        self.pos_embed = nn.Parameter(torch.zeros(1, tokens, cfg["dim"]))
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg["depth"])])
        self.norm = nn.LayerNorm(cfg["dim"], eps=cfg["ln_eps"])
        self.head = nn.Linear(cfg["dim"], cfg["num_classes"])

    def forward(self, images, trace=None):
        x = self.patch_embed(images)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        for i, block in enumerate(self.blocks):
            x = block(x, trace, f"blocks.{i}.")
        return self.head(self.norm(x)[:, 0])


def is_layer_norm(name):
    module = name.rsplit(".", 1)[0]
    return module == "norm" or module.endswith(".norm1") or module.endswith(".norm2")


@torch.no_grad()
def init_parameters(model):
    """Non-trivial values so every path matters, drawn in named_parameters() order:
    weights N(0, 1/fan_in), biases N(0, 0.1^2), LayerNorm weights 1 + 0.1 N(0,1) and
    biases 0.1 N(0,1), cls_token and pos_embed 0.1 N(0,1)."""
    for name, param in model.named_parameters():
        noise = torch.randn(param.shape)
        if name in ("cls_token", "pos_embed"):
            param.copy_(0.1 * noise)
        elif is_layer_norm(name):
            param.copy_(1.0 + 0.1 * noise if name.endswith(".weight") else 0.1 * noise)
        elif name.endswith(".weight"):
            fan_in = param[0].numel()
            param.copy_(noise / math.sqrt(fan_in))
        else:
            param.copy_(0.1 * noise)
