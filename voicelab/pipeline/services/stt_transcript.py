"""Speech to text without a recogniser: the fixture's own transcript (`--stt transcript`).

`TranscriptSTTService` takes STT out of the budget for engine-focused runs: at the VAD's stop it sends the
ground-truth text of the caller utterances whose speech has ended, and while the caller speaks it reveals
their words in proportion to the speech elapsed (an ideal streaming recognizer). It sits before the user
aggregator, which broadcasts the VAD frames upstream to it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from pipecat.frames.frames import (
    InterimTranscriptionFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.services.settings import STTSettings
from pipecat.services.stt_service import STTService
from pipecat.utils.time import time_now_iso8601

from voicelab.measure.calllog import CallLog


class TranscriptSTTService(STTService):
    """The fixture's transcript as STT output (see the module doc); reads the truth from the call log."""

    def __init__(self, log: CallLog, *, interim_every_s: float = 0.1, **kwargs: Any) -> None:
        super().__init__(ttfs_p99_latency=0.25, settings=STTSettings(model="transcript", language=None), **kwargs)
        self._log = log
        self._interim_every_s = interim_every_s
        self._sent: set[int] = set()
        self._interim_task: asyncio.Task[None] | None = None

    async def run_stt(self, audio: bytes):  # type: ignore[override]
        yield None

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._stop_interims()

    async def _stop_interims(self) -> None:
        if self._interim_task is not None:
            await self.cancel_task(self._interim_task)
            self._interim_task = None

    async def _handle_vad_user_started_speaking(self, frame: VADUserStartedSpeakingFrame) -> None:
        await super()._handle_vad_user_started_speaking(frame)
        await self._stop_interims()
        self._interim_task = self.create_task(self._interims(), name="transcript_interims")

    async def _handle_vad_user_stopped_speaking(self, frame: VADUserStoppedSpeakingFrame) -> None:
        await super()._handle_vad_user_stopped_speaking(frame)
        await self._stop_interims()
        now = self._log.now_ns()
        done = [u for u in self._log.utterances
                if u.turn not in self._sent and u.speech_start_ns <= now and u.speech_end_ns <= now]
        if not done:
            return
        for u in done:
            self._sent.add(u.turn)
        text = " ".join(u.text for u in done)
        await self.push_frame(TranscriptionFrame(text, self._user_id, time_now_iso8601(), finalized=True))

    async def _interims(self) -> None:
        last = ""
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                await asyncio.sleep(self._interim_every_s)
                now = self._log.now_ns()
                u = self._log.utterance(self._log.caller_turn_at(now))
                if u is None or u.turn in self._sent:
                    continue
                words = u.text.split()
                span = max(1, u.speech_end_ns - u.speech_start_ns)
                n = min(len(words), int(len(words) * (now - u.speech_start_ns) / span))
                text = " ".join(words[:n])
                if text and text != last:
                    last = text
                    await self.push_frame(InterimTranscriptionFrame(text, self._user_id, time_now_iso8601()))
