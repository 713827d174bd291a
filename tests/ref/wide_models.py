"""Models of realistic width, from plain torch modules, for testing
scripts/dump_activations.py at the size of real checkpoints (random, seeded
weights: the mechanics and the memory, not the statistics, are tested).

    llama_decoder(**kw)   LLaMA-style decoder: 12 blocks of width 768, 12
                          heads, SwiGLU MLP of 2048, two LlamaRMSNorm per
                          block (named as in Hugging Face's transformers:
                          input_layernorm, post_attention_layernorm) and a
                          final norm; eps 1e-6 in variance_epsilon
    vit_encoder(**kw)     ViT-style encoder: patch embedding, 12 blocks of
                          width 768, 12 heads, GELU MLP of 3072, two
                          nn.LayerNorm per block (norm1, norm2) and a final
                          norm; eps 1e-6
    example_inputs(model) seeded token ids [batch, tokens] or images

Both take warm=True: run the model once on its example inputs right after
building it (no gradient) and record the process's peak resident memory
(VmHWM) then in os.environ["NC_WARM_HWM_KB"], the baseline of the dump
script's memory test (tests/ref/test_dump.py): what torch, the model and
one plain forward pass take before any capture.
"""
import math
import os

import torch
from torch import nn
import torch.nn.functional as F


def vm_hwm_kb():
    """Peak resident set size of this process so far, in kB (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


class LlamaRMSNorm(nn.Module):
    """As transformers' LlamaRMSNorm: in float32, then * weight."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        h = hidden_states.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * h.to(dtype)


def attention(q, k, v, causal):
    att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if causal:
        T = q.shape[-2]
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return att.softmax(-1) @ v


class LlamaAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)

    def forward(self, x):
        B, T, D = x.shape
        sh = lambda t: t.view(B, T, self.heads, D // self.heads).transpose(1, 2)  # noqa: E731
        y = attention(sh(self.q_proj(x)), sh(self.k_proj(x)), sh(self.v_proj(x)), True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, D))


class LlamaMLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, d, heads, hidden, eps):
        super().__init__()
        self.self_attn = LlamaAttention(d, heads)
        self.mlp = LlamaMLP(d, hidden)
        self.input_layernorm = LlamaRMSNorm(d, eps)
        self.post_attention_layernorm = LlamaRMSNorm(d, eps)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, vocab, d, blocks, heads, hidden, eps, batch, tokens):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaDecoderLayer(d, heads, hidden, eps) for _ in range(blocks))
        self.norm = LlamaRMSNorm(d, eps)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.vocab, self.batch, self.tokens = vocab, batch, tokens

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))

    def example_inputs(self):
        g = torch.Generator().manual_seed(1)
        return torch.randint(0, self.vocab, (self.batch, self.tokens), generator=g)


class VitBlock(nn.Module):
    def __init__(self, d, heads, mlp, eps):
        super().__init__()
        self.norm1 = nn.LayerNorm(d, eps=eps)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d, eps=eps)
        self.fc1 = nn.Linear(d, mlp)
        self.fc2 = nn.Linear(mlp, d)
        self.heads = heads

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(D, dim=-1)
        sh = lambda t: t.view(B, T, self.heads, D // self.heads).transpose(1, 2)  # noqa: E731
        x = x + self.proj(attention(sh(q), sh(k), sh(v), False).transpose(1, 2).reshape(B, T, D))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class VitEncoder(nn.Module):
    def __init__(self, image, patch, d, blocks, heads, mlp, eps, batch, classes):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, d, patch, stride=patch)
        n = (image // patch) ** 2
        self.cls_token = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
        self.blocks = nn.ModuleList(VitBlock(d, heads, mlp, eps) for _ in range(blocks))
        self.norm = nn.LayerNorm(d, eps=eps)
        self.head = nn.Linear(d, classes)
        self.image, self.batch = image, batch

    def forward(self, images):
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1) + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x)[:, 0])

    def example_inputs(self):
        g = torch.Generator().manual_seed(1)
        x = torch.randn(self.batch, 3, self.image, self.image, generator=g)
        return x.to(self.patch_embed.weight.dtype)


def _finish(model, seed, warm, dtype):
    with torch.no_grad():
        g = torch.Generator().manual_seed(seed + 1)
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
    model = model.to(getattr(torch, dtype)).eval()
    if warm:
        x = model.example_inputs()
        if x.is_floating_point():
            x = x.to(getattr(torch, dtype))
        with torch.no_grad():
            model(x)
        os.environ["NC_WARM_HWM_KB"] = str(vm_hwm_kb())
    return model


def llama_decoder(d=768, blocks=12, heads=12, hidden=2048, vocab=1024, eps=1e-6, batch=1,
                  tokens=256, seed=0, warm=False, dtype="float32"):
    torch.manual_seed(seed)
    return _finish(LlamaModel(vocab, d, blocks, heads, hidden, eps, batch, tokens), seed, warm,
                   dtype)


def vit_encoder(d=768, blocks=12, heads=12, mlp=3072, image=128, patch=8, eps=1e-6, batch=1,
                classes=10, seed=0, warm=False, dtype="float32"):
    torch.manual_seed(seed)
    return _finish(VitEncoder(image, patch, d, blocks, heads, mlp, eps, batch, classes), seed,
                   warm, dtype)


def example_inputs(model):
    return model.example_inputs()
