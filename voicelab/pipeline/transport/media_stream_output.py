"""The phone line's transport: pipecat's FastAPI WebSocket transport with a Twilio serializer, for a media stream.

µ-law at 8 kHz in and out, resampled to the pipeline's rate, `clear` on an interruption. Hang-up through
Twilio's REST API is off (`auto_hang_up=False`): the lab holds no carrier account and the carrier ends the
call by closing the socket. `--barge-in pause` holds the bot's audio as the browser's speaker does
(`PausableMediaStreamOutput`); audio the carrier has already queued plays on, which is what a caller on a
phone hears. The route that answers the stream is `voicelab.web.media_stream`.
"""

from __future__ import annotations

from typing import Any

from pipecat.serializers.twilio import TwilioFrameSerializer
from pipecat.transports.websocket.fastapi import (
    FastAPIWebsocketOutputTransport,
    FastAPIWebsocketParams,
    FastAPIWebsocketTransport,
)

from voicelab.pipeline.transport.mulaw import LINE_RATE
from voicelab.pipeline.transport.pausable import PausableOutput


class PausableMediaStreamOutput(PausableOutput, FastAPIWebsocketOutputTransport):
    """pipecat's WebSocket output holding the bot's audio on a pause, as `PausableWebRTCOutput` does; an
    interruption goes out as `clear`."""


class MediaStreamTransport(FastAPIWebsocketTransport):
    def output(self) -> PausableMediaStreamOutput:
        if not isinstance(self._output, PausableMediaStreamOutput):
            self._output = PausableMediaStreamOutput(self, self._client, self._params, name=self._output_name)
        return self._output


def media_stream_transport(websocket: Any, stream_sid: str, call_sid: str | None) -> MediaStreamTransport:
    serializer = TwilioFrameSerializer(
        stream_sid=stream_sid, call_sid=call_sid,
        params=TwilioFrameSerializer.InputParams(twilio_sample_rate=LINE_RATE, auto_hang_up=False))
    return MediaStreamTransport(websocket, FastAPIWebsocketParams(
        audio_in_enabled=True, audio_out_enabled=True, audio_in_passthrough=True, add_wav_header=False,
        audio_out_end_silence_secs=0, audio_out_10ms_chunks=2, serializer=serializer))
