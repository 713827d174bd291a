"""Tiny self-contained transformers for trying out and testing
scripts/dump_activations.py without downloading anything.

    tiny_layernorm(**kw)   pre-norm decoder with nn.LayerNorm (ln1, ln2 per
                           block and a final ln_f)
    tiny_rmsnorm(**kw)     the same with a LLaMA-style RMSNorm class
    example_inputs(model)  seeded random token ids for either model
    digit_images(n)        28x28 digit images rendered from a font, normalised
                           like MNIST: inputs for data/models/vit4mnist.ptl
    digit_labels(n)        their classes (k % 10): --labels of the swap test

The models are untrained but seeded (the same weights on every run for the
same arguments); a few embedding channels are scaled up so that the norms see
outlier channels, as trained transformers do. d = 48, 3 blocks, 4 heads.

    python3 scripts/dump_activations.py --model scripts/example_model.py:tiny_rmsnorm \\
        -o out/tiny_rms.safetensors
"""
import math

import torch
from torch import nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    """LLaMA's RMSNorm: x / sqrt(mean(x^2) + eps) in float32, then * weight."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.type_as(x) * self.weight


class Attention(nn.Module):
    def __init__(self, d: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d // n_heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).split(D, dim=-1)
        q = q.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d: int, n_heads: int, rms: bool):
        super().__init__()
        self.ln1 = RMSNorm(d) if rms else nn.LayerNorm(d)
        self.attn = Attention(d, n_heads)
        self.ln2 = RMSNorm(d) if rms else nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyTransformer(nn.Module):
    """Token ids [B, T] -> logits [B, T, vocab]."""

    def __init__(self, vocab: int = 256, d: int = 48, n_layers: int = 3, n_heads: int = 4,
                 max_len: int = 64, norm: str = "layernorm", seed: int = 0,
                 outlier_channels: int = 3, outlier_scale: float = 6.0):
        super().__init__()
        if norm not in ("layernorm", "rmsnorm"):
            raise ValueError(f"norm: expected layernorm or rmsnorm, got {norm!r}")
        rms = norm == "rmsnorm"
        self.vocab = vocab
        self.max_len = max_len
        g = torch.Generator().manual_seed(seed)
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(max_len, d))
        self.blocks = nn.ModuleList([Block(d, n_heads, rms) for _ in range(n_layers)])
        self.ln_f = RMSNorm(d) if rms else nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("ln1.weight") or name.endswith("ln2.weight") or name.startswith("ln_f.w"):
                    p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g))
                elif name.endswith("bias") and (".ln" in name or name.startswith("ln_f")):
                    p.copy_(0.1 * torch.randn(p.shape, generator=g))
                elif p.dim() >= 2:
                    p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
                else:
                    p.copy_(0.02 * torch.randn(p.shape, generator=g))
            # a few channels much larger than the rest, like trained models'
            # massive activations: the norms then squash them
            ch = torch.randperm(d, generator=g)[:outlier_channels]
            self.tok.weight[:, ch] *= outlier_scale
            self.pos.mul_(0.5)

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.tok(tokens) + self.pos[:T]
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))

    def example_inputs(self, batch: int = 32, seq: int = 32, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        return torch.randint(0, self.vocab, (batch, min(seq, self.max_len)), generator=g)


def tiny_layernorm(**kw):
    return TinyTransformer(norm="layernorm", **kw)


def tiny_rmsnorm(**kw):
    return TinyTransformer(norm="rmsnorm", **kw)


def example_inputs(model, batch: int = 32, seq: int = 32, seed: int = 0):
    return model.example_inputs(batch=batch, seq=seq, seed=seed)


def digit_images(n: int = 64, seed: int = 0):
    """[n, 1, 28, 28] float32: the digits 0-9 in turn, rendered from the
    DejaVu fonts with a random rotation, fitted into a 20x20 box and centred
    by mass in 28x28 like MNIST, normalised with MNIST's mean and std
    (0.1307, 0.3081). vit4mnist classifies ~93% of them correctly. Without
    Pillow or the fonts: seeded noise images of the same shape."""
    import numpy as np
    rng = np.random.default_rng(seed)
    try:
        from PIL import Image, ImageDraw, ImageFont
        fonts = [ImageFont.truetype(f"/usr/share/fonts/truetype/dejavu/{f}.ttf", 80)
                 for f in ("DejaVuSans-Bold", "DejaVuSans", "DejaVuSerif-Bold")]
    except (ImportError, OSError):
        img = rng.random((n, 1, 28, 28), dtype=np.float32)
        return torch.from_numpy((img - 0.1307) / 0.3081)
    out = np.zeros((n, 1, 28, 28), np.float32)
    for k in range(n):
        im = Image.new("L", (112, 112), 0)
        ImageDraw.Draw(im).text((56, 56), str(k % 10), fill=255, font=fonts[(k // 10) % 3],
                                anchor="mm")
        a = np.asarray(im.rotate(rng.uniform(-12, 12), resample=Image.BILINEAR))
        ys, xs = np.nonzero(a)
        a = a[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
        h, w = a.shape
        s = 20 / max(h, w)
        h, w = max(1, round(h * s)), max(1, round(w * s))
        a = np.asarray(Image.fromarray(a).resize((w, h), Image.LANCZOS), np.float32) / 255
        yy, xx = np.mgrid[0:h, 0:w]
        m = a.sum()
        oy = min(max(int(round(14 - (yy * a).sum() / m)), 0), 28 - h)
        ox = min(max(int(round(14 - (xx * a).sum() / m)), 0), 28 - w)
        out[k, 0, oy:oy + h, ox:ox + w] = a
    return torch.from_numpy((out - 0.1307) / 0.3081)


def digit_labels(n: int = 64, seed: int = 0):
    """[n] int64: the digit digit_images(n, seed) draws in image k, k % 10
    (seed changes the rotations only; it is accepted so that the swap test
    can pass the same --inputs-args to both)."""
    return torch.arange(n) % 10
