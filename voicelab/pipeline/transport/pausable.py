"""A pipecat output transport that holds the bot's audio on a pause (`--barge-in pause`), as a mixin.

The browser's WebRTC output and the phone line's media-stream output are pipecat's own transports with this
mixed in: their pause, resume and interruption frames go to a `SpeakerPause` (`voicelab.rules.speaker_pause`),
and each audio write waits on it. Audio already handed to the transport when a pause arrives still goes out.
"""

from __future__ import annotations

from typing import Any

from pipecat.frames.frames import Frame, InterruptionFrame, OutputAudioRawFrame
from pipecat.processors.frame_processor import FrameDirection

from voicelab.pipeline.frames import PlayoutPauseFrame, PlayoutResumeFrame
from voicelab.rules.speaker_pause import SpeakerPause


class PausableOutput:
    """Mix in before a pipecat output transport class: `class X(PausableOutput, SomeOutputTransport)`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pause = SpeakerPause()

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        if not await self.pause.wait():  # paused: this frame and the rest wait for resume or cut
            return False  # interrupted while paused: never sent
        return await super().write_audio_frame(frame)  # type: ignore[misc, no-any-return]

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        # system frames: they act at once, ahead of the audio queued here
        if isinstance(frame, PlayoutPauseFrame):
            self.pause.pause(frame.reason)
        elif isinstance(frame, PlayoutResumeFrame):
            self.pause.resume(frame.reason)
        elif isinstance(frame, InterruptionFrame):
            self.pause.interrupt()  # the held write drops its audio once the queue is cleared (below)
        await super().process_frame(frame, direction)  # type: ignore[misc]
        if isinstance(frame, InterruptionFrame):
            self.pause.release()
