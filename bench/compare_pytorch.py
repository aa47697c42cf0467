#!/usr/bin/env python3
"""Side-by-side speed of vitune and PyTorch on the same ViT steps, on the CPU.

For each config and mode it runs vitune's `vit_step` program and a plain-PyTorch ViT
of the same shapes with the same batch, steps, warmup and thread count, and prints
images per second and the ratio vitune / PyTorch. Modes: `forward` (no autograd) and
`train` (forward + cross-entropy + backward + SGD momentum 0.9 step + zero_grad).
`--bf16` runs both under bf16 autocast: vitune's `--bf16` (bf16 GEMM operands, fp32
accumulation, everything else fp32) against `torch.autocast("cpu", dtype=torch.bfloat16)`
(oneDNN's bf16 matrix products, which also keeps the linear layers' outputs in bf16).

Fairness:
  * Both use `--threads` threads: vitune through VITUNE_NUM_THREADS (and --threads),
    PyTorch through torch.set_num_threads and OPENBLAS_NUM_THREADS (Debian's torch
    calls the same OpenBLAS for its matrix products).
  * OMP_WAIT_POLICY=PASSIVE is set for this process before torch is imported: by
    default, OpenMP worker threads spin after each parallel region waiting for more
    work; on a 2-core machine the spinning threads steal the core that OpenBLAS or the
    next op needs, and PyTorch's timings would measure that contention, not its kernels.
  * OPENBLAS_CORETYPE, when set, forces OpenBLAS's kernel family for both sides.

Runs with Debian's /usr/bin/python3 (torch 1.13, which has no
F.scaled_dot_product_attention, so attention is written out). Without torch it prints
vitune's figures alone.
"""

import argparse
import json
import os
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_VITUNE_BIN = os.path.join(REPO_ROOT, "build", "bench", "vit_step")

# Model shapes, batch and default steps/warmup of each config.
CONFIGS = {
    "fmnist": dict(img=28, patch=4, chans=1, dim=64, depth=4, heads=4, classes=10,
                   batch=128, steps=20, warmup=3),
    "vit-b16": dict(img=224, patch=16, chans=3, dim=768, depth=12, heads=12, classes=1000,
                    batch=8, steps=3, warmup=1),
}
MODES = ("forward", "train")
MLP_RATIO = 4
LN_EPS = 1e-6


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help="comma-separated configs from: %s (default: all)" % ", ".join(CONFIGS))
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated modes from: forward, train (default: both)")
    parser.add_argument("--steps", type=int, help="timed steps for every config "
                        "(default: fmnist 20, vit-b16 3)")
    parser.add_argument("--warmup", type=int, help="untimed steps first, for every config "
                        "(default: fmnist 3, vit-b16 1)")
    parser.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    parser.add_argument("--bf16", action="store_true",
                        help="run both under bf16 autocast (vitune --bf16, torch.autocast bfloat16)")
    parser.add_argument("--vitune-bin", default=DEFAULT_VITUNE_BIN,
                        help="the vit_step program (default: build/bench/vit_step in the repo)")
    parser.add_argument("--json-out", help="also write the results to this JSON file")
    args = parser.parse_args()
    args.configs = split_choices(parser, "--configs", args.configs, CONFIGS)
    args.modes = split_choices(parser, "--modes", args.modes, MODES)
    if args.steps is not None and args.steps < 1:
        parser.error("--steps %d: expected at least 1" % args.steps)
    if args.warmup is not None and args.warmup < 0:
        parser.error("--warmup %d: expected at least 0" % args.warmup)
    if args.threads < 1:
        parser.error("--threads %d: expected at least 1" % args.threads)
    if not os.path.isfile(args.vitune_bin) or not os.access(args.vitune_bin, os.X_OK):
        parser.error("--vitune-bin %s: no such executable; build the vit_step target "
                     "(cmake --build build --target vit_step) or pass its path" % args.vitune_bin)
    return args


def split_choices(parser, flag, text, valid):
    chosen = [item.strip() for item in text.split(",") if item.strip()]
    for item in chosen:
        if item not in valid:
            parser.error("%s: unknown '%s', expected some of %s" % (flag, item, ", ".join(valid)))
    if not chosen:
        parser.error("%s: nothing chosen" % flag)
    return chosen


def run_vitune(binary, cfg, mode, steps, warmup, threads, bf16):
    """Runs vit_step once and returns its JSON line as a dict."""
    command = [binary, "--mode", mode, "--steps", str(steps), "--warmup", str(warmup),
               "--threads", str(threads)] + (["--bf16"] if bf16 else [])
    for flag in ("img", "patch", "chans", "dim", "depth", "heads", "classes", "batch"):
        command += ["--" + flag, str(cfg[flag])]
    env = dict(os.environ, VITUNE_NUM_THREADS=str(threads))
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("vit_step failed (exit %d): %s\n%s" % (done.returncode, " ".join(command),
                                                        done.stderr.strip()))
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if len(lines) != 1:
        sys.exit("vit_step printed no single JSON line: %s\n%s" % (" ".join(command), done.stdout))
    return json.loads(lines[0])


def torch_vit_class(torch):
    """The plain-PyTorch ViT, defined once torch is imported."""
    nn = torch.nn
    F = torch.nn.functional
    has_sdpa = hasattr(F, "scaled_dot_product_attention")

    class Attention(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.scale = (dim // heads) ** -0.5
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            batch, tokens, dim = x.shape
            qkv = self.qkv(x).reshape(batch, tokens, 3, self.heads, dim // self.heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            if has_sdpa:
                ctx = F.scaled_dot_product_attention(q, k, v)
            else:
                ctx = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1) @ v
            return self.proj(ctx.transpose(1, 2).reshape(batch, tokens, dim))

    class Block(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim, eps=LN_EPS)
            self.attn = Attention(dim, heads)
            self.norm2 = nn.LayerNorm(dim, eps=LN_EPS)
            self.fc1 = nn.Linear(dim, MLP_RATIO * dim)
            self.fc2 = nn.Linear(MLP_RATIO * dim, dim)

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))

    class VisionTransformer(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            dim, tokens = cfg["dim"], (cfg["img"] // cfg["patch"]) ** 2 + 1
            self.patch_embed = nn.Conv2d(cfg["chans"], dim, cfg["patch"], stride=cfg["patch"])
            self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
            self.pos_embed = nn.Parameter(torch.zeros(1, tokens, dim))
            self.blocks = nn.ModuleList(Block(dim, cfg["heads"]) for _ in range(cfg["depth"]))
            self.norm = nn.LayerNorm(dim, eps=LN_EPS)
            self.head = nn.Linear(dim, cfg["classes"])
            nn.init.trunc_normal_(self.pos_embed, std=0.02)
            nn.init.normal_(self.cls_token, std=1e-6)
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    nn.init.trunc_normal_(module.weight, std=0.02)
                    nn.init.zeros_(module.bias)

        def forward(self, images):
            x = self.patch_embed(images).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x)[:, 0])

    return VisionTransformer, has_sdpa


def run_torch(torch, vit_class, cfg, mode, steps, warmup, bf16):
    """Times PyTorch steps of one config and mode; returns images/s and ms/step."""
    F = torch.nn.functional
    torch.manual_seed(0)
    model = vit_class(cfg)
    images = torch.randn(cfg["batch"], cfg["chans"], cfg["img"], cfg["img"])
    labels = torch.randint(0, cfg["classes"], (cfg["batch"],))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def forward():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            return model(images)

    def step():
        if mode == "forward":
            with torch.no_grad():
                forward()
            return
        loss = F.cross_entropy(forward().float(), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    seconds = time.perf_counter() - start
    return {"images_per_s": cfg["batch"] * steps / seconds, "ms_per_step": 1e3 * seconds / steps}


def import_torch(threads):
    """Imports torch with the fairness settings, or returns (None, reason)."""
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    try:
        import torch
    except ImportError as error:
        return None, str(error)
    torch.set_num_threads(threads)
    return torch, None


def format_rate(value):
    return "-" if value is None else "%.1f" % value


def print_table(rows, torch_missing):
    header = ("config", "mode", "vitune img/s", "PyTorch img/s", "ratio")
    lines = [header]
    for row in rows:
        torch_rate = row["torch"]["images_per_s"] if row["torch"] else None
        ratio = row["vitune"]["images_per_s"] / torch_rate if torch_rate else None
        lines.append((row["config"], row["mode"], format_rate(row["vitune"]["images_per_s"]),
                      format_rate(torch_rate), "-" if ratio is None else "%.2f" % ratio))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for index, line in enumerate(lines):
        print("  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                        for i, (cell, w) in enumerate(zip(line, widths))))
        if index == 0:
            print("  ".join("-" * w for w in widths))
    if torch_missing:
        print("\nPyTorch is missing (import torch failed: %s); vitune figures only." % torch_missing)


def main():
    args = parse_args()
    torch, torch_missing = import_torch(args.threads)
    vit_class, has_sdpa = torch_vit_class(torch) if torch else (None, False)
    rows = []
    for name in args.configs:
        cfg = CONFIGS[name]
        steps = args.steps if args.steps is not None else cfg["steps"]
        warmup = args.warmup if args.warmup is not None else cfg["warmup"]
        for mode in args.modes:
            print("running %s %s: batch %d, %d steps after %d warmup ..."
                  % (name, mode, cfg["batch"], steps, warmup), file=sys.stderr, flush=True)
            vitune = run_vitune(args.vitune_bin, cfg, mode, steps, warmup, args.threads, args.bf16)
            measured = run_torch(torch, vit_class, cfg, mode, steps, warmup, args.bf16) if torch else None
            rows.append({"config": name, "mode": mode, "batch": cfg["batch"], "steps": steps,
                         "warmup": warmup, "vitune": vitune, "torch": measured})

    print_table(rows, torch_missing)
    kernels = sorted({row["vitune"]["gemm_kernel"] for row in rows})
    print("vitune fp32 GEMM: %s" % ", ".join(kernels))
    if args.bf16:
        print("bf16 autocast on both; vitune bf16 GEMM: %s"
              % ", ".join(sorted({row["vitune"]["gemm_bf16_kernel"] for row in rows})))
    cores = sorted({row["vitune"]["blas_core"] for row in rows})
    print("\nthreads: %d each" % args.threads)
    print("OpenBLAS kernel (f64, and PyTorch): %s" % ", ".join(cores))
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    if coretype is None:
        print("OPENBLAS_CORETYPE: not set (setting it, e.g. to SkylakeX, forces OpenBLAS's kernel)")
    else:
        print("OPENBLAS_CORETYPE=%r: forces OpenBLAS's kernel for both vitune and PyTorch" % coretype)
    if torch:
        print("PyTorch %s, attention: %s" % (torch.__version__, "F.scaled_dot_product_attention"
                                             if has_sdpa else "explicit softmax(q k^T * scale) v"))
    for row in rows:
        peak = row["vitune"]["peak_bytes"]
        print("vitune peak memory, %s %s: %.1f MiB" % (row["config"], row["mode"], peak / 2 ** 20))

    if args.json_out:
        result = {"threads": args.threads, "bf16": args.bf16, "openblas_coretype": coretype,
                  "torch_version": torch.__version__ if torch else None, "results": rows}
        temporary = args.json_out + ".tmp"
        with open(temporary, "w") as out:
            json.dump(result, out, indent=2)
            out.write("\n")
        os.replace(temporary, args.json_out)


if __name__ == "__main__":
    main()
