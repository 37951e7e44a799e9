"""Speech to text for the pipeline: streaming pocketsphinx.

`PocketsphinxSTTService` decodes *while the caller speaks* (latency-budget.md: batch decoding after the
turn ends costs ~725 ms for 5 s of speech, streaming leaves only the final pass, ~150 ms): from the VAD's
start (plus a pre-roll from a ring buffer, since the VAD reports speech `start_secs` late) every audio
frame goes to the decoder in a worker thread; partial hypotheses go out as `InterimTranscriptionFrame`s
(they drive word-count barge-in strategies); at the VAD's stop the utterance is finalized and a
`TranscriptionFrame(finalized=True)` lets the turn-stop strategy fire at once.

It sits before the user aggregator, which broadcasts the VAD frames upstream to it.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pipecat.frames.frames import (
    Frame,
    InterimTranscriptionFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.services.settings import STTSettings
from pipecat.services.stt_service import STTService
from pipecat.utils.time import time_now_iso8601
from pocketsphinx import Decoder

from voicelab.pcm import SAMPLE_RATE
from voicelab.speech.preroll import PreRoll
from voicelab.speech.text import spoken_numbers_to_digits

_END = object()  # decode queue sentinel: finalize the utterance
_START = object()


def new_decoder(sample_rate: int = SAMPLE_RATE) -> Any:
    """A pocketsphinx decoder on the English model its wheel ships (quiet logging)."""
    return Decoder(samprate=sample_rate, loglevel="FATAL")


class PocketsphinxSTTService(STTService):
    """Streaming pocketsphinx (see the module doc). Pass a shared `decoder` to skip loading one."""

    def __init__(self, *, decoder: Any = None, preroll_s: float = 0.3, interim_every_s: float = 0.2,
                 ttfs_p99_latency: float = 0.35, **kwargs: Any) -> None:
        super().__init__(ttfs_p99_latency=ttfs_p99_latency,
                         settings=STTSettings(model="pocketsphinx-en-us", language=None), **kwargs)
        self._decoder = decoder
        self._preroll_s = preroll_s
        self._interim_every_s = interim_every_s
        self._preroll: PreRoll | None = None  # made at the first audio (the sample rate is known then)
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pocketsphinx")
        self._in_utt = False
        self._active = False  # the decoder is in an utterance (worker side)
        self._fed = 0
        self._next_interim = 0
        self._last_interim = ""
        self.finals: list[str] = []

    async def start(self, frame: Frame) -> None:  # type: ignore[override]
        await super().start(frame)  # type: ignore[arg-type]
        if self._decoder is None:
            loop = asyncio.get_running_loop()
            self._decoder = await loop.run_in_executor(self._executor, new_decoder, self.sample_rate)
        if self._task is None:
            self._task = self.create_task(self._decode_loop(), name="pocketsphinx_decode")

    async def cleanup(self) -> None:
        await super().cleanup()
        if self._task is not None:
            await self.cancel_task(self._task)
            self._task = None
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def run_stt(self, audio: bytes):  # type: ignore[override]
        # Keep a pre-roll of recent audio; while in an utterance, stream it to the decoder.
        if self._preroll is None:
            self._preroll = PreRoll(self.sample_rate, max(self._preroll_s + 0.3, 0.5))
        self._preroll.push(audio)
        if self._in_utt:
            self._queue.put_nowait(audio)
        yield None

    async def _handle_vad_user_started_speaking(self, frame: VADUserStartedSpeakingFrame) -> None:
        await super()._handle_vad_user_started_speaking(frame)
        if self._in_utt:
            return
        self._in_utt = True
        self._queue.put_nowait(_START)
        pre = self._preroll.tail(self._preroll_s + frame.start_secs) if self._preroll is not None else []
        for chunk in pre:
            self._queue.put_nowait(chunk)

    async def _handle_vad_user_stopped_speaking(self, frame: VADUserStoppedSpeakingFrame) -> None:
        await super()._handle_vad_user_stopped_speaking(frame)
        if self._in_utt:
            self._in_utt = False
            self._queue.put_nowait(_END)

    # ---- decoder worker -----------------------------------------------------------------------------

    async def _decode_loop(self) -> None:
        loop = asyncio.get_running_loop()
        self._fed = 0
        self._next_interim = 0
        self._active = False
        while True:
            items = [await self._queue.get()]
            while not self._queue.empty():  # take what is already queued: one hand-off per run of audio
                items.append(self._queue.get_nowait())
            audio: list[bytes] = []
            for item in items:
                if isinstance(item, bytes):
                    audio.append(item)
                    continue
                if audio:
                    await self._feed_audio(loop, b"".join(audio))
                    audio = []
                await self._control(loop, item)
            if audio:
                await self._feed_audio(loop, b"".join(audio))

    async def _control(self, loop: asyncio.AbstractEventLoop, item: object) -> None:
        if item is _START:
            if self._active:  # a stop never came: finalize what we had
                await loop.run_in_executor(self._executor, self._decoder.end_utt)
            await loop.run_in_executor(self._executor, self._decoder.start_utt)
            self._active, self._fed, self._last_interim = True, 0, ""
            self._next_interim = int(self._interim_every_s * self.sample_rate * 2)
        elif item is _END and self._active:
            self._active = False
            text = await loop.run_in_executor(self._executor, self._finish)
            self.finals.append(text)
            if text:
                await self.push_frame(TranscriptionFrame(text, self._user_id, time_now_iso8601(), finalized=True))

    async def _feed_audio(self, loop: asyncio.AbstractEventLoop, audio: bytes) -> None:
        if not self._active:
            return
        await loop.run_in_executor(self._executor, self._feed, audio)
        self._fed += len(audio)
        if self._fed >= self._next_interim:
            self._next_interim = self._fed + int(self._interim_every_s * self.sample_rate * 2)
            text = await loop.run_in_executor(self._executor, self._partial)
            if text and text != self._last_interim:
                self._last_interim = text
                await self.push_frame(InterimTranscriptionFrame(text, self._user_id, time_now_iso8601()))

    def _feed(self, audio: bytes) -> None:
        self._decoder.process_raw(audio, False, False)

    def _partial(self) -> str:
        hyp = self._decoder.hyp()
        return spoken_numbers_to_digits(hyp.hypstr.strip()) if hyp is not None else ""

    def _finish(self) -> str:
        self._decoder.end_utt()
        hyp = self._decoder.hyp()
        # numbers as digits, as the engines' callers write them (a recognizer's formatter step)
        return spoken_numbers_to_digits(hyp.hypstr.strip()) if hyp is not None else ""
