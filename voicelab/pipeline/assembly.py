"""Assembly of the voice pipeline, and one recorded call through it.

    fixture player ─► STT ─► user aggregator (VAD + turn) ─► engine LLM ─► gate ─► Piper TTS
        ─► recording speaker ─► assistant aggregator (context keeps the words played)

`build_core` makes the processors between the recognizer and the speaker (shared by `voicelab run` and
`voicelab serve`); `run_call` plays one fixture through a fresh pipeline in real time and returns the call's
events, recording and ground truth. The run folder is written by `voicelab.runs`.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from pipecat.audio.vad.vad_analyzer import VADAnalyzer
from pipecat.frames.frames import CancelFrame, EndFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.services.stt_service import STTService
from pipecat.workers.runner import WorkerRunner

from engines.protocol import EngineLike
from voicelab.fixtures.format import Fixture
from voicelab.gate import ToolCall
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind, EventWriter
from voicelab.measure.recording import CallRecorder
from voicelab.pipeline.config import STREAMED_STT, PipelineConfig
from voicelab.pipeline.observers import EventObserver
from voicelab.pipeline.processors.confirm_replies import ToolConfirmation
from voicelab.pipeline.processors.faults_wrappers import FaultyEngine, SttFaults, hang_up_when_due
from voicelab.pipeline.processors.gate_processor import GateProcessor, ToolHandler
from voicelab.pipeline.processors.greeting import GreetingProcessor
from voicelab.pipeline.processors.preempt_hold import PreemptHold
from voicelab.pipeline.processors.speculative_processor import SpeculativeGateProcessor
from voicelab.pipeline.processors.watchdog import Limits, SttFinalWatchdog, WatchedEngine, run_within
from voicelab.pipeline.resources import Resources
from voicelab.pipeline.services.faulty_tts import faulty_tts_factory
from voicelab.pipeline.services.llm_service import EngineLLMService
from voicelab.pipeline.services.shared_voice import serialized
from voicelab.pipeline.services.speculative_tts import SpeculativePiperTTS
from voicelab.pipeline.services.stt_pocketsphinx import PocketsphinxSTTService
from voicelab.pipeline.services.stt_transcript import TranscriptSTTService
from voicelab.pipeline.services.stt_whisper import SharedRecognizer, StreamedPassesSTT, load_recognizer
from voicelab.pipeline.services.tts_piper import PackagedPiperTTS
from voicelab.pipeline.transport.fixture_input import FixturePlayerInput
from voicelab.pipeline.transport.line_codec import on_line
from voicelab.pipeline.transport.recording_output import RecordingOutput
from voicelab.pipeline.turns.factory import turn_strategies, vad_analyzer
from voicelab.pipeline.turns.turn_models import TurnModels
from voicelab.pipeline.turns.vad_pausing import PausingReportVAD
from voicelab.rules.faults import Fault, FaultPlan
from voicelab.rules.tool_reason import judge
from voicelab.rules.tool_reason import parse_mode as parse_tool_reason

K = EventKind


@dataclass
class RecordedCall:
    """One fixture call played through the pipeline in process, as `run_call` returns it (a call placed over a
    line is `voicelab.call.carrier.CallResult`)."""

    call_id: str
    fixture: Fixture
    log: CallLog
    stereo: np.ndarray  # the recorded call: frames x (caller, bot), int16
    sample_rate: int
    meta: dict[str, Any]  # calls/<id>.json: ground truth, schedule, context, tool calls
    truth: list[dict[str, Any]]
    duration_s: float
    player_max_lag_ms: float
    context: list[dict[str, Any]]
    tool_calls: list[dict[str, Any]]
    errors: int


def stt_service(cfg: PipelineConfig, log: CallLog, *, decoder: Any = None,
                recognizer: SharedRecognizer | None = None, interim: bool = False) -> STTService:
    """The recognizer a config names. A live call has no transcript; a pocketsphinx decoder holds one
    utterance at a time (None: the service loads its own); Whisper's model is shared. `interim`: Whisper's
    partial passes for every utterance (a live page shows them); else only where something reads them."""
    sr = cfg.sample_rate
    if cfg.stt in STREAMED_STT:
        if recognizer is None or recognizer.kind != cfg.stt:  # none yet, or one loaded for another --stt
            recognizer = load_recognizer(cfg.stt, beam_size=cfg.stt_beam, lm_weight=cfg.stt_lm)
        return StreamedPassesSTT(recognizer=recognizer, sample_rate=sr, interim=interim or cfg.preemptive)
    if cfg.stt == "pocketsphinx":
        return PocketsphinxSTTService(decoder=decoder, sample_rate=sr)
    return TranscriptSTTService(log, sample_rate=sr)


@dataclass
class Core:
    """The processors between the recognizer and the speaker, shared by `voicelab run` and `voicelab serve`."""

    context: Any
    user_agg: Any
    llm: Any
    gate: Any
    tts: Any
    asst_agg: Any
    tools: list[dict[str, Any]]
    greeting: Any = None  # GreetingProcessor, between the engine and the gate (None: no greeting)
    hold: Any = None  # PreemptHold after the TTS (None: no preemptive generation)

    @property
    def middle(self) -> list[Any]:
        """user aggregator -> engine -> [greeting] -> gate -> TTS -> [hold]: between the STT and the output
        transport."""
        return [p for p in (self.user_agg, self.llm, self.greeting, self.gate, self.tts, self.hold)
                if p is not None]


def make_tool_handler(tool_reason: str, llm: EngineLLMService, log: CallLog,
                      tools: list[dict[str, Any]]) -> ToolHandler:
    """The gate's tool handler: judge each tool call (`voicelab.rules.tool_reason`, on the caller's words of the turn
    the engine answered and the engine's commit-time confidence on the span), execute it (appended to `tools`,
    put back into the engine's history) or refuse it (appended with its reason, never into the history).

    Mode `confirm` may also ask (`voicelab.pipeline.processors.confirm_replies`, set as `llm.confirmation`): the row says
    `asked` and gives the `question` the gate says instead of the engine's words; the caller's yes brings the
    call back in the next reply, where it runs with outcome `confirmed`.

    Returns the outcome fields of the call's `tool_call` row; for an executed call of a held preemptive reply
    it returns None and logs the row when the turn confirms the reply (a withdrawn reply's call never runs).
    """
    mode, bar = parse_tool_reason(tool_reason)
    confirm = ToolConfirmation(log, tools) if mode == "confirm" else None
    llm.confirmation = confirm

    def act(call: ToolCall, turn: int, row: dict[str, Any]) -> None:
        tools.append({"turn": turn, **call.to_payload(), **row})
        if row["outcome"] in ("executed", "confirmed"):
            llm.remember_tool_call(call.raw)

    def ask(c: ToolConfirmation, call: ToolCall, turn: int, confidence: float | None,
            row: dict[str, Any]) -> dict[str, Any] | None:
        asked = c.asked(call, turn, confidence)
        if llm.holding:  # a preemptive reply: its question waits for an answer once the turn confirms the reply
            def wait() -> None:
                c.wait(asked, turn)

            llm.run_when_released(wait)
        elif not c.wait(asked, turn):
            return None  # another question waits: `wait` refused and logged it
        row["question"] = asked.question
        act(call, turn, row)
        return row

    def handler(call: ToolCall, turn: int, confidence: float | None) -> dict[str, Any] | None:
        yes = confirm.take(call) if confirm is not None else None
        if yes is not None:  # the reply to the caller's yes: the asked call runs now, with its own confidence
            conf = yes.asked.confidence
            done: dict[str, Any] = {"outcome": "confirmed", "reason": yes.reason,
                                    "confidence": None if conf is None else round(conf, 4)}
            act(call, turn, done)
            return done
        verdict = judge(mode, call.name, call.args, llm.current_user, llm.earlier_user, confidence, bar)
        row = {"outcome": verdict.outcome, "reason": verdict.reason}
        if verdict.ask and confirm is not None:
            return ask(confirm, call, turn, confidence, row)
        if verdict.execute and llm.holding:  # a preemptive reply: act (and log) only once the turn confirms it
            def released() -> None:
                conf = None if confidence is None else round(confidence, 4)
                log.log(K.TOOL_CALL, turn, {**call.to_payload(), "confidence": conf, **row})
                act(call, turn, row)

            llm.run_when_released(released)
            return None
        act(call, turn, row)
        return row

    return handler


def turn_vad(cfg: PipelineConfig, stt: STTService, models: TurnModels | None = None) -> VADAnalyzer:
    """The user aggregator's VAD; with Whisper it also reports the speech's first silent frame to the recognizer,
    which starts its final pass then instead of at the confirmed stop (voicelab.pipeline.turns.vad_pausing)."""
    vad = vad_analyzer(cfg, models)
    watch = cfg.stt_early_final and isinstance(stt, StreamedPassesSTT)
    return PausingReportVAD(vad, stt.speech_pausing) if watch else vad


def build_core(cfg: PipelineConfig, log: CallLog, *, engine: EngineLike, voice: Any, vad: Any = None,
               strategies: Any = None, tts_factory: Any = None) -> Core:
    """Context, aggregators, engine service, gate and TTS for one call; the caller adds both ends.

    The assistant aggregator goes after the output transport (it keeps only what was played). A destructive
    tool call needs a reason (`cfg.tool_reason`, voicelab.rules.tool_reason: the caller's words of that turn, or the
    engine's commit-time confidence on the span); executed ones are put back into the engine's history, refused
    ones are not; both are logged as `tool_call` rows with their outcome and reason.
    """
    context = LLMContext()
    user_agg, asst_agg = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(
            vad_analyzer=vad if vad is not None else vad_analyzer(cfg),
            user_turn_strategies=strategies if strategies is not None else turn_strategies(cfg),
            user_turn_stop_timeout=3.0),
    )
    llm = EngineLLMService(engine, log, preemptive=cfg.preemptive, context=context)
    tools: list[dict[str, Any]] = []
    tool_handler = make_tool_handler(cfg.tool_reason, llm, log, tools)

    if cfg.speculative_tts is None:
        gate = GateProcessor(log, cfg.policy, cfg.shaper, tool_handler=tool_handler)
        make_tts = tts_factory or PackagedPiperTTS
    else:  # confident uncommitted text is synthesized early and held (voicelab.rules.speculative)
        gate = SpeculativeGateProcessor(log, cfg.policy, cfg.shaper, tool_handler=tool_handler,
                                        threshold=cfg.speculative_tts)
        make_tts = tts_factory or SpeculativePiperTTS
    tts = make_tts(voice=voice, log=log, sample_rate=cfg.sample_rate, keep_leading_ms=cfg.keep_leading_ms)

    @asst_agg.event_handler("on_assistant_turn_stopped")
    async def _on_assistant_turn_stopped(_agg: Any, message: Any) -> None:
        log.log(K.CONTEXT_UPDATE, log.request_turn,
                {"content": message.content, "interrupted": bool(message.interrupted)})

    greeting = GreetingProcessor(cfg.greeting) if cfg.greeting.strip() else None
    hold = PreemptHold() if cfg.preemptive else None
    return Core(context, user_agg, llm, gate, tts, asst_agg, tools, greeting, hold)


async def run_call(fixture: Fixture, cfg: PipelineConfig, res: Resources, call_id: str, *,
                   writer: EventWriter | None = None,
                   tts_factory: Any = None, engine: Any = None, limits: Limits | None = None,
                   faults: tuple[Fault, ...] = (), own_decoder: bool = False) -> RecordedCall:
    """Play one fixture through a fresh pipeline in real time; return what the run folder keeps of it.

    `tts_factory(voice=, log=, sample_rate=, keep_leading_ms=)` and `engine` replace the TTS and the engine
    (tests inject failing ones); by default they come from `res`. `limits` are the watchdogs'
    (`voicelab.pipeline.processors.watchdog`), `faults` the failures to inject (`voicelab.rules.faults`). `own_decoder`: a
    pocketsphinx decoder of its own (calls played at the same time cannot share one utterance buffer).
    """
    limits = limits or Limits()
    sr = cfg.sample_rate
    log = CallLog(call_id, writer)
    scheduler = fixture.scheduler(no_reply_timeout_s=cfg.no_reply_timeout_s, greeting=bool(cfg.greeting.strip()))
    recorder = CallRecorder(sr, seconds=30.0)
    script_s = sum(t.duration_s + t.start.delay_s for t in fixture.turns)
    call_limit_s = limits.call_limit_s(script_s, len(fixture.turns), cfg.no_reply_timeout_s)
    plan = FaultPlan(faults, log)
    worker_box: dict[str, Any] = {}

    async def end_call() -> None:
        w = worker_box.get("worker")
        if w is not None:
            await w.queue_frame(EndFrame())

    def on_done() -> None:
        asyncio.get_running_loop().create_task(end_call())

    player = FixturePlayerInput(on_line(fixture, cfg.line), scheduler, log, recorder, on_done=on_done,
                                max_call_s=call_limit_s, clip_grid_ms=cfg.clip_grid_ms)
    stt = stt_service(cfg, log, decoder=None if own_decoder else res.decoder, recognizer=res.recognizer)
    raw_engine = engine if engine is not None else res.engine
    watched = WatchedEngine(FaultyEngine(raw_engine, plan, log) if faults else raw_engine, log, limits)
    if any(f.component == "tts" for f in faults):
        tts_factory = faulty_tts_factory(plan, tts_factory)
    # calls played at once share the voice: espeak-ng (Piper's phonemizer) is process-global, one thread at a time
    core = build_core(cfg, log, engine=watched, voice=serialized(res.voice), tts_factory=tts_factory,
                      strategies=turn_strategies(cfg, decision=res.decision, log=log), vad=turn_vad(cfg, stt))
    if isinstance(core.tts, PackagedPiperTTS):
        core.tts.step_limit_s = limits.tts_chunk_s
    context, tools = core.context, core.tools
    out = RecordingOutput(log, recorder, scheduler)

    stt_side = [stt, SttFaults(plan, log), SttFinalWatchdog(log, limits.stt_final_s)] if faults else \
        [stt, SttFinalWatchdog(log, limits.stt_final_s)]
    pipeline = Pipeline([player, *stt_side, *core.middle, out, core.asst_agg])
    worker = PipelineWorker(
        pipeline, params=PipelineParams(audio_in_sample_rate=sr, audio_out_sample_rate=sr),
        observers=[EventObserver(log)], idle_timeout_secs=None, enable_rtvi=False, enable_turn_tracking=False,
    )
    worker_box["worker"] = worker
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)

    async def hang_up() -> None:  # from the caller's side, as a transport does on disconnect; a queued
        # EndFrame may be stuck behind a stalled processor, a CancelFrame (a system frame) is not
        await player.push_frame(CancelFrame(reason="hang-up"))

    caller = asyncio.get_running_loop().create_task(hang_up_when_due(plan, hang_up))
    try:
        await run_within(runner.run(), limits, call_limit_s, log, finished=player.done, hang_up=hang_up,
                         cancel_runner=runner.cancel)
    finally:
        caller.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await caller
    out.finish()
    if core.llm.confirmation is not None:  # a question the caller never answered: its call did not run
        core.llm.confirmation.close()
    end_ns = max(log.now_ns(), recorder.end * 1_000_000_000 // sr)
    log.log(K.CALL_END, -1, {"errors": log.errors}, t_ns=end_ns)

    truth = [{"turn": u.turn, "clip_start_s": u.clip_start_ns / 1e9, "clip_end_s": u.clip_end_ns / 1e9,
              "speech_start_s": u.speech_start_ns / 1e9, "speech_end_s": u.speech_end_ns / 1e9,
              "expect": u.expect, "text": u.text} for u in log.utterances]
    meta = {"fixture": fixture.name, "fixture_path": str(fixture.path), "utterances": truth,
            "scheduled": [asdict(c) for c in scheduler.scheduled()],
            "context": context.get_messages(), "tool_calls": tools,
            "player_max_lag_ms": round(player.stats.max_lag_ms, 1)}
    return RecordedCall(call_id=call_id, fixture=fixture, log=log, stereo=recorder.stereo(), sample_rate=sr,
                      meta=meta, truth=truth, duration_s=recorder.end / sr,
                      player_max_lag_ms=player.stats.max_lag_ms,
                      context=list(context.get_messages()), tool_calls=tools, errors=log.errors)
