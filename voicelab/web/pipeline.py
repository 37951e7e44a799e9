"""The live pipeline: the one `voicelab run` plays fixtures through (`voicelab.pipeline.run_call`), built from
the same processors and the same `PipelineConfig`, with pipecat's SmallWebRTC transport at both ends in place
of the fixture player and the recording speaker:

    browser mic ─► SmallWebRTC input ─► STT ─► user aggregator (VAD + turn) ─► engine LLM ─► gate
        ─► Piper TTS ─► SmallWebRTC output ─► LivePlayout ─► assistant aggregator
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker

from voicelab.pipeline.assembly import build_core, stt_service, turn_vad
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.observers import EventObserver
from voicelab.pipeline.processors.watchdog import Limits, WatchedEngine
from voicelab.pipeline.resources import ResourcePool
from voicelab.pipeline.services.tts_piper import PackagedPiperTTS
from voicelab.pipeline.transport.live_playout import LivePlayout
from voicelab.pipeline.transport.mic_recorder import MicRecorder
from voicelab.pipeline.turns.factory import turn_strategies
from voicelab.web.calllog import LiveCallLog
from voicelab.web.live import CanvasView
from voicelab.web.page_observer import PageObserver


class LiveSession(Protocol):
    """What the live pipeline reads from its session and hands back to it (`voicelab.web.session.Session`);
    a protocol so that the session, which builds the pipeline, is not imported here."""

    cfg: PipelineConfig
    log: LiveCallLog
    pool: ResourcePool
    canvas: CanvasView
    page_observer: PageObserver
    engine: Any
    voice: Any
    mic: MicRecorder | None
    playout: LivePlayout | None


PipelineFactory = Callable[[LiveSession, Any], Awaitable[Any]]


async def build_live_pipeline(session: LiveSession, transport: Any) -> Any:
    """The `voicelab run` pipeline on a WebRTC transport; returns the `PipelineWorker` (not started).

    Mirrors `voicelab.pipeline.run_call` processor for processor; only the two ends differ. The engine, the
    Piper voice and the recognizer come from the session's `ResourcePool` (loaded once, shared).
    """
    cfg, log = session.cfg, session.log
    res = await session.pool.get(cfg)
    session.engine, session.voice = res.engine, res.voice
    sr = cfg.sample_rate
    stt = stt_service(cfg, log, recognizer=res.recognizer, interim=True)  # pocketsphinx: a decoder of its own
    # the VAD and smart-turn analyzers share the pool's model sessions: a model per session cost ~40 MB that
    # stayed until a full garbage collection freed the dead pipeline; one not opened yet opens in a thread, so
    # other sessions' audio keeps flowing meanwhile
    models = session.pool.turn_models
    vad, strategies = await asyncio.to_thread(
        lambda: (turn_vad(cfg, stt, models), turn_strategies(cfg, decision=res.decision, log=log,
                                                            models=models)))
    # the watchdogs of `run_call` (voicelab.pipeline.processors.watchdog): a stalled engine or TTS ends the reply,
    # not the session
    limits = Limits()
    core = build_core(cfg, log, engine=WatchedEngine(session.engine, log, limits), voice=session.voice, vad=vad,
                      strategies=strategies)
    if isinstance(core.tts, PackagedPiperTTS):
        core.tts.step_limit_s = limits.tts_chunk_s
    playout = LivePlayout(log, sr, on_words=session.canvas.spoken_words)
    session.mic, session.playout = MicRecorder(log, sr), playout  # the two channels of the session's recording
    pipeline = Pipeline([transport.input(), session.mic, stt, *core.middle, transport.output(), playout, core.asst_agg])
    return PipelineWorker(
        pipeline, params=PipelineParams(audio_in_sample_rate=sr, audio_out_sample_rate=sr),
        observers=[EventObserver(log), session.page_observer], idle_timeout_secs=None, enable_rtvi=False,
        enable_turn_tracking=False,
    )
