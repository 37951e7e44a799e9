"""Fast-dLLM parallel decoding: commit every masked token whose confidence passes a threshold.

At least the single most confident token is committed per step, so a block always finishes.
The block cache (SamplerConfig.cache) runs one full forward at the start of each block and then
recomputes only the current block against cached keys and values: the approximation Fast-dLLM
makes, which changes which tokens are chosen but never changes a committed token.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from engines.local.model import LLaDAModel
from engines.local.samplers.base import Canvas, Control, SamplerConfig, Special, Step, blocks


def sample(model: LLaDAModel, prompt: list[int], special: Special, cfg: SamplerConfig,
           ctl: Control) -> Iterator[Step]:
    cv = Canvas(model, prompt, special, cfg)
    done_len = 0
    for s, e in blocks(cfg):
        first = True
        while cv.masked()[s:e].any():
            if ctl.cancelled.is_set():
                return
            logits = cv.logits(s, e, refresh=first)
            first = False
            guess, conf = cv.choose(logits)
            masked = cv.masked()[s:e]
            score = torch.where(masked, conf, torch.full_like(conf, -1.0))
            take = masked & (conf >= cfg.threshold)
            take[score.argmax()] = True
            block = cv.resp[s:e]
            block[take] = guess[take]
            if not cv.masked()[s:e].any():
                done_len = e
            finished = cv.answer_complete() and not cv.masked()[s:e].any()
            full_conf = torch.zeros(cfg.canvas)
            full_conf[s:e] = conf
            full_guess = cv.resp.clone()
            full_guess[s:e] = guess
            yield cv.step(full_conf, full_guess, done_len, ctl.pinned, finished)
            if finished:
                return
