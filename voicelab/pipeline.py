"""Assembly of the voice pipeline and one recorded call through it.

    fixture player ─► STT ─► user aggregator (VAD + turn) ─► engine LLM ─► gate ─► Piper TTS
        ─► recording speaker ─► assistant aggregator (context keeps the words played)

`PipelineConfig` says which engine, sampler, gate policy, phrase shaper, STT, VAD, turn and barge-in
strategies to use. Defaults: Silero VAD (stop_secs 0.12, pipecat's default is 0.2) and smart-turn v3 from the pipecat wheel (a turn that
sounds unfinished ends after 2 s of silence), streaming pocketsphinx, barge-in `words:3` (while the bot
talks a user turn, and so an interruption, needs three recognised words: backchannels such as "uh huh" pass;
`vad` stops the bot on any speech, faster but it takes backchannels for barge-ins), the pinned gate with a
short first chunk, Piper with leading silence trimmed. The latency levers of latency-budget.md wired here:
short first chunk (shaper), VAD stop_secs, streaming STT, trimmed TTS leading silence, a warmed-up engine and
voice; not wired: speculative generation at the VAD stop (pipecat's SpeculationGate would hold our snapshot
frames, and the gate pins through them). `Resources` holds what is loaded once per configuration (engine, Piper voice,
pocketsphinx decoder) and shared by its calls. `run_call` plays one fixture in real time and returns the
call's events, recording and ground truth; the run folder is written by `voicelab.run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from voicelab.events import EventKind, EventWriter
from voicelab.fixtures import Fixture
from voicelab.gate import GatePolicy, ShaperParams, ToolCall
from voicelab.observers import CallLog

K = EventKind

BARGE_IN_HELP = "vad (any speech stops the bot) or words:N (N recognised words while the bot talks)"
TURN_HELP = ("smart[:S] (smart-turn v3 after the VAD stop; an unfinished-sounding turn ends after S s of "
             "silence, default 2) or timeout:S (S seconds of silence)")


class PipelineConfigError(ValueError):
    """A bad pipeline setting; the message names the field."""


@dataclass
class PipelineConfig:
    """One configuration of the pipeline (see the module doc). `label` names it in reports."""

    engine: str = "diffusion"  # "diffusion", "ar", a checkpoint folder, or "replay:TRACE.jsonl"
    sampler: str | None = None  # None: the engine's default (threshold / autoregressive)
    policy: str = "pinned"
    shaper: ShaperParams = field(default_factory=ShaperParams)
    stt: str = "pocketsphinx"  # or "transcript"
    vad: str = "silero"  # or "webrtc"
    vad_start_secs: float = 0.2
    vad_stop_secs: float = 0.12  # lever: pipecat defaults to 0.2; smart-turn guards mid-sentence pauses
    barge_in: str = "words:3"
    turn: str = "smart"
    sample_rate: int = 16000
    keep_leading_ms: float | None = 20.0  # Piper's leading silence kept before each chunk
    no_reply_timeout_s: float = 6.0
    seed: int = 0
    label: str | None = None

    def __post_init__(self) -> None:
        GatePolicy.parse(self.policy)
        if self.stt not in ("pocketsphinx", "transcript"):
            raise PipelineConfigError(f"stt: '{self.stt}' is not pocketsphinx or transcript")
        if self.vad not in ("silero", "webrtc"):
            raise PipelineConfigError(f"vad: '{self.vad}' is not silero or webrtc")
        self.barge_in_words()
        self.turn_timeout()
        if not 0.0 < self.vad_stop_secs <= 3.0:
            raise PipelineConfigError(f"vad_stop_secs: {self.vad_stop_secs} is not in (0, 3]")
        if not 0.0 < self.vad_start_secs <= 1.0:
            raise PipelineConfigError(f"vad_start_secs: {self.vad_start_secs} is not in (0, 1]")
        if self.sample_rate != 16000:
            raise PipelineConfigError("sample_rate: the pipeline runs at 16000 Hz (Silero, smart-turn, pocketsphinx)")

    def barge_in_words(self) -> int | None:
        """None for VAD barge-in, else the word count."""
        if self.barge_in == "vad":
            return None
        kind, _, n = self.barge_in.partition(":")
        if kind != "words" or not n.isdigit() or int(n) < 1:
            raise PipelineConfigError(f"barge_in: '{self.barge_in}' is not {BARGE_IN_HELP}")
        return int(n)

    def turn_timeout(self) -> tuple[str, float]:
        """("smart", max silence for an unfinished turn) or ("timeout", silence timeout), in seconds."""
        kind, _, s = self.turn.partition(":")
        if kind == "smart" and not s:
            return "smart", 2.0
        try:
            value = float(s)
        except ValueError:
            value = -1.0
        if kind not in ("smart", "timeout") or value <= 0:
            raise PipelineConfigError(f"turn: '{self.turn}' is not {TURN_HELP}")
        return kind, value

    def engine_label(self) -> str:
        if self.engine.startswith("replay:"):
            return "replay"
        return self.engine if self.engine in ("diffusion", "ar") else Path(self.engine).name

    def slug(self) -> str:
        """Short config name for folder names, e.g. diffusion-threshold-pinned."""
        if self.label:
            return self.label
        policy = self.policy.replace(":", "")
        sampler = self.sampler or {"diffusion": "threshold", "ar": "autoregressive"}.get(self.engine, "default")
        return "-".join([self.engine_label(), sampler, policy])

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["shaper"] = asdict(self.shaper)
        return d


class Resources:
    """What a configuration loads once and its calls share: engine, Piper voice, pocketsphinx decoder."""

    def __init__(self, cfg: PipelineConfig) -> None:
        self.cfg = cfg
        self.engine = open_engine_for(cfg)
        from voicelab.tts_piper import load_voice

        self.voice = load_voice()
        self.decoder: Any = None
        if cfg.stt == "pocketsphinx":
            from voicelab.stt_pocketsphinx import new_decoder

            self.decoder = new_decoder(cfg.sample_rate)
        self.warm_up()

    def warm_up(self) -> None:
        """One throwaway generation and synthesis, so no call pays for first-use costs (torch, onnxruntime)."""
        answer = getattr(self.engine, "answer", None)
        if callable(answer):
            answer([{"role": "user", "content": "hello"}])
        for _ in self.voice.synthesize("Hello there."):
            pass

    def close(self) -> None:
        close = getattr(self.engine, "close", None)
        if callable(close):
            close()


def open_engine_for(cfg: PipelineConfig) -> Any:
    """The engine a config names: a shipped tiny model, a checkpoint folder, or a trace replay."""
    if cfg.engine.startswith("replay:"):
        from engines.trace import ReplayEngine

        return ReplayEngine(Path(cfg.engine.split(":", 1)[1]))
    from engines.engine import open_engine  # the submodule: works even where `engines` is a namespace

    return open_engine(cfg.engine, sampler=cfg.sampler)


@dataclass
class CallResult:
    call_id: str
    fixture: Fixture
    log: CallLog
    wav_path: Path | None
    truth: list[dict[str, Any]]
    duration_s: float
    player_max_lag_ms: float
    context: list[dict[str, Any]]
    tool_calls: list[dict[str, Any]]
    errors: int


def _vad(cfg: PipelineConfig) -> Any:
    from pipecat.audio.vad.vad_analyzer import VADParams

    params = VADParams(start_secs=cfg.vad_start_secs, stop_secs=cfg.vad_stop_secs)
    if cfg.vad == "webrtc":
        from voicelab.vad_webrtc import WebRTCVADAnalyzer

        return WebRTCVADAnalyzer(sample_rate=cfg.sample_rate, params=params)
    from pipecat.audio.vad.silero import SileroVADAnalyzer

    return SileroVADAnalyzer(sample_rate=cfg.sample_rate, params=params)


def _words_while_bot_speaks(base: type) -> type:
    """MinWordsUserTurnStartStrategy that starts the turn at the VAD's start while the bot is silent.

    Word counting only matters while the bot talks (it keeps backchannels from stopping it). When the bot
    is silent, waiting for the recogniser's first words would start the turn late, after the VAD's stop
    even, and the turn-stop strategy would then miss that stop and wait for its timeout.
    """
    from pipecat.frames.frames import (
        BotStartedSpeakingFrame,
        BotStoppedSpeakingFrame,
        VADUserStartedSpeakingFrame,
    )
    from pipecat.turns.types import ProcessFrameResult

    class WordsWhileBotSpeaks(base):  # type: ignore[misc, valid-type]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._bot_talking = False

        async def process_frame(self, frame: Any) -> Any:
            if isinstance(frame, BotStartedSpeakingFrame):
                self._bot_talking = True
            elif isinstance(frame, BotStoppedSpeakingFrame):
                self._bot_talking = False
            elif isinstance(frame, VADUserStartedSpeakingFrame) and not self._bot_talking:
                await self.trigger_user_turn_started()
                return ProcessFrameResult.STOP
            return await super().process_frame(frame)

    return WordsWhileBotSpeaks


def _turn_strategies(cfg: PipelineConfig) -> Any:
    from pipecat.turns.user_start.min_words_user_turn_start_strategy import MinWordsUserTurnStartStrategy
    from pipecat.turns.user_start.transcription_user_turn_start_strategy import (
        TranscriptionUserTurnStartStrategy,
    )
    from pipecat.turns.user_start.vad_user_turn_start_strategy import VADUserTurnStartStrategy
    from pipecat.turns.user_turn_strategies import UserTurnStrategies

    words = cfg.barge_in_words()
    if words is None:
        start: list[Any] = [VADUserTurnStartStrategy(), TranscriptionUserTurnStartStrategy()]
    else:
        start = [_words_while_bot_speaks(MinWordsUserTurnStartStrategy)(min_words=words, use_interim=True)]
    kind, timeout = cfg.turn_timeout()
    if kind == "smart":
        from pipecat.audio.turn.smart_turn.base_smart_turn import SmartTurnParams
        from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
        from pipecat.turns.user_stop.turn_analyzer_user_turn_stop_strategy import (
            TurnAnalyzerUserTurnStopStrategy,
        )

        analyzer = LocalSmartTurnAnalyzerV3(params=SmartTurnParams(stop_secs=timeout))
        stop: list[Any] = [TurnAnalyzerUserTurnStopStrategy(turn_analyzer=analyzer)]
    else:
        from pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy import (
            SpeechTimeoutUserTurnStopStrategy,
        )

        stop = [SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=timeout)]
    return UserTurnStrategies(start=start, stop=stop)


def quiet_pipecat_logs(level: str = "WARNING") -> None:
    """Pipecat logs every frame decision at DEBUG through loguru; a run keeps warnings and errors."""
    import sys

    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level=level)
    logging.getLogger("piper").setLevel(logging.WARNING)


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

    @property
    def middle(self) -> list[Any]:
        """user aggregator -> engine -> gate -> TTS: what goes between the STT and the output transport."""
        return [self.user_agg, self.llm, self.gate, self.tts]


def build_core(cfg: PipelineConfig, log: CallLog, *, engine: Any, voice: Any, vad: Any = None,
               strategies: Any = None, tts_factory: Any = None) -> Core:
    """Context, aggregators, engine service, gate and TTS for one call; the caller adds both ends.

    The assistant aggregator goes after the output transport (it keeps only what was played); executed
    tool calls are logged and put back into the engine's history.
    """
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )

    from voicelab.gate_processor import GateProcessor
    from voicelab.llm_service import EngineLLMService
    from voicelab.tts_piper import PiperTTSService

    context = LLMContext()
    user_agg, asst_agg = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(
            vad_analyzer=vad if vad is not None else _vad(cfg),
            user_turn_strategies=strategies if strategies is not None else _turn_strategies(cfg),
            user_turn_stop_timeout=3.0),
    )
    llm = EngineLLMService(engine, log)
    tools: list[dict[str, Any]] = []

    def tool_handler(call: ToolCall, turn: int) -> None:
        tools.append({"turn": turn, **call.to_payload()})
        llm.remember_tool_call(call.raw)

    gate = GateProcessor(log, cfg.policy, cfg.shaper, tool_handler=tool_handler)
    make_tts = tts_factory or PiperTTSService
    tts = make_tts(voice=voice, log=log, sample_rate=cfg.sample_rate, keep_leading_ms=cfg.keep_leading_ms)

    @asst_agg.event_handler("on_assistant_turn_stopped")
    async def _on_assistant_turn_stopped(_agg: Any, message: Any) -> None:
        log.log(K.CONTEXT_UPDATE, log.request_turn,
                {"content": message.content, "interrupted": bool(message.interrupted)})

    return Core(context, user_agg, llm, gate, tts, asst_agg, tools)


async def run_call(fixture: Fixture, cfg: PipelineConfig, res: Resources, call_id: str, *,
                   calls_dir: Path | None = None, writer: EventWriter | None = None,
                   tts_factory: Any = None, engine: Any = None, max_extra_s: float = 60.0) -> CallResult:
    """Play one fixture through a fresh pipeline in real time; write calls/<call_id>.wav and .json.

    `tts_factory(voice=, log=, sample_rate=, keep_leading_ms=)` and `engine` replace the TTS and the engine
    (tests inject failing ones); by default they come from `res`.
    """
    from pipecat.frames.frames import EndFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.workers.runner import WorkerRunner

    from voicelab.observers import EventObserver
    from voicelab.stt_pocketsphinx import PocketsphinxSTTService, TranscriptSTTService
    from voicelab.transport import CallRecorder, FixturePlayerInput, RecordingOutput

    sr = cfg.sample_rate
    log = CallLog(call_id, writer)
    scheduler = fixture.scheduler(no_reply_timeout_s=cfg.no_reply_timeout_s)
    recorder = CallRecorder(sr, seconds=30.0)
    script_s = sum(t.duration_s + t.start.delay_s for t in fixture.turns)
    worker_box: dict[str, Any] = {}

    async def end_call() -> None:
        w = worker_box.get("worker")
        if w is not None:
            await w.queue_frame(EndFrame())

    def on_done() -> None:
        asyncio.get_running_loop().create_task(end_call())

    player = FixturePlayerInput(fixture, scheduler, log, recorder, on_done=on_done,
                                max_call_s=script_s + cfg.no_reply_timeout_s * len(fixture.turns) + max_extra_s)
    stt: Any = (PocketsphinxSTTService(decoder=res.decoder, sample_rate=sr) if cfg.stt == "pocketsphinx"
                else TranscriptSTTService(log, sample_rate=sr))
    core = build_core(cfg, log, engine=engine if engine is not None else res.engine, voice=res.voice,
                      tts_factory=tts_factory)
    context, tools = core.context, core.tools
    out = RecordingOutput(log, recorder, scheduler)

    pipeline = Pipeline([player, stt, *core.middle, out, core.asst_agg])
    worker = PipelineWorker(
        pipeline, params=PipelineParams(audio_in_sample_rate=sr, audio_out_sample_rate=sr),
        observers=[EventObserver(log)], idle_timeout_secs=None, enable_rtvi=False, enable_turn_tracking=False,
    )
    worker_box["worker"] = worker
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)

    async def watchdog() -> None:
        await player.done.wait()
        await asyncio.sleep(10.0)  # EndFrame should have ended it by now
        await worker.cancel()

    dog = asyncio.get_running_loop().create_task(watchdog())
    try:
        await runner.run()
    finally:
        dog.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await dog
    out.finish()
    end_ns = max(log.now_ns(), recorder.end * 1_000_000_000 // sr)
    log.log(K.CALL_END, -1, {"errors": log.errors}, t_ns=end_ns)

    truth = [{"turn": u.turn, "clip_start_s": u.clip_start_ns / 1e9, "clip_end_s": u.clip_end_ns / 1e9,
              "speech_start_s": u.speech_start_ns / 1e9, "speech_end_s": u.speech_end_ns / 1e9,
              "expect": u.expect, "text": u.text} for u in log.utterances]
    wav_path = None
    if calls_dir is not None:
        calls_dir.mkdir(parents=True, exist_ok=True)
        wav_path = calls_dir / f"{call_id}.wav"
        recorder.write_wav(wav_path)
        meta = {"call_id": call_id, "fixture": fixture.name, "fixture_path": str(fixture.path),
                "sample_rate": sr, "wav": wav_path.name, "utterances": truth,
                "scheduled": [asdict(c) for c in scheduler.scheduled()],
                "context": context.get_messages(), "tool_calls": tools,
                "player_max_lag_ms": round(player.stats.max_lag_ms, 1)}
        (calls_dir / f"{call_id}.json").write_text(json.dumps(meta, indent=2, default=str), encoding="utf-8")
    return CallResult(call_id=call_id, fixture=fixture, log=log, wav_path=wav_path, truth=truth,
                      duration_s=recorder.end / sr, player_max_lag_ms=player.stats.max_lag_ms,
                      context=list(context.get_messages()), tool_calls=tools, errors=log.errors)
