"""What every sampler shares: its settings, the consumer's controls (pin, cancel), the canvas
state it reports after each step, and the forward pass that maps model outputs to canvas slots.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import torch

from engines.local.model import KVCache, LLaDAModel


@dataclass
class SamplerConfig:
    canvas: int = 48  # generated positions (LLaDA gen_length)
    block_size: int = 8  # semi-autoregressive blocks, decoded left to right
    steps_per_block: int = 4  # low_confidence: block_size / steps tokens per step
    threshold: float = 0.9  # threshold: commit every masked token above it (Fast-dLLM)
    cache: str = "dual"  # threshold/revising: "none", "prefix" or "dual" block cache
    draft_threshold: float = 0.5  # revising: accept drafts above this (WINO-style, aggressive)
    remask_threshold: float = 0.6  # revising: re-mask a drafted token whose verified probability drops below
    edit_threshold: float = 0.9  # revising: overwrite a drafted token when another token is this probable
    max_post_edit_steps: int = 4  # revising: verification passes after a block has no masks left
    temperature: float = 0.0
    seed: int = 0
    # the least probability the model must give every token of an answer's leading tool call before the call is
    # shown (engines/local/samplers/tool_check.py); below it the engine says its reprompt instead; 0: off
    tool_floor: float = 0.0
    # the answer's first token, given (a vetoed tool call's answer starts from the model's best other first token)
    first_token: int | None = None
    # the least wall time per step (ms), so the tiny model can stand in for a real one's step time (an 8B
    # model on a GPU takes tens of ms per step); the engine waits, the sampler does not change; 0: off
    step_ms: float = 0.0


class Control:
    """Set by the consumer from any thread; read by the sampler between steps."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pinned = 0
        self.cancelled = threading.Event()
        self.tool_scores: list[float] = []  # the tool-call check's score of each span it checked (tool_check.py)

    def pin(self, n: int) -> None:
        with self._lock:
            self._pinned = max(self._pinned, n)  # pins only grow

    @property
    def pinned(self) -> int:
        with self._lock:
            return self._pinned


@dataclass
class Step:
    """The canvas after one step, as plain lists (the engine turns it into a Snapshot)."""

    tokens: list[int]
    masked: list[bool]
    confidence: list[float]
    guesses: list[int]
    block_size: int
    blocks_done: int
    pinned: int
    forwards: int
    done: bool
    revised: list[int] = field(default_factory=list)


class Sampler(Protocol):
    def __call__(self, model: LLaDAModel, prompt: list[int], special: Special, cfg: SamplerConfig,
                 ctl: Control) -> Iterator[Step]: ...


@dataclass(frozen=True)
class Special:
    mask_id: int
    stop_ids: frozenset[int]
    tool_open: frozenset[int] = frozenset()  # tokens that open a tool span ("[": engines/tool_span.py)
    tool_close: frozenset[int] = frozenset()  # tokens that hold its closing "]"
    # what the engine says instead of a tool call it vetoed, ending in an end token (empty: the model's own
    # answer without a tool call; engines/local/samplers/tool_check.py)
    reprompt: tuple[int, ...] = ()


class Canvas:
    """Prompt plus a fully masked response; runs forwards and keeps the block cache."""

    def __init__(self, model: LLaDAModel, prompt: list[int], special: Special, cfg: SamplerConfig) -> None:
        self.model, self.special, self.cfg = model, special, cfg
        dev = next(model.parameters()).device
        self.P = len(prompt)
        self.L = cfg.canvas
        self.x = torch.tensor(prompt + [special.mask_id] * self.L, device=dev)[None]
        if cfg.first_token is not None:
            self.x[0, self.P] = cfg.first_token
        self.shift = 1 if model.config.logits_shift else 0
        self.cache: KVCache | None = None
        self.forwards = 0
        self.gen = torch.Generator(device=dev).manual_seed(cfg.seed)

    @property
    def resp(self) -> torch.Tensor:
        return self.x[0, self.P:]

    def masked(self) -> torch.Tensor:
        return self.resp == self.special.mask_id

    @torch.no_grad()
    def logits(self, s: int, e: int, refresh: bool) -> torch.Tensor:
        """Logits predicting response positions [s, e).

        refresh (or cache "none"): one full forward, which also rebuilds the cache. Otherwise
        only positions [s-shift, e) are recomputed against the cached keys and values: "prefix"
        drops the stale masked suffix from attention, "dual" keeps it (Fast-dLLM DualCache).
        """
        P, sh, mode = self.P, self.shift, self.cfg.cache
        self.forwards += 1
        if mode == "none" or refresh or self.cache is None:
            self.cache = None if mode == "none" else KVCache(self.model.config.n_layers)
            out = self.model(self.x, cache=self.cache)[0]
            return out[P + s - sh:P + e - sh].float()
        a = P + s - sh
        kv_len = P + e if mode == "prefix" else P + self.L
        out = self.model(self.x[:, a:P + e], start=a, cache=self.cache, kv_len=kv_len)[0]
        return out[: e - s].float()

    def choose(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Best token and its probability per position (Gumbel-max when temperature > 0).

        The mask token is never a guess: "committing" it would leave the position masked for good, and a
        sampler with a fixed step budget would then end with the answer unfinished.
        """
        logits = logits.clone()
        logits[..., self.special.mask_id] = float("-inf")
        probs = torch.softmax(logits, dim=-1)
        if self.cfg.temperature > 0:
            g = -torch.log(-torch.log(torch.rand(logits.shape, generator=self.gen, device=logits.device)
                                      .clamp_min(1e-20)))
            guess = (logits / self.cfg.temperature + g).argmax(-1)
        else:
            guess = logits.argmax(-1)
        return guess, probs.gather(-1, guess[:, None])[:, 0]

    def answer_complete(self) -> bool:
        """The contiguous unmasked prefix already holds an end-of-answer token."""
        m = self.masked().tolist()
        for tok, mk in zip(self.resp.tolist(), m, strict=True):
            if mk:
                return False
            if tok in self.special.stop_ids:
                return True
        return True

    def step(self, conf: torch.Tensor, guesses: torch.Tensor, blocks_done: int, pinned: int, done: bool,
             revised: list[int] | None = None) -> Step:
        masked = self.masked()
        g = torch.where(masked, guesses, self.resp)
        return Step(self.resp.tolist(), masked.tolist(), conf.tolist(), g.tolist(), self.cfg.block_size,
                    blocks_done, pinned, self.forwards, done, revised or [])


def blocks(cfg: SamplerConfig) -> list[tuple[int, int]]:
    if cfg.canvas % cfg.block_size:
        raise ValueError(f"canvas {cfg.canvas} is not a multiple of block_size {cfg.block_size}")
    return [(s, s + cfg.block_size) for s in range(0, cfg.canvas, cfg.block_size)]
