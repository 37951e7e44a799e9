"""The autoregressive baseline: greedy or temperature sampling with a KV cache, one token per step.

Its text is append-only, so it honours pin() trivially; it goes through the same gate as the
diffusion samplers.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from engines.local.model import KVCache, LLaDAModel
from engines.local.samplers.base import Control, SamplerConfig, Special, Step


@torch.no_grad()
def sample(model: LLaDAModel, prompt: list[int], special: Special, cfg: SamplerConfig,
           ctl: Control) -> Iterator[Step]:
    if not model.config.causal:
        raise ValueError("the autoregressive sampler needs a causal model (config.json causal: true)")
    dev = next(model.parameters()).device
    gen = torch.Generator(device=dev).manual_seed(cfg.seed)
    cache = KVCache(model.config.n_layers)
    logits = model(torch.tensor([prompt], device=dev), cache=cache, kv_len=len(prompt))[0, -1].float()
    tokens: list[int] = []
    confs: list[float] = []
    for i in range(cfg.canvas):
        if ctl.cancelled.is_set():
            return
        probs = torch.softmax(logits, -1)
        if i == 0 and cfg.first_token is not None:
            tok = cfg.first_token
        elif cfg.temperature > 0:
            tok = int(torch.multinomial(torch.softmax(logits / cfg.temperature, -1), 1, generator=gen))
        else:
            tok = int(probs.argmax())
        tokens.append(tok)
        confs.append(float(probs[tok]))
        done = tok in special.stop_ids or i == cfg.canvas - 1
        n = len(tokens)
        pad = cfg.canvas - n
        yield Step(tokens + [special.mask_id] * pad, [False] * n + [True] * pad, confs + [0.0] * pad,
                   tokens + [special.mask_id] * pad, 1, n, ctl.pinned, i + 1, done)
        if done:
            return
        pos = len(prompt) + i
        logits = model(torch.tensor([[tok]], device=dev), start=pos, cache=cache, kv_len=pos + 1)[0, -1].float()
