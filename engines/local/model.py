"""The network: a LLaMA-style transformer in the LLaDA-8B-Instruct layout.

Weight names and config.json fields follow LLaDA (model.transformer.wte, blocks.{i}.q_proj ...
ff_out, ln_f), so a real LLaDA-8B-Instruct folder loads into this module unchanged; a Dream folder
(Qwen2 layout: q/k/v biases, `qkv_bias`) loads through the renaming in engines/local/checkpoint.py. One flag,
`causal`, turns the same module into the autoregressive baseline. `logits_shift` (our own field,
Dream-style) means position i-1 predicts token i, which is how a diffusion model adapted from
an autoregressive one keeps the AR head's alignment.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class ModelConfig:
    d_model: int = 256
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: int = 4
    mlp_hidden_size: int = 768
    vocab_size: int = 1024
    embedding_size: int = 1024
    max_sequence_length: int = 256
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    weight_tying: bool = False
    mask_token_id: int = 1
    eos_token_id: int = 2
    pad_token_id: int = 2
    # LLaDA's fixed fields, kept so our config.json reads like theirs
    block_type: str = "llama"
    activation_type: str = "silu"
    layer_norm_type: str = "rms"
    include_bias: bool = False
    rope: bool = True
    model_type: str = "llada"
    architectures: list[str] = field(default_factory=lambda: ["LLaDAModelLM"])
    # voicelab fields (absent in LLaDA's config: defaults describe LLaDA)
    causal: bool = False
    logits_shift: bool = False
    qkv_bias: bool = False  # q/k/v projections with biases (Dream, Qwen2 layout); LLaDA has none

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def to_dict(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()  # normalise in fp32 even under bf16, as LLaDA does
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (xf.to(x.dtype)) * self.weight


def rope_tables(head_dim: int, positions: torch.Tensor, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=positions.device).float() / head_dim))
    ang = positions.float()[..., None] * inv  # (..., T, head_dim/2)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # rotate-half form (LLaMA / OLMo); x: (B, H, T, D), cos/sin: (B, 1, T, D)
    x1, x2 = x.chunk(2, dim=-1)
    rot = torch.cat([-x2, x1], dim=-1)
    return (x.float() * cos + rot.float() * sin).to(x.dtype)


class KVCache:
    """Keys and values of every layer for one sequence layout; steps overwrite the slices they recompute."""

    def __init__(self, n_layers: int) -> None:
        self.k: list[torch.Tensor | None] = [None] * n_layers
        self.v: list[torch.Tensor | None] = [None] * n_layers

    def write(self, layer: int, start: int, k: torch.Tensor, v: torch.Tensor, total: int) -> None:
        if self.k[layer] is None or self.k[layer].shape[2] < total:
            B, H, _, D = k.shape
            newk = k.new_zeros(B, H, total, D)
            newv = v.new_zeros(B, H, total, D)
            if self.k[layer] is not None:
                n = self.k[layer].shape[2]
                newk[:, :, :n] = self.k[layer]
                newv[:, :, :n] = self.v[layer]
            self.k[layer], self.v[layer] = newk, newv
        self.k[layer][:, :, start:start + k.shape[2]] = k
        self.v[layer][:, :, start:start + v.shape[2]] = v


class Block(nn.Module):
    def __init__(self, c: ModelConfig) -> None:
        super().__init__()
        self.c = c
        hd = c.d_model // c.n_heads
        self.attn_norm = RMSNorm(c.d_model, c.rms_norm_eps)
        self.ff_norm = RMSNorm(c.d_model, c.rms_norm_eps)
        self.q_proj = nn.Linear(c.d_model, c.n_heads * hd, bias=c.qkv_bias)
        self.k_proj = nn.Linear(c.d_model, c.n_kv_heads * hd, bias=c.qkv_bias)
        self.v_proj = nn.Linear(c.d_model, c.n_kv_heads * hd, bias=c.qkv_bias)
        self.attn_out = nn.Linear(c.d_model, c.d_model, bias=False)
        self.ff_proj = nn.Linear(c.d_model, c.mlp_hidden_size, bias=False)  # gate branch (SiLU)
        self.up_proj = nn.Linear(c.d_model, c.mlp_hidden_size, bias=False)
        self.ff_out = nn.Linear(c.mlp_hidden_size, c.d_model, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None,
                cache: KVCache | None, layer: int, start: int, kv_len: int) -> torch.Tensor:
        B, T, _ = x.shape
        c = self.c
        hd = c.d_model // c.n_heads
        h = self.attn_norm(x)
        q = self.q_proj(h).view(B, T, c.n_heads, hd).transpose(1, 2)
        k = self.k_proj(h).view(B, T, c.n_kv_heads, hd).transpose(1, 2)
        v = self.v_proj(h).view(B, T, c.n_kv_heads, hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:
            cache.write(layer, start, k, v, max(kv_len, start + T))
            k, v = cache.k[layer][:, :, :kv_len], cache.v[layer][:, :, :kv_len]
        if c.n_kv_heads != c.n_heads:
            rep = c.n_heads // c.n_kv_heads
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.attn_out(a.transpose(1, 2).reshape(B, T, c.d_model))
        h = self.ff_norm(x)
        return x + self.ff_out(F.silu(self.ff_proj(h)) * self.up_proj(h))


class Transformer(nn.Module):
    def __init__(self, c: ModelConfig) -> None:
        super().__init__()
        self.wte = nn.Embedding(c.embedding_size, c.d_model)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.n_layers))
        self.ln_f = RMSNorm(c.d_model, c.rms_norm_eps)
        if not c.weight_tying:
            self.ff_out = nn.Linear(c.d_model, c.embedding_size, bias=False)


class LLaDAModel(nn.Module):
    """`model.transformer.*` as in LLaDA's checkpoints."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.model = nn.Module()
        self.model.transformer = Transformer(config)

    @property
    def t(self) -> Transformer:
        return self.model.transformer

    def init_weights(self, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        for name, p in self.named_parameters():
            if name.endswith("norm.weight") or name.endswith("ln_f.weight"):
                nn.init.ones_(p)
            else:
                # residual projections start small so deep stacks begin near identity (GPT-2 init)
                resid = name.endswith("attn_out.weight") or (".blocks." in name and name.endswith("ff_out.weight"))
                std = 0.02 / math.sqrt(2 * self.config.n_layers) if resid else 0.02
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=g) * std)

    def forward(self, ids: torch.Tensor, *, start: int = 0, cache: KVCache | None = None, kv_len: int | None = None,
                pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits for positions [start, start+T) of the sequence.

        ids: (B, T) tokens at those positions. With a cache, their keys/values are written at
        [start, start+T) and attention reads cache[:kv_len] (default start+T). pad_mask: (B, T)
        True for real tokens, only without a cache (training and batched evaluation).
        """
        c = self.config
        B, T = ids.shape
        kv_len = start + T if kv_len is None else kv_len
        if pad_mask is not None:
            # left padding: real tokens get positions 0.. so RoPE sees the same layout as unpadded
            pos = (pad_mask.long().cumsum(-1) - 1).clamp(min=0)
        else:
            pos = torch.arange(start, start + T, device=ids.device).expand(B, T)
        cos, sin = rope_tables(c.d_model // c.n_heads, pos, c.rope_theta)
        cos, sin = cos[:, None], sin[:, None]
        mask = self._mask(B, T, start, kv_len, pad_mask, ids.device)
        x = self.t.wte(ids)
        for i, blk in enumerate(self.t.blocks):
            x = blk(x, cos, sin, mask, cache, i, start, kv_len)
        x = self.t.ln_f(x)
        head = self.t.wte.weight if c.weight_tying else self.t.ff_out.weight
        return F.linear(x, head)[..., : c.vocab_size]

    def _mask(self, B: int, T: int, start: int, kv_len: int, pad_mask: torch.Tensor | None,
              device: torch.device) -> torch.Tensor | None:
        m: torch.Tensor | None = None
        if self.config.causal and pad_mask is None and T == 1 and kv_len == start + 1:
            return None  # one new token against its own past: nothing to hide (the AR decode step)
        if self.config.causal:
            qpos = torch.arange(start, start + T, device=device)[:, None]
            kpos = torch.arange(kv_len, device=device)[None, :]
            m = (kpos <= qpos)[None, None]
        if pad_mask is not None:
            pm = pad_mask[:, None, None, :]
            m = pm if m is None else (m & pm)
            # fully masked rows (pad queries in causal mode) would give NaN: let them see themselves
            eye = torch.eye(T, dtype=torch.bool, device=device)[None, None]
            m = m | eye
        return m

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
