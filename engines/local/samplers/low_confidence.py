"""LLaDA's low-confidence remasking: semi-autoregressive blocks, k tokens committed per step.

Each step runs one full bidirectional forward (no cache, as in LLaDA's generate.py) and commits
the k most confident masked positions of the current block. Committed tokens never change, so
the gate's `prefix` policy is safe on it.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from engines.local.model import LLaDAModel
from engines.local.samplers.base import Canvas, Control, SamplerConfig, Special, Step, blocks


def transfer_counts(n_masked: int, steps: int) -> list[int]:
    """Tokens to commit per step: an even split, the first `remainder` steps one more (LLaDA)."""
    base, rem = divmod(n_masked, steps)
    return [base + (1 if i < rem else 0) for i in range(steps)]


def sample(model: LLaDAModel, prompt: list[int], special: Special, cfg: SamplerConfig,
           ctl: Control) -> Iterator[Step]:
    cv = Canvas(model, prompt, special, cfg)
    done_len = 0
    for s, e in blocks(cfg):
        for k in transfer_counts(int(cv.masked()[s:e].sum()), cfg.steps_per_block):
            if ctl.cancelled.is_set():
                return
            if k == 0:
                continue
            logits = cv.logits(0, cfg.canvas, refresh=True)
            guess, conf = cv.choose(logits)
            masked = cv.masked()
            score = torch.where(masked, conf, torch.full_like(conf, -1.0))
            score[:s] = -1.0
            score[e:] = -1.0  # blocks run strictly left to right
            idx = score.topk(k).indices
            cv.resp[idx] = guess[idx]
            if not cv.masked()[s:e].any():
                done_len = e
            finished = cv.answer_complete() and not cv.masked()[s:e].any()
            yield cv.step(conf, guess, done_len, ctl.pinned, finished)
            if finished:
                return
