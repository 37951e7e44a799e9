"""The engine API of docs/architecture.md: a chat in, an async stream of snapshots out.

    engine = open_engine("diffusion", sampler="threshold")
    gen = engine.generate([{"role": "user", "content": "what time do you open on friday"}])
    async for snap in gen:      # one Snapshot per denoising step
        gen.pin(snap.prefix_len)  # released text is frozen from here on
    gen.cancel()                # stops within one step

Each step runs in the engine's single worker thread, so the event loop (and the audio it moves)
is never blocked by a forward pass, and steps of one engine never overlap.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path

import torch

from engines.errors import CheckpointError, EngineSpecError
from engines.local import TINY_MODELS
from engines.local.checkpoint import Checkpoint, load
from engines.local.input_norm import engine_text
from engines.local.open_values import StandIns, Vocabulary, read_vocabulary, stand_ins
from engines.local.samplers import SAMPLERS, Control, SamplerConfig, Special, Step, checked
from engines.local.tokenizer import ChatTokenizer
from engines.protocol import Usage
from engines.snapshot import Snapshot
from engines.tool_span import CLOSE, OPEN


class Generation:
    """One answer being generated. Iterate it (sync or async); pin() and cancel() from anywhere."""

    def __init__(self, engine: Engine, prompt: list[int], cfg: SamplerConfig,
                 shown: dict[int, str] | None = None) -> None:
        self.engine = engine
        self.prompt = prompt
        self.shown = shown or {}  # token -> the caller's word it stands in for (engines/local/open_values.py)
        self.control = Control()
        special = engine.checking_special if cfg.tool_floor > 0 else engine.special
        self._steps: Iterator[Step] = checked(SAMPLERS[engine.sampler])(
            engine.ckpt.model, prompt, special, cfg, self.control)
        self.t_start_ns = time.monotonic_ns()
        self._step_ns = int(cfg.step_ms * 1e6)
        self._due_ns = self.t_start_ns + self._step_ns  # when the next step may be shown (step_ms pacing)
        self.snapshots = 0
        self.last: Snapshot | None = None

    def pin(self, n: int) -> None:
        """The first n generated tokens are final: no sampler changes them again."""
        self.control.pin(n)

    def cancel(self) -> None:
        self.control.cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self.control.cancelled.is_set()

    @property
    def usage(self) -> Usage:
        """The prompt's tokens and the answer's so far, by the tokenizer (what a hosted engine would bill)."""
        last = self.last
        return Usage(len(self.prompt), None if last is None else (last.eos if last.eos is not None
                                                                   else last.prefix_len))

    def _next(self) -> Snapshot | None:
        step = next(self._steps, None)
        if step is None:
            return None
        if self._step_ns:  # a real model's step time: wait out the rest of it (cancel ends the wait)
            wait = self._due_ns - time.monotonic_ns()
            if wait > 0 and self.control.cancelled.wait(wait / 1e9):
                return None
        snap = self.engine.snapshot(self.snapshots, step, self.shown)
        self._due_ns = snap.t_ns + self._step_ns  # the next step's compute starts once this one is shown
        self.snapshots += 1
        self.last = snap
        return snap

    def __iter__(self) -> Iterator[Snapshot]:
        with torch.inference_mode():
            while (snap := self._next()) is not None:
                yield snap

    async def __aiter__(self) -> AsyncIterator[Snapshot]:
        loop = asyncio.get_running_loop()
        while not self.cancelled:
            snap = await loop.run_in_executor(self.engine.executor, self._next_inference)
            if snap is None or self.cancelled:
                return
            yield snap
            if snap.done:
                return

    def _next_inference(self) -> Snapshot | None:
        with torch.inference_mode():
            return self._next()


class Engine:
    """A checkpoint plus a sampler. `name` says which model; `sampler` which decoding."""

    def __init__(self, ckpt: Checkpoint, sampler: str, config: SamplerConfig | None = None,
                 name: str | None = None) -> None:
        if sampler not in SAMPLERS:
            raise EngineSpecError(f"unknown sampler '{sampler}' (choose from {', '.join(SAMPLERS)})")
        self.ckpt = ckpt
        self.sampler = sampler
        vl = _voicelab_defaults(ckpt)
        self.config = config or SamplerConfig(**vl)
        limit = ckpt.model.config.max_sequence_length
        if self.config.canvas >= limit:
            raise CheckpointError(f"{ckpt.folder / 'config.json'}: max_sequence_length {limit} leaves no room for "
                                  f"a prompt beside the {self.config.canvas}-token answer canvas")
        self.name = name or ckpt.folder.name
        tok = ckpt.tokenizer
        mask_id = tok.mask_id if tok.mask_id is not None else ckpt.model.config.mask_token_id
        # config.json's eos (LLaDA pads answers with <|endoftext|>) ends an answer as well as the
        # tokenizer's own end tokens (<|eot_id|>)
        said = _voicelab_section(ckpt).get("reprompt", "")
        if not isinstance(said, str):
            raise CheckpointError(f"{ckpt.folder / 'config.json'}: voicelab.reprompt must be text, got {said!r}")
        if not 0.0 <= self.config.tool_floor <= 1.0:
            raise CheckpointError(f"{ckpt.folder / 'config.json'}: voicelab.tool_floor must lie in [0, 1], got "
                                  f"{self.config.tool_floor}")
        self.special = Special(mask_id, frozenset(tok.stop_ids | {ckpt.model.config.eos_token_id}),
                               reprompt=tuple(tok.encode(said)) + (ckpt.model.config.eos_token_id,) if said else ())
        # the corpus-trained tiny models (their config.json has a "voicelab" section) read callers' words in the
        # corpus's form: the input normaliser rewrites the form at this edge (docs/decisions/input-normaliser.md)
        self.normalize_input = _has_voicelab_section(ckpt)
        # ... and carry callers' own values past their closed vocabulary as names they copy exactly
        self._name_tokens: dict[str, tuple[int, int]] = {}  # stand-in -> its token after a space, after "="
        self.vocabulary = self._vocabulary(ckpt) if self.normalize_input else None
        self._pieces: dict[int, str] = {}
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"engine-{self.name}")

    @functools.cached_property
    def checking_special(self) -> Special:
        """`special` with the tool span's tokens, which the tool-call check needs: found by decoding every token of
        the vocabulary, so only once a generation asks for the check (a real checkpoint's 126k tokens are not
        decoded at start-up when it never does)."""
        return replace(self.special, **dict(zip(("tool_open", "tool_close"), _tool_tokens(self.ckpt.tokenizer),
                                                strict=True)))

    @property
    def kind(self) -> str:
        return "autoregressive" if self.sampler == "autoregressive" else "diffusion"

    def describe(self) -> dict:
        c = self.ckpt.model.config
        return {"engine": self.name, "sampler": self.sampler, "folder": str(self.ckpt.folder),
                "device": str(self.ckpt.device), "params": self.ckpt.model.num_params(),
                "d_model": c.d_model, "n_layers": c.n_layers, "causal": c.causal,
                "sampler_config": asdict(self.config)}

    def generate(self, messages: Sequence[dict[str, str]], **overrides: object) -> Generation:
        cfg = replace(self.config, **overrides) if overrides else self.config
        subs = StandIns()
        if self.normalize_input:
            raw = [m["content"] for m in messages if m.get("role") == "user"]
            messages = [{**m, "content": engine_text(m["content"])} if m.get("role") == "user" else m
                        for m in messages]
            if self.vocabulary is not None:
                v = self.vocabulary
                asked = [m.get("role") == "user" and i > 0 and messages[i - 1].get("role") == "assistant"
                         and v.cues.answers_ask(messages[i - 1]["content"]) for i, m in enumerate(messages)]
                subs = stand_ins(list(zip(raw, [m["content"] for m in messages if m.get("role") == "user"],
                                          strict=True)), v.known, v.names, v.cues,
                                 [a for a, m in zip(asked, messages, strict=True) if m.get("role") == "user"])
            messages = [{**m, "content": subs.replace(m["content"])} for m in messages]
        prompt = self.ckpt.tokenizer.encode_chat(messages)
        limit = self.ckpt.model.config.max_sequence_length
        if len(prompt) + cfg.canvas > limit:  # keep the latest turns that fit, as a chat app would
            prompt = prompt[len(prompt) + cfg.canvas - limit:]
        return Generation(self, prompt, cfg, self._shown(subs))

    def _vocabulary(self, ckpt: Checkpoint) -> Vocabulary | None:
        """The folder's open-values file, its names kept to those the tokenizer writes as one token after a
        space and after "=" (a stand-in is put back token by token)."""
        try:
            v = read_vocabulary(ckpt.folder)
        except ValueError as e:
            raise CheckpointError(str(e)) from None
        if v is None:
            return None
        tok = ckpt.tokenizer.tok
        for n in v.names:
            spaced, after_eq = tok.encode(" " + n).ids, tok.encode("=" + n).ids
            if len(spaced) == 1 and len(after_eq) == 2:
                self._name_tokens[n] = (spaced[0], after_eq[1])
        return Vocabulary(v.known, tuple(self._name_tokens), v.cues)

    def _shown(self, subs: StandIns) -> dict[int, str]:
        """The stand-ins' tokens (after a space, after "=") shown as the caller's words."""
        shown: dict[int, str] = {}
        for word, name in subs.by_word.items():
            spaced, after_eq = self._name_tokens[name]
            shown[spaced], shown[after_eq] = " " + word, word
        return shown

    def piece(self, tok: int) -> str:
        if tok not in self._pieces:
            self._pieces[tok] = self.ckpt.tokenizer.piece(tok)
        return self._pieces[tok]

    def snapshot(self, index: int, st: Step, shown: dict[int, str] | None = None) -> Snapshot:
        stops = self.special.stop_ids
        eos = None
        for i, (t, m) in enumerate(zip(st.tokens, st.masked, strict=True)):
            if m:
                break
            if t in stops:
                eos = i
                break
        shown = shown or {}
        pieces = tuple("" if m else shown.get(t) or self.piece(t) for t, m in zip(st.tokens, st.masked, strict=True))
        return Snapshot(step=index, t_ns=time.monotonic_ns(), tokens=tuple(st.tokens), masked=tuple(st.masked),
                        confidence=tuple(round(c, 4) for c in st.confidence), guesses=tuple(st.guesses),
                        pieces=pieces, eos=eos, block_size=st.block_size, blocks_done=st.blocks_done,
                        pinned=st.pinned, forwards=st.forwards, done=st.done, revised=tuple(st.revised))

    def answer(self, messages: Sequence[dict[str, str]], **overrides: object) -> str:
        """Run one generation to the end and return the answer text (for evaluation)."""
        gen = self.generate(messages, **overrides)
        for _ in gen:
            pass
        return "" if gen.last is None else gen.last.text()

    def warm_up(self) -> None:
        """One throwaway answer, so no caller pays for torch's first-use costs."""
        self.answer([{"role": "user", "content": "hello"}])

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


def _tool_tokens(tok: ChatTokenizer) -> tuple[frozenset[int], frozenset[int]]:
    """The tokens that open a tool span (their text starts with "[") and those that close one (they hold "]")."""
    pieces = [(i, tok.piece(i)) for i in range(tok.vocab_size)]
    return (frozenset(i for i, p in pieces if p.lstrip().startswith(OPEN)),
            frozenset(i for i, p in pieces if CLOSE in p))


def _has_voicelab_section(ckpt: Checkpoint) -> bool:
    return "voicelab" in json.loads((ckpt.folder / "config.json").read_text())


def _voicelab_section(ckpt: Checkpoint) -> dict:
    return json.loads((ckpt.folder / "config.json").read_text()).get("voicelab", {})


def _voicelab_defaults(ckpt: Checkpoint) -> dict:
    """Sampler settings from config.json's "voicelab" section (the tiny models carry one)."""
    cfg = _voicelab_section(ckpt)
    return {k: v for k, v in cfg.items() if k in SamplerConfig.__dataclass_fields__}


def open_engine(model: str = "diffusion", sampler: str | None = None, device: str | None = None,
                **config: object) -> Engine:
    """An engine on a shipped tiny model ("diffusion", "ar") or on a checkpoint folder."""
    folder = TINY_MODELS.get(model, Path(model))
    ckpt = load(folder, device=device)
    if sampler is None:
        sampler = "autoregressive" if ckpt.model.config.causal else "threshold"
    eng = Engine(ckpt, sampler, name=model if model in TINY_MODELS else folder.name)
    if config:
        eng.config = replace(eng.config, **config)
    return eng
