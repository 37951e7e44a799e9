"""The browser's speaker: pipecat's SmallWebRTC output, taught to pause and resume (`--barge-in pause`).

`PausableWebRTCOutput` honours `PlayoutPauseFrame` / `PlayoutResumeFrame` as the recording speaker
(`voicelab.pipeline.transport.recording_output.RecordingOutput`) does, with the same `SpeakerPause`
(`voicelab.pipeline.transport.pausable`): a write waits while paused, holding its frame and the rest of the
reply behind it, so a resume sends the exact next sample; an interruption during a pause drops the held audio
unsent. Audio already handed to the WebRTC track when the pause arrives still goes out: the session writes
10 ms frames (`audio_out_10ms_chunks=1`), so that is at most 10 ms.

`LivePlayout` (after this output in the pipeline) keeps the ledger from the frames this output passes on:
each audio frame once the track took it, the pause and resume frames, and the playout marks, which travel in
the audio queue and so are held with the audio behind them (the words heard stay right).
"""

from __future__ import annotations

from pipecat.transports.smallwebrtc.transport import SmallWebRTCOutputTransport, SmallWebRTCTransport

from voicelab.pipeline.transport.pausable import PausableOutput


class PausableWebRTCOutput(PausableOutput, SmallWebRTCOutputTransport):
    """SmallWebRTC output that holds the bot's audio on a pause (see the module doc)."""


class PausableWebRTCTransport(SmallWebRTCTransport):
    """`SmallWebRTCTransport` whose output is a `PausableWebRTCOutput`."""

    def output(self) -> PausableWebRTCOutput:
        if not isinstance(self._output, PausableWebRTCOutput):
            self._output = PausableWebRTCOutput(self._client, self._params, name=self._output_name)
        return self._output
