"""`profile:NAME`: the tiny engine's answers at a timing profile's first-answer latency and output speed,
in-process (engines/simulated/profiles.py has the rows, engines/simulated/reveal.py the schedule).

The answer is computed first by a source engine (the tiny diffusion engine for diffusion profiles,
the tiny AR engine for AR ones) while the first-answer wait runs, then revealed on the profile's
clock: AR token by token, diffusion block by block with revised drafts. Snapshots are stamped when
they are yielded, so what a run measures is what the profile says, give or take the timer.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from engines.protocol import EngineLike, Usage
from engines.simulated.profiles import Profile
from engines.simulated.reveal import Reveal, reveal_schedule
from engines.snapshot import Snapshot
from engines.text_canvas import TextCanvas


def answer_pieces(source: EngineLike, messages: Sequence[dict[str, str]]) -> list[str]:
    """The source engine's final answer as its token pieces (cut at the answer's end).

    A last user message of several lines is answered line by line and the answers joined (with a
    " " piece): the tiny engines' canvas holds about 48 tokens, so this is how a probe or a timing
    test gets a long answer from them.
    """
    lines = [ln.strip() for ln in messages[-1]["content"].splitlines() if ln.strip()] if messages else []
    if len(lines) <= 1:
        return _one_answer(source, messages)
    out: list[str] = []
    for ln in lines:
        part = _one_answer(source, [*messages[:-1], {"role": messages[-1]["role"], "content": ln}])
        out += ([" "] if out and part else []) + part
    return out


def _one_answer(source: EngineLike, messages: Sequence[dict[str, str]]) -> list[str]:
    last: Snapshot | None = None
    for snap in source.generate(messages):
        last = snap
    if last is None:
        return []
    n = last.eos if last.eos is not None else last.prefix_len
    return list(last.pieces[:n])


def prompt_tokens(source: EngineLike, messages: Sequence[dict[str, str]]) -> int | None:
    """Input tokens by the source's tokenizer (None for a source without one, e.g. a replay)."""
    from engines.local.engine import Engine  # only checkpoint engines carry a tokenizer

    return len(source.ckpt.tokenizer.encode_chat(messages)) if isinstance(source, Engine) else None


class ProfileGeneration:
    def __init__(self, engine: ProfileEngine, messages: Sequence[dict[str, str]]) -> None:
        self.engine = engine
        self.messages = list(messages)
        self.canvas = TextCanvas(block_size=engine.block_size if engine.kind == "diffusion" else 1)
        self.t_start_ns = time.monotonic_ns()
        self.usage = Usage()
        self.last: Snapshot | None = None
        self._cancel = threading.Event()
        self._base_ns = self.t_start_ns  # reveal times count from here
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    def pin(self, n: int) -> None:
        self.canvas.pin(n)

    def cancel(self) -> None:
        self._cancel.set()
        if self._loop is not None and self._wake is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wake.set)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def _schedule(self) -> list[Reveal]:
        pieces = self.engine.content(self.messages)
        self.usage = Usage(prompt_tokens(self.engine.source, self.messages), len(pieces))
        return self.engine.schedule(pieces)

    def _deadline(self, plan: list[Reveal], i: int) -> float:
        return self._base_ns + plan[i].t_s * 1e9

    def _due(self, plan: list[Reveal], i: int, now_ns: int) -> int:
        """Skip reveals already overdue (a slow timer) so the output speed holds: show the latest due one.

        After the first text, the clock restarts from when it was actually shown, so a late first
        answer (a busy CPU) does not also speed up the rest of the answer.
        """
        if self.last is None:
            self._base_ns = now_ns - int(plan[0].t_s * 1e9)
            return 0
        while i + 1 < len(plan) and self._deadline(plan, i + 1) <= now_ns:
            i += 1
        return i

    def _snap(self, r: Reveal, last: bool) -> list[Snapshot]:
        t = time.monotonic_ns()
        out = [self.canvas.replace(list(r.pieces), t, r.final)]
        if last:
            out.append(self.canvas.finish(t))
        return out

    def __iter__(self) -> Iterator[Snapshot]:
        plan = self._schedule()
        i = 0
        while i < len(plan):
            wait = self._deadline(plan, i) - time.monotonic_ns()
            if wait > 0 and self._cancel.wait(wait / 1e9):
                return
            if self.cancelled:
                return
            i = self._due(plan, i, time.monotonic_ns())
            for snap in self._snap(plan[i], i == len(plan) - 1):
                self.last = snap
                yield snap
            i += 1

    async def __aiter__(self) -> AsyncIterator[Snapshot]:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        plan = await self._loop.run_in_executor(self.engine.executor, self._schedule)
        i = 0
        while i < len(plan) and not self.cancelled:
            wait = self._deadline(plan, i) - time.monotonic_ns()
            if wait > 0:
                try:
                    await asyncio.wait_for(self._wake.wait(), wait / 1e9)
                except TimeoutError:
                    pass
            if self.cancelled:
                return
            i = self._due(plan, i, time.monotonic_ns())
            for snap in self._snap(plan[i], i == len(plan) - 1):
                self.last = snap
                yield snap
            i += 1


class ProfileEngine:
    """A timing profile played in-process with a source engine's answers."""

    sampler = "profile"

    def __init__(self, profile: Profile, source: EngineLike | None = None, *, seed: int = 0, jitter: float = 0.2,
                 block_size: int = 32, steps_per_block: int = 4, device: str | None = None) -> None:
        self.profile = profile
        self.name = f"profile:{profile.name}"
        if source is None:
            from engines.local.engine import open_engine  # torch only when the tiny engine is the source

            source = open_engine("diffusion" if profile.kind == "diffusion" else "ar", device=device)
        self.source = source
        self.seed = seed
        self.jitter = jitter
        self.block_size = block_size
        self.steps_per_block = steps_per_block
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"profile-{profile.name}")
        self._answers = 0  # each answer gets its own jitter draw, repeatably
        # the source is deterministic per chat, so a repeated chat (sweeps, repetitions) need not pay again
        self._cache: dict[str, list[str]] = {}

    @property
    def kind(self) -> str:
        return "diffusion" if self.profile.kind == "diffusion" else "autoregressive"

    def describe(self) -> dict[str, Any]:
        return {"engine": self.name, "sampler": self.sampler, "kind": self.kind, "profile": self.profile.to_dict(),
                "source": self.source.describe(), "seed": self.seed, "jitter": self.jitter,
                "block_size": self.block_size, "steps_per_block": self.steps_per_block}

    def content(self, messages: Sequence[dict[str, str]]) -> list[str]:
        """The answer's pieces; computing them counts against the first-answer wait (50-100 ms a line here)."""
        key = json.dumps(list(messages), sort_keys=True)
        if key not in self._cache:
            if len(self._cache) >= 256:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = answer_pieces(self.source, messages)
        return list(self._cache[key])

    def schedule(self, pieces: list[str]) -> list[Reveal]:
        self._answers += 1
        return reveal_schedule(pieces, self.profile, seed=self.seed * 1_000_003 + self._answers, jitter=self.jitter,
                               block_size=self.block_size, steps_per_block=self.steps_per_block)

    def generate(self, messages: Sequence[dict[str, str]], **overrides: object) -> ProfileGeneration:
        if overrides:
            from engines.errors import EngineSpecError

            raise EngineSpecError(f"{self.name}: takes no generation options (got {', '.join(overrides)})")
        return ProfileGeneration(self, messages)

    def warm_up(self) -> None:
        self.source.warm_up()

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.source.close()


def measure_timing(snaps: Sequence[Snapshot], t0_ns: int) -> tuple[float, float]:
    """(first answer s, output tokens/s) of one generation from its own snapshots: first visible text
    since t0, and (N - 1) tokens over the time from the first text to the done snapshot."""
    first = next(s for s in snaps if s.text())
    last = snaps[-1]
    n = last.eos if last.eos is not None else last.prefix_len
    dt = (last.t_ns - first.t_ns) / 1e9
    return (first.t_ns - t0_ns) / 1e9, ((n - 1) / dt if dt > 0 else float("inf"))
