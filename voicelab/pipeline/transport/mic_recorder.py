"""The caller's end of a live session, as heard: `MicRecorder`, right after the live input transport.

It puts the caller's audio, as the server received it, on a track at its arrival time on the call clock;
the session's recording (`voicelab.web.recording.LiveRecording`) writes that track as the WAV's left channel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import soxr
from pipecat.frames.frames import Frame, InputAudioRawFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voicelab.measure.calllog import CallLog
from voicelab.measure.recording import Track


class MicRecorder(FrameProcessor):
    """The caller's audio as the server received it: each input frame ends where it arrived on the call clock.

    Frames are not laid end to end: a backlog delivered in one burst (audio queued while the pipeline
    started) would then push everything after it late for the rest of the call. A frame that arrives early
    overwrites the tail of the one before; one that arrives late leaves a jitter-sized silence.
    """

    def __init__(self, log: CallLog, sample_rate: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log = log
        self.sr = sample_rate
        self.track = Track(sample_rate)
        self.end = 0  # sample where the audio placed so far ends

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM and isinstance(frame, InputAudioRawFrame):
            self.put(np.frombuffer(frame.audio, dtype=np.int16), frame.sample_rate, frame.num_channels,
                     self.log.now_ns())
        await self.push_frame(frame, direction)

    def put(self, pcm: np.ndarray, sample_rate: int, channels: int, arrived_ns: int) -> None:
        if channels > 1:
            pcm = pcm[::channels]
        if sample_rate != self.sr and sample_rate > 0:  # the transport resamples to the pipeline rate already
            pcm = soxr.resample(pcm, sample_rate, self.sr)
        start = arrived_ns * self.sr // 1_000_000_000 - pcm.size
        if start < 0:  # arrived in the call's first moments: only the part after sample 0 is on the clock
            pcm, start = pcm[-start:], 0
        self.track.put(start, pcm, mix=False)
        self.end = max(self.end, start + pcm.size)
