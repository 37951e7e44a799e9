"""The browser's speaker: pipecat's SmallWebRTC output, taught to pause and resume (`--barge-in pause`).

`PausableWebRTCOutput` honours `PlayoutPauseFrame` / `PlayoutResumeFrame` as the recording speaker
(`voicelab.pipeline.transport.recording_output.RecordingOutput`) does, with the same `PlayoutHold`: a write waits while
paused, holding its frame and the rest of the reply behind it, so a resume sends the exact next sample; an
interruption during a pause drops the held audio unsent. Audio already handed to the WebRTC track when the
pause arrives still goes out: the session writes 10 ms frames (`audio_out_10ms_chunks=1`), so that is at
most 10 ms.

`LivePlayout` (after this output in the pipeline) keeps the ledger from the frames this output passes on:
each audio frame once the track took it, the pause and resume frames, and the playout marks, which travel in
the audio queue and so are held with the audio behind them (the words heard stay right).
"""

from __future__ import annotations

from typing import Any

from pipecat.frames.frames import Frame, InterruptionFrame, OutputAudioRawFrame
from pipecat.processors.frame_processor import FrameDirection
from pipecat.transports.smallwebrtc.transport import SmallWebRTCOutputTransport, SmallWebRTCTransport

from voicelab.pipeline.frames import PlayoutPauseFrame, PlayoutResumeFrame
from voicelab.rules.playout_hold import PlayoutHold


class PausableWebRTCOutput(SmallWebRTCOutputTransport):
    """SmallWebRTC output that holds the bot's audio on a pause (see the module doc)."""

    def __init__(self, client: Any, params: Any, **kwargs: Any) -> None:
        super().__init__(client, params, **kwargs)
        self.hold = PlayoutHold()

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        if not await self.hold.wait():  # paused: this frame and the rest wait for resume or cut
            return False  # interrupted while paused: never sent
        return await super().write_audio_frame(frame)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        # system frames: they act at once, ahead of the audio queued here
        if isinstance(frame, PlayoutPauseFrame):
            self.hold.pause()
        elif isinstance(frame, PlayoutResumeFrame):
            self.hold.resume()
        elif isinstance(frame, InterruptionFrame):
            self.hold.cut()  # the held write drops its audio once the queue is cleared (below)
        await super().process_frame(frame, direction)  # passes the frame on to LivePlayout
        if isinstance(frame, InterruptionFrame):
            self.hold.release()


class PausableWebRTCTransport(SmallWebRTCTransport):
    """`SmallWebRTCTransport` whose output is a `PausableWebRTCOutput`."""

    def output(self) -> PausableWebRTCOutput:
        if not isinstance(self._output, PausableWebRTCOutput):
            self._output = PausableWebRTCOutput(self._client, self._params, name=self._output_name)
        return self._output
