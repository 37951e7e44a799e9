"""The phone line's transport: pipecat's FastAPI WebSocket transport with a Twilio serializer, for a media stream.

µ-law at 8 kHz in and out (the caller's audio raised to the pipeline's rate 20 ms at a time with 2 ms of delay,
`CallerUpsampler`; the output resamples the bot's audio to 8 kHz before it chunks it, so each 20 ms
chunk is one media message), `clear` on an interruption. Hang-up through
Twilio's REST API is off (`auto_hang_up=False`): the lab holds no carrier account and the carrier ends the
call by closing the socket. The bot's audio goes out at real time plus a small lead (`SendPacer`,
`voicelab.rules.send_pacing`) instead of pipecat's twice real time, so the carrier's queue holds about the lead.
`--barge-in pause` holds the bot's audio as the browser's speaker does (`PausableOutput`) and clears what the
carrier holds at once; on a resume the cleared audio is sent again first, so no word is lost. The route that
answers the stream is `voicelab.web.media_stream`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np
from pipecat.audio.resamplers.base_audio_resampler import BaseAudioResampler
from pipecat.audio.utils import create_stream_resampler
from pipecat.frames.frames import Frame, InterruptionFrame, OutputAudioRawFrame
from pipecat.processors.frame_processor import FrameDirection
from pipecat.serializers.twilio import TwilioFrameSerializer
from pipecat.transports.websocket.fastapi import (
    FastAPIWebsocketOutputTransport,
    FastAPIWebsocketParams,
    FastAPIWebsocketTransport,
)

from voicelab.pipeline.frames import PlayoutPauseFrame, PlayoutResumeFrame
from voicelab.pipeline.transport.line_codec import LineUpsampler
from voicelab.pipeline.transport.mulaw import LINE_RATE
from voicelab.pipeline.transport.pausable import PausableOutput
from voicelab.rules.send_pacing import LEAD_MS, NS_PER_MS, SendPacer


class CallerUpsampler(BaseAudioResampler):
    """The caller's 8 kHz audio to the pipeline's rate with 2 ms of delay (`LineUpsampler`) where the rate is a
    whole multiple of the line's; pipecat's streaming resampler otherwise."""

    def __init__(self) -> None:
        self._fir: LineUpsampler | None = None
        self._other = create_stream_resampler()

    async def resample(self, audio: bytes, in_rate: int, out_rate: int) -> bytes:
        if in_rate == out_rate:
            return audio
        if out_rate % in_rate:
            return await self._other.resample(audio, in_rate, out_rate)
        if self._fir is None or self._fir.factor != out_rate // in_rate:
            self._fir = LineUpsampler(factor=out_rate // in_rate)
        return self._fir(np.frombuffer(audio, dtype=np.int16)).tobytes()


class PausableMediaStreamOutput(PausableOutput, FastAPIWebsocketOutputTransport):
    """pipecat's WebSocket output paced at real time plus a lead, holding the bot's audio on a pause (as
    `PausableWebRTCOutput` does) and clearing the carrier's queue then; an interruption goes out as `clear`."""

    def __init__(self, *args: Any, lead_ms: int = LEAD_MS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pacer = SendPacer(lead_ns=lead_ms * NS_PER_MS, sample_bytes=2 * self._params.audio_out_channels)

    def _duration_ns(self, audio: bytes) -> int:
        return len(audio) * 1_000_000_000 // (self.pacer.sample_bytes * self.sample_rate)

    async def _clear_carrier(self) -> None:
        await self._write_frame(InterruptionFrame())  # the serializer writes Twilio's `clear`

    async def _write_frame(self, frame: Frame) -> bool:
        ok: bool = await super()._write_frame(frame)
        if ok and isinstance(frame, OutputAudioRawFrame) and frame.audio:
            if self.pacer.sent(time.monotonic_ns(), frame.audio, self._duration_ns(frame.audio)):
                await self._clear_carrier()  # it left after the pause's clear: kept for the resume instead
        return ok

    async def _write_audio_sleep(self) -> None:
        """Replaces pipecat's half-a-chunk sleep: wait until the carrier holds no more than the lead."""
        wait = self.pacer.wait_ns(time.monotonic_ns())
        if wait > 0:
            await asyncio.sleep(wait / 1e9)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, PlayoutResumeFrame) and self.pause.paused:
            kept = self.pacer.resume()  # before the held write goes on: the cleared audio first
            if kept:
                await self._write_frame(OutputAudioRawFrame(kept, self.sample_rate, self._params.audio_out_channels))
        elif isinstance(frame, InterruptionFrame):
            self.pacer.cut()
        await super().process_frame(frame, direction)
        if isinstance(frame, PlayoutPauseFrame) and self.pacer.pause(time.monotonic_ns()):
            await self._clear_carrier()


class MediaStreamTransport(FastAPIWebsocketTransport):
    def __init__(self, *args: Any, lead_ms: int = LEAD_MS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lead_ms = lead_ms

    def output(self) -> PausableMediaStreamOutput:
        if not isinstance(self._output, PausableMediaStreamOutput):
            self._output = PausableMediaStreamOutput(self, self._client, self._params, name=self._output_name,
                                                     lead_ms=self._lead_ms)
        return self._output


def media_stream_transport(websocket: Any, stream_sid: str, call_sid: str | None,
                           lead_ms: int = LEAD_MS) -> MediaStreamTransport:
    serializer = TwilioFrameSerializer(
        stream_sid=stream_sid, call_sid=call_sid,
        params=TwilioFrameSerializer.InputParams(twilio_sample_rate=LINE_RATE, auto_hang_up=False))
    serializer._input_resampler = CallerUpsampler()  # pipecat's own holds ~95 ms of the caller (see line_codec)
    return MediaStreamTransport(websocket, FastAPIWebsocketParams(
        audio_in_enabled=True, audio_out_enabled=True, audio_in_passthrough=True, add_wav_header=False,
        # the output runs at the line's rate: each 20 ms chunk leaves as one 160-byte media message at once
        # (at 16 kHz the serializer's streaming resampler holds ~95 ms and lets it out in bursts)
        audio_out_sample_rate=LINE_RATE, audio_out_end_silence_secs=0, audio_out_10ms_chunks=2,
        serializer=serializer), lead_ms=lead_ms)
