"""Piper TTS that synthesizes speculative chunks ahead and holds their audio.

- A `SpeculativeTextFrame` starts a synthesis of its text at once; the audio is kept here and never sent
  downstream on its own.
- A `SpeculativeDropFrame` (or an interruption) throws the held audio away, or cancels the synthesis if it
  has not started: logged as `speculative_result` outcome "drop" with the reason and the TTS ms wasted.
- A committed `ChunkTextFrame` whose `speculative_id` names held audio of the same text plays that audio
  through the ordinary chunk path (marks, word timing, leading-silence trim, `tts_request` /
  `tts_first_audio` rows) instead of a second synthesis; if the speculative synthesis is still running it
  waits for it. Logged as outcome "hit" with `tts_ms_saved`: the synthesis time that had already run when
  the chunk was requested (the wait the caller did not have).

Speculative and committed syntheses share the base class's single worker thread, in arrival order: Piper's
phonemizer (espeak-ng) is not known to be thread-safe, and on a 2-core machine a second worker would only
slow both. So speculative work can delay a later committed chunk; the FAR figures show whether it pays.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from pipecat.frames.frames import Frame, InterruptionFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voicelab.measure.events import EventKind
from voicelab.pipeline.frames import ChunkTextFrame, SpeculativeDropFrame, SpeculativeTextFrame
from voicelab.pipeline.services.tts_piper import PackagedPiperTTS, Sentence

K = EventKind


@dataclass
class Held:
    """One speculative synthesis: its text, its worker job, and when the job ran (call clock ns)."""

    spec_id: int
    text: str
    turn: int
    future: Future[list[Sentence]]
    started_ns: int | None = None  # written by the worker thread
    done_ns: int | None = None


class _Reuse:
    """The sentences of held audio, handed to the chunk path in place of a synthesis iterator."""

    def __init__(self, held: Held, chunk_id: int, requested_ns: int) -> None:
        self.held = held
        self.chunk_id = chunk_id
        self.requested_ns = requested_ns
        self.sentences: Iterator[Sentence] | None = None


class SpeculativePiperTTS(PackagedPiperTTS):
    """`PackagedPiperTTS` plus held speculative audio; see the module doc."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._held: dict[int, Held] = {}  # spec_id -> held audio not claimed yet
        self._claimed: dict[int, Held] = {}  # chunk_id -> held audio its commit plays
        self._reuse: _Reuse | None = None  # set by _take_meta for the run_tts about to start
        self.hits = 0
        self.drops = 0

    def _now_ns(self) -> int:
        return self._log.now_ns() if self._log is not None else time.monotonic_ns()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, SpeculativeTextFrame):
            await FrameProcessor.process_frame(self, frame, direction)  # observers only: it goes no further
            self._speculate(frame)
            return
        if isinstance(frame, SpeculativeDropFrame):
            await FrameProcessor.process_frame(self, frame, direction)
            self._drop(frame.spec_id, frame.reason)
            return
        if isinstance(frame, ChunkTextFrame) and frame.speculative_id is not None:
            held = self._held.pop(frame.speculative_id, None)
            if held is not None and held.text == frame.text.strip():
                self._claimed[frame.chunk_id] = held
            elif held is not None:  # the gate's match says equal text; never play anything else
                self._held[held.spec_id] = held
                self._drop(held.spec_id, "text_mismatch")
        elif isinstance(frame, InterruptionFrame):
            for sid in list(self._held):
                self._drop(sid, "interrupted")
            for held in self._claimed.values():
                self._held[held.spec_id] = held
                self._drop(held.spec_id, "interrupted")
            self._claimed.clear()
            self._reuse = None
        await super().process_frame(frame, direction)

    # ---- speculative jobs ---------------------------------------------------------------------------

    def _speculate(self, f: SpeculativeTextFrame) -> None:
        text = f.text.strip()
        held = Held(f.spec_id, text, f.turn, Future())

        def job() -> list[Sentence]:  # worker thread
            held.started_ns = self._now_ns()
            out = list(PackagedPiperTTS._synthesize(self, text, len(text.split())))  # the plain synthesis
            held.done_ns = self._now_ns()
            return out

        held.future = self._executor.submit(job)
        self._held[f.spec_id] = held

    def _drop(self, spec_id: int, reason: str) -> None:
        held = self._held.pop(spec_id, None)
        if held is None:
            return
        held.future.cancel()  # only succeeds while it waits for the worker
        now = self._now_ns()
        wasted = 0.0
        if held.started_ns is not None:
            wasted = ((held.done_ns or now) - held.started_ns) / 1e6
        self.drops += 1
        self._logrow(K.SPECULATIVE_RESULT, held.turn, {"spec_id": spec_id, "outcome": "drop", "reason": reason,
                                                       "tts_ms_wasted": round(wasted, 1)})

    # ---- the chunk path, fed from held audio --------------------------------------------------------

    def _take_meta(self, text: str) -> tuple[int, int]:
        chunk_id, turn = super()._take_meta(text)
        held = self._claimed.pop(chunk_id, None)
        self._reuse = None if held is None else _Reuse(held, chunk_id, self._now_ns())
        return chunk_id, turn

    def _synthesize(self, text: str, n_words: int) -> Iterator[Sentence]:
        reuse, self._reuse = self._reuse, None
        if reuse is not None:
            return reuse  # type: ignore[return-value]  # _sentence knows it
        return super()._synthesize(text, n_words)

    async def _sentence(self, loop: asyncio.AbstractEventLoop, it: Iterator[Sentence], turn: int) -> Sentence | None:
        if not isinstance(it, _Reuse):
            return await super()._sentence(loop, it, turn)
        if it.sentences is None:
            it.sentences = iter(await self._held_audio(it, loop, turn))
        return next(it.sentences, None)

    async def _held_audio(self, r: _Reuse, loop: asyncio.AbstractEventLoop, turn: int) -> list[Sentence]:
        """The held sentences (waiting for the job if it still runs); a failed job is synthesized again."""
        h = r.held
        try:
            sentences = await asyncio.wrap_future(h.future)
        except Exception as e:  # the speculative job failed: say it the ordinary way
            self._logrow(K.SPECULATIVE_RESULT, turn, {"spec_id": h.spec_id, "outcome": "drop",
                                                      "reason": f"failed: {type(e).__name__}"})
            self.drops += 1
            text = h.text
            return await loop.run_in_executor(
                self._executor, lambda: list(PackagedPiperTTS._synthesize(self, text, len(text.split()))))
        start = h.started_ns if h.started_ns is not None else r.requested_ns
        done = h.done_ns if h.done_ns is not None else self._now_ns()
        saved = max(0.0, (min(done, r.requested_ns) - start) / 1e6)
        self.hits += 1
        self._logrow(K.SPECULATIVE_RESULT, turn, {
            "spec_id": h.spec_id, "outcome": "hit", "chunk_id": r.chunk_id, "tts_ms_saved": round(saved, 1),
            "synth_ms": round((done - start) / 1e6, 1), "wait_ms": round(max(0, done - r.requested_ns) / 1e6, 1)})
        return sentences
