"""fake_transformers.py - a stand-in for Hugging Face's `transformers`,
exactly as much of it as README.md's hf.py uses, so that tests/cli/
test_readme.sh runs the README's Hugging Face commands as typed where
transformers is not installed (Debian has no package of it). The test copies
this file to <folder>/transformers/__init__.py and puts <folder> on
PYTHONPATH for those commands only.

    AutoModelForCausalLM.from_pretrained(name, torch_dtype="float32")
        a tiny LLaMA-shaped causal LM, seeded (the weights do not depend on
        the name): model.embed_tokens, model.layers.{0,1} (each with
        input_layernorm and post_attention_layernorm), model.norm, lm_head;
        model(input_ids) returns an object with .logits [B, T, vocab].
        The norms are LlamaRMSNorm as transformers writes it: .weight,
        .variance_epsilon (no .eps), the mean of squares in float32.
    AutoTokenizer.from_pretrained(name)(text, return_tensors="pt")
        a BatchEncoding (a UserDict, as transformers' is: not a dict
        subclass) with "input_ids", a LongTensor [1, T].

The tokenizer splits the text as GPT-2's byte-level BPE pre-tokenizer
does (SmolLM2's tokenizer also splits digits one by one) and gives each
piece one id. A BPE tokenizer encodes every piece into at least one token,
so T here is a lower bound on what the real tokenizer gives for the same
text: a test that finds enough whole sequences of tokens here finds at
least as many with the real model.

Anything else the snippet might start using (another keyword argument,
another class) fails here rather than being silently accepted.
"""
import collections
import math
import re
import zlib

import torch
from torch import nn

HIDDEN = 64
HEADS = 4
FFN = 172
LAYERS = 2
VOCAB = 512
RMS_EPS = 1e-5  # SmolLM2-135M's rms_norm_eps

# GPT-2's pre-tokenizer pattern, its \p{L} (letters), \p{N} (digits) and
# [^\s\p{L}\p{N}] (the rest, _ included) as Python's re spells them
PIECES = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+")


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.k_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.v_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.o_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)

    def forward(self, h):
        b, t, _ = h.shape
        hd = HIDDEN // HEADS

        def heads(x):
            return x.view(b, t, HEADS, hd).transpose(1, 2)

        q, k, v = heads(self.q_proj(h)), heads(self.k_proj(h)), heads(self.v_proj(h))
        s = q @ k.transpose(-1, -2) / math.sqrt(hd)
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        a = torch.softmax(s.masked_fill(causal, float("-inf")), dim=-1) @ v
        return self.o_proj(a.transpose(1, 2).reshape(b, t, HIDDEN))


class LlamaMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(HIDDEN, FFN, bias=False)
        self.up_proj = nn.Linear(HIDDEN, FFN, bias=False)
        self.down_proj = nn.Linear(FFN, HIDDEN, bias=False)

    def forward(self, h):
        return self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))


class LlamaDecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = LlamaAttention()
        self.mlp = LlamaMLP()
        self.input_layernorm = LlamaRMSNorm(HIDDEN, eps=RMS_EPS)
        self.post_attention_layernorm = LlamaRMSNorm(HIDDEN, eps=RMS_EPS)

    def forward(self, h):
        h = h + self.self_attn(self.input_layernorm(h))
        return h + self.mlp(self.post_attention_layernorm(h))


class LlamaModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList(LlamaDecoderLayer() for _ in range(LAYERS))
        self.norm = LlamaRMSNorm(HIDDEN, eps=RMS_EPS)

    def forward(self, input_ids):
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(h)
        return self.norm(h)


class CausalLMOutputWithPast:
    def __init__(self, logits):
        self.logits = logits


class LlamaForCausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = LlamaModel()
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, input_ids):
        return CausalLMOutputWithPast(self.lm_head(self.model(input_ids)))


class AutoModelForCausalLM:
    @staticmethod
    def from_pretrained(name, torch_dtype=None):
        if not isinstance(name, str):
            raise TypeError(f"from_pretrained: name {name!r}, expected a str")
        with torch.random.fork_rng():
            torch.manual_seed(21)
            m = LlamaForCausalLM()
            with torch.no_grad():
                # trained norms have weights away from 1: the dump's check
                # of output = norm(input) * weight then sees them
                for mod in m.modules():
                    if isinstance(mod, LlamaRMSNorm):
                        mod.weight.mul_(1 + 0.2 * torch.randn(HIDDEN))
        dtype = getattr(torch, torch_dtype) if isinstance(torch_dtype, str) else torch_dtype
        return m.to(dtype) if dtype is not None else m


class BatchEncoding(collections.UserDict):
    pass


class _Tokenizer:
    def __call__(self, text, return_tensors=None):
        if return_tensors != "pt":
            raise TypeError(f"tokenizer: return_tensors={return_tensors!r}, this fake has only 'pt'")
        pieces = PIECES.findall(text)
        assert "".join(pieces) == text  # the pieces cover the text, as GPT-2's do
        ids = [zlib.crc32(p.encode()) % VOCAB for p in pieces]
        return BatchEncoding({"input_ids": torch.tensor([ids], dtype=torch.long)})


class AutoTokenizer:
    @staticmethod
    def from_pretrained(name):
        if not isinstance(name, str):
            raise TypeError(f"from_pretrained: name {name!r}, expected a str")
        return _Tokenizer()
