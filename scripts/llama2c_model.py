"""A PyTorch model that loads llama2.c checkpoints (karpathy/llama2.c, the
legacy "version 0" .bin format that run.c reads), so that
scripts/dump_activations.py can capture the RMSNorm activations of a real,
trained LLaMA-architecture model such as stories260K.

The format: a header of 7 little-endian int32 (dim, hidden_dim, n_layers,
n_heads, n_kv_heads, vocab_size, seq_len; vocab_size negative when the
classifier is not shared with the token embedding), then float32 arrays in
this order: token embedding [vocab, dim]; per layer, each group for all
layers in turn: attention RMSNorm weight [dim], wq [n_heads*hs, dim],
wk [n_kv_heads*hs, dim], wv [n_kv_heads*hs, dim], wo [dim, n_heads*hs],
FFN RMSNorm weight [dim], w1 [hidden, dim], w2 [dim, hidden], w3 [hidden, dim];
the final RMSNorm weight [dim]; the RoPE cos and sin tables [seq_len, hs/2]
each (recomputed here, not read); the classifier [vocab, dim] if not shared.
hs = dim / n_heads. The file size must match exactly.

The modules mirror llama2.c's model.py: RMSNorm (eps 1e-5, computed in
float32), rotary embeddings on interleaved pairs, grouped-query attention,
SwiGLU feed-forward. The forward returns the logits of every position.

    load(checkpoint)              the model (the name --checkpoint passes it by)
    example_inputs(model, ...)    token ids sampled from the model itself,
                                  starting from BOS (id 1): in-distribution
                                  text without needing the tokenizer
    next_token_loss(logits, tokens)  cross-entropy of the next token (--loss)

    python3 scripts/dump_activations.py --model scripts/llama2c_model.py:load \\
        --checkpoint data/models/stories260K.bin -o out/stories260K.safetensors
"""
import math
import os
import struct
import sys

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

BOS = 1


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.type_as(x) * self.weight


def rope_tables(head_dim: int, seq_len: int, theta: float = 10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    t = torch.outer(torch.arange(seq_len).float(), freqs)
    return torch.cos(t), torch.sin(t)


def rotate(x, cos, sin):
    """x [B, T, H, hs]: rotates the pairs (x[2i], x[2i+1]) by the angles."""
    xr, xi = x.float().reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
    cos = cos[None, :, None, :]
    sin = sin[None, :, None, :]
    out = torch.stack([xr * cos - xi * sin, xr * sin + xi * cos], dim=-1).flatten(3)
    return out.type_as(x)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        rep = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(rep, dim=2)
        v = v.repeat_interleave(rep, dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        att = (q @ k.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).float().softmax(-1).type_as(q)
        y = (att @ v).transpose(1, 2).reshape(B, T, -1)
        return self.wo(y)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, dim, hidden_dim, n_heads, n_kv_heads, eps):
        super().__init__()
        self.attention_norm = RMSNorm(dim, eps)
        self.attention = Attention(dim, n_heads, n_kv_heads)
        self.ffn_norm = RMSNorm(dim, eps)
        self.feed_forward = FeedForward(dim, hidden_dim)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama2c(nn.Module):
    """Token ids [B, T] (T <= seq_len) -> logits [B, T, vocab]."""

    def __init__(self, dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len,
                 norm_eps=1e-5, shared_classifier=True):
        super().__init__()
        if dim % n_heads or n_heads % n_kv_heads or (dim // n_heads) % 2:
            raise ValueError(f"inconsistent shape: dim {dim}, n_heads {n_heads}, "
                             f"n_kv_heads {n_kv_heads}")
        self.params = dict(dim=dim, hidden_dim=hidden_dim, n_layers=n_layers, n_heads=n_heads,
                           n_kv_heads=n_kv_heads, vocab_size=vocab_size, seq_len=seq_len,
                           norm_eps=norm_eps, shared_classifier=shared_classifier)
        self.vocab_size = vocab_size
        self.seq_len = seq_len
        self.tok_embeddings = nn.Embedding(vocab_size, dim)
        self.layers = nn.ModuleList(
            [TransformerBlock(dim, hidden_dim, n_heads, n_kv_heads, norm_eps) for _ in range(n_layers)])
        self.norm = RMSNorm(dim, norm_eps)
        self.output = nn.Linear(dim, vocab_size, bias=False)
        if shared_classifier:
            self.output.weight = self.tok_embeddings.weight
        cos, sin = rope_tables(dim // n_heads, seq_len)
        self.register_buffer("freqs_cos", cos, persistent=False)
        self.register_buffer("freqs_sin", sin, persistent=False)

    def forward(self, tokens):
        T = tokens.shape[1]
        if T > self.seq_len:
            raise ValueError(f"{T} tokens, more than the model's seq_len {self.seq_len}")
        h = self.tok_embeddings(tokens)
        cos, sin = self.freqs_cos[:T], self.freqs_sin[:T]
        for layer in self.layers:
            h = layer(h, cos, sin)
        return self.output(self.norm(h))

    @torch.no_grad()
    def sample(self, batch=4, length=64, temperature=1.0, seed=0):
        """[batch, length] token ids: BOS, then sampled tokens (greedy at
        temperature 0). Recomputes the whole prefix each step (no cache):
        fine for small models."""
        g = torch.Generator().manual_seed(seed)
        dev = self.freqs_cos.device
        idx = torch.full((batch, 1), BOS, dtype=torch.long, device=dev)
        for _ in range(min(length, self.seq_len) - 1):
            logits = self(idx)[:, -1, :].float()
            if temperature == 0:
                nxt = logits.argmax(-1, keepdim=True)
            else:
                p = (logits / temperature).softmax(-1).cpu()
                nxt = torch.multinomial(p, 1, generator=g).to(dev)
            idx = torch.cat([idx, nxt], dim=1)
        return idx


def read_llama2c(path):
    """(header dict, state_dict) of a llama2.c version-0 .bin file."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(28)
        if len(head) < 28:
            raise ValueError(f"{path}: {size} bytes, too short for a llama2.c header")
        dim, hidden, n_layers, n_heads, n_kv, vocab, seq_len = struct.unpack("<7i", head)
        if struct.unpack("<I", head[:4])[0] == 0x616B3432:
            raise ValueError(f"{path}: a llama2.c version-1/2 file (magic ak42); only the legacy "
                             "version-0 format is read")
        shared = vocab > 0
        vocab = abs(vocab)
        if min(dim, hidden, n_layers, n_heads, n_kv, vocab, seq_len) <= 0 or \
                max(dim, hidden, n_layers, n_heads, n_kv, seq_len) > 1 << 20 or \
                dim % n_heads or n_heads % n_kv:
            raise ValueError(f"{path}: not a llama2.c checkpoint (header {dim}, {hidden}, "
                             f"{n_layers}, {n_heads}, {n_kv}, {vocab}, {seq_len})")
        hs = dim // n_heads
        L = n_layers
        order = [("tok_embeddings.weight", None, (vocab, dim)),
                 ("attention_norm.weight", "L", (dim,)),
                 ("attention.wq.weight", "L", (n_heads * hs, dim)),
                 ("attention.wk.weight", "L", (n_kv * hs, dim)),
                 ("attention.wv.weight", "L", (n_kv * hs, dim)),
                 ("attention.wo.weight", "L", (dim, n_heads * hs)),
                 ("ffn_norm.weight", "L", (dim,)),
                 ("feed_forward.w1.weight", "L", (hidden, dim)),
                 ("feed_forward.w2.weight", "L", (dim, hidden)),
                 ("feed_forward.w3.weight", "L", (hidden, dim)),
                 ("norm.weight", None, (dim,)),
                 ("_freqs_cos", None, (seq_len, hs // 2)),
                 ("_freqs_sin", None, (seq_len, hs // 2))]
        if not shared:
            order.append(("output.weight", None, (vocab, dim)))
        want = 28 + 4 * sum((L if per == "L" else 1) * int(np.prod(shape)) for _, per, shape in order)
        if size != want:
            raise ValueError(f"{path}: {size} bytes, expected {want} for a llama2.c checkpoint "
                             f"with header dim {dim}, hidden {hidden}, layers {n_layers}, heads "
                             f"{n_heads}/{n_kv}, vocab {vocab}, seq_len {seq_len}")
        sd = {}
        for name, per, shape in order:
            n = int(np.prod(shape))
            for i in range(L if per == "L" else 1):
                a = np.frombuffer(f.read(4 * n), dtype="<f4").reshape(shape)
                key = f"layers.{i}.{name}" if per == "L" else name
                if not key.startswith("_"):
                    sd[key] = torch.from_numpy(a.astype(np.float32))
    header = dict(dim=dim, hidden_dim=hidden, n_layers=n_layers, n_heads=n_heads,
                  n_kv_heads=n_kv, vocab_size=vocab, seq_len=seq_len, shared_classifier=shared)
    return header, sd


def load(checkpoint, norm_eps=1e-5):
    """The Llama2c model of a llama2.c .bin checkpoint, in eval mode."""
    header, sd = read_llama2c(checkpoint)
    model = Llama2c(norm_eps=norm_eps, **header)
    if header["shared_classifier"]:
        sd["output.weight"] = sd["tok_embeddings.weight"]
    model.load_state_dict(sd, strict=True)
    return model.eval()


def example_inputs(model, batch=8, length=64, temperature=1.0, seed=0):
    """Token ids [batch, length] the model writes itself from BOS."""
    return model.sample(batch=batch, length=length, temperature=temperature, seed=seed)


def next_token_loss(logits, tokens):
    """Mean cross-entropy of each next token: the training loss."""
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                           tokens[:, 1:].reshape(-1))


next_token_loss.unit = "nats per token"

# ------------------------------------------------------------------ health
#
# Whether a checkpoint is the model its trainer describes can be told without
# its tokenizer. llama2.c's small TinyStories models use a sentencepiece
# vocabulary with byte fallback: ids 3-258 are the raw bytes <0x00>..<0xFF>,
# which TinyStories text (plain English) almost never needs, so a trained
# model almost never predicts them; and karpathy's tok512 encodes
# "Once upon a time", the usual first words of a story, as 403 407 261 378
# (BOS is 1). data/models/README.md gives what this reports on the shipped
# stories260K.bin and what it means.

BYTE_IDS = range(3, 259)
ONCE_UPON_A_TIME = (403, 407, 261, 378)  # tok512 only


def spectral_ratio(w, shuffles=5, seed=0):
    """Largest singular value of w over that of its entries shuffled (mean
    over seeded shuffles): about 1 for a matrix of independent entries,
    above 1 for the low-rank structure training leaves (1.2-2.8 in the
    shipped vit4mnist's Linear layers)."""
    w = np.asarray(w, dtype=np.float64)
    rng = np.random.default_rng(seed)
    top = lambda m: np.linalg.svd(m, compute_uv=False)[0]  # noqa: E731
    ref = np.mean([top(rng.permutation(w.reshape(-1)).reshape(w.shape)) for _ in range(shuffles)])
    return float(top(w) / ref)


@torch.no_grad()
def health(model, batch=8, length=256, seed=0):
    """A dict of numbers that tell a working llama2.c TinyStories model from
    a damaged one (see the note above):

      greedy        the first 16 ids of greedy text from BOS
      p_once        P(403 | BOS): tok512's "Once", the usual first token
      byte_share    share of byte-fallback ids (3-258) in `batch` texts of
                    `length` tokens the model samples itself at temperature 1
      self_loss     its next-token loss on those texts, nats/token (the
                    entropy of its own predictions, estimated)
      byte_mass     mean probability it gives the byte ids there
      spectral      per weight kind, the median over layers of spectral_ratio
    """
    greedy = model.sample(batch=1, length=17, temperature=0)[0, 1:].tolist()
    p_once = model(torch.tensor([[BOS]]))[0, -1].float().softmax(-1)[ONCE_UPON_A_TIME[0]]
    toks = model.sample(batch=batch, length=length, temperature=1.0, seed=seed)
    logits = model(toks).float()
    nxt = toks[:, 1:]
    byte = (nxt >= BYTE_IDS.start) & (nxt < BYTE_IDS.stop)
    probs = logits[:, :-1].softmax(-1)
    spectral = {}
    for kind in ("attention.wq", "attention.wk", "attention.wv", "attention.wo",
                 "feed_forward.w1", "feed_forward.w2", "feed_forward.w3"):
        r = [spectral_ratio(getattr(getattr(layer, kind.split(".")[0]), kind.split(".")[1])
                            .weight.detach().cpu().numpy()) for layer in model.layers]
        spectral[kind.split(".")[1]] = float(np.median(r))
    return {"greedy": greedy, "p_once": float(p_once),
            "byte_share": float(byte.float().mean()),
            "self_loss": float(next_token_loss(logits, toks)),
            "byte_mass": float(probs[..., BYTE_IDS.start:BYTE_IDS.stop].sum(-1).mean()),
            "spectral": spectral}


def main(argv=None):
    import argparse
    p = argparse.ArgumentParser(
        prog="llama2c_model.py",
        description="Loads a llama2.c checkpoint and prints its health numbers (see health()).")
    p.add_argument("checkpoint")
    p.add_argument("--health", action="store_true", help="(the default and only action)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--length", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    try:
        model = load(a.checkpoint)
    except (OSError, ValueError) as e:
        print(f"llama2c_model.py: {e}", file=sys.stderr)
        return 2
    h = health(model, a.batch, a.length, a.seed)
    print(f"{a.checkpoint}: {sum(p.numel() for p in model.parameters())}"
          f" parameters, {model.params}")
    print(f"greedy ids from BOS: {' '.join(map(str, h['greedy']))}"
          f" (tok512's 'Once upon a time' is {' '.join(map(str, ONCE_UPON_A_TIME))})")
    print(f"P(403 'Once' | BOS) = {h['p_once']:.3g}")
    print(f"{a.batch} x {a.length} tokens sampled at temperature 1 (seed {a.seed}): "
          f"byte-fallback ids 3-258 are {100 * h['byte_share']:.1f}% of them, "
          f"mean probability on those ids {h['byte_mass']:.3f}, "
          f"self loss {h['self_loss']:.3f} nats/token")
    print("spectral ratio (median over layers; ~1 = no structure): "
          + ", ".join(f"{k} {v:.2f}" for k, v in h["spectral"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
