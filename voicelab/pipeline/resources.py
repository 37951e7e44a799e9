"""What a configuration loads once and its calls share (the engine, the Piper voice, the recognizer), and the
pool that shares those pieces between configurations (the live server's calls).

`Resources(cfg)` loads its own (`voicelab run`, a sweep's configuration). `ResourcePool` keeps each piece by
the settings it is loaded from (an engine by its spec and sampler, a recognizer by its `--stt`, beam and
language-model weight), so configurations that agree on them share it and those that differ do not.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from engines.decision.model import DecisionModel, load_decision_model
from engines.protocol import EngineLike
from engines.registry import open_engine_spec
from voicelab.measure.calllog import CallLog
from voicelab.pipeline.config import STREAMED_STT, PipelineConfig
from voicelab.pipeline.services.llm_service import EngineLLMService
from voicelab.pipeline.services.shared_voice import serialized
from voicelab.pipeline.services.stt_pocketsphinx import new_decoder
from voicelab.pipeline.services.stt_whisper import SharedRecognizer, load_recognizer
from voicelab.pipeline.services.tts_piper import load_voice
from voicelab.pipeline.turns.turn_models import TurnModels
from voicelab.rules.turn_kinds import DECISION

EngineKey = tuple[str, str | None, str | None, str | None, int, float | None]
RecognizerKey = tuple[str, int, float]


class Resources:
    """What a configuration loads once and its calls share: engine, Piper voice, recognizer, decision model and
    pocketsphinx decoder. With `pool`, every piece but the decoder comes from the pool (loaded there if missing)
    and is shared with the pool's other configurations; there is no decoder then (each call's service opens its
    own, a decoder holding one utterance at a time)."""

    def __init__(self, cfg: PipelineConfig, pool: ResourcePool | None = None) -> None:
        self.cfg = cfg
        self.pool = pool
        self.decoder: Any = None
        self.recognizer: SharedRecognizer | None
        self.decision: DecisionModel | None
        if pool is not None:
            self.engine, self.voice, self.recognizer, self.decision = pool.pieces(cfg)
            return
        self.engine = open_engine_for(cfg)
        self.voice = load_voice()
        if cfg.stt == "pocketsphinx":
            self.decoder = new_decoder(cfg.sample_rate)
        self.recognizer = load_recognizer_for(cfg) if recognizer_key(cfg) is not None else None
        self.decision = load_decision_model() if wants_decision(cfg) else None
        self.warm_up()

    def warm_up(self) -> None:
        """One throwaway generation and synthesis, so no call pays for first-use costs (torch, onnxruntime)."""
        self.engine.warm_up()
        warm_up_voice(self.voice)

    def close(self) -> None:
        """Close the engine (a pool's engines close with the pool)."""
        if self.pool is None:
            self.engine.close()


class ResourcePool:
    """Engines, recognizers, the Piper voice, the decision model and the VAD and smart-turn models: each loaded
    once for the settings it depends on (`engine_key`, `recognizer_key`) and shared by every configuration that
    agrees on them (the live server's calls).

    An engine runs its steps in its own single worker thread, so configurations sharing it take turns per step;
    a recognizer's passes take turns likewise. The VAD and smart-turn analyzers are per call, around shared
    model sessions (voicelab.pipeline.turns.turn_models).
    """

    def __init__(self) -> None:
        self.engines: dict[EngineKey, EngineLike] = {}
        self.recognizers: dict[RecognizerKey, SharedRecognizer] = {}
        self.voice: Any = None  # the Piper voice, serialized (voicelab.pipeline.services.shared_voice)
        self.decision: DecisionModel | None = None  # the turn-end decision model (one forward pass per question)
        self.turn_models = TurnModels()  # Silero's, smart-turn's ONNX sessions and the barge-in judge
        self._loading = threading.Lock()
        self._lock = asyncio.Lock()

    def missing(self, cfg: PipelineConfig) -> bool:
        """Whether `cfg` needs a piece not loaded yet."""
        rec = recognizer_key(cfg)
        return (engine_key(cfg) not in self.engines or self.voice is None
                or (rec is not None and rec not in self.recognizers)
                or (wants_decision(cfg) and self.decision is None))

    def preload(self, cfg: PipelineConfig) -> None:
        """Load what `cfg` needs now, in this thread (the serve command does it before listening)."""
        with self._loading:
            key = engine_key(cfg)
            if key not in self.engines:
                engine = open_engine_for(cfg)
                engine.warm_up()  # first-use costs (torch kernels) here, not in a caller's first reply
                self.engines[key] = engine
            rec = recognizer_key(cfg)
            if rec is not None and rec not in self.recognizers:
                self.recognizers[rec] = load_recognizer_for(cfg)
            if wants_decision(cfg) and self.decision is None:
                self.decision = load_decision_model()
            self.turn_models.preload(cfg, self.decision)
            if self.voice is None:
                voice = load_voice()
                warm_up_voice(voice)  # onnxruntime's first run, likewise
                # pipecat's LLM service imports its OpenAI adapter (about a second) the first time one is
                # made: pay that here too, not on the event loop while a browser is connecting
                EngineLLMService(self.engines[key], CallLog("warm-up"))
                self.voice = serialized(voice)  # calls synthesize at once: their steps take turns

    def pieces(self, cfg: PipelineConfig) -> tuple[EngineLike, Any, SharedRecognizer | None, DecisionModel | None]:
        """(engine, voice, recognizer, decision model) for `cfg`, loading what is missing in this thread."""
        if self.missing(cfg):
            self.preload(cfg)
        rec = recognizer_key(cfg)
        return (self.engines[engine_key(cfg)], self.voice, None if rec is None else self.recognizers[rec],
                self.decision if wants_decision(cfg) else None)

    async def get(self, cfg: PipelineConfig) -> Resources:
        """`Resources` for `cfg` from this pool, loading what is missing in a worker thread the first time."""
        async with self._lock:
            if self.missing(cfg):
                await asyncio.to_thread(self.preload, cfg)
            return Resources(cfg, self)

    def close(self) -> None:
        for engine in self.engines.values():
            engine.close()
        self.engines.clear()


def engine_key(cfg: PipelineConfig) -> EngineKey:
    """The settings `open_engine_for` reads: configurations that agree on them can share an engine."""
    return (cfg.engine, cfg.sampler, cfg.base_url, cfg.api_key_env, cfg.seed, cfg.step_ms)


def recognizer_key(cfg: PipelineConfig) -> RecognizerKey | None:
    """The settings `load_recognizer_for` reads (None: the configuration streams no recognizer)."""
    return (cfg.stt, cfg.stt_beam, cfg.stt_lm) if cfg.stt in STREAMED_STT else None


def wants_decision(cfg: PipelineConfig) -> bool:
    """Whether the configuration's turn-end kind asks the decision model (`voicelab.rules.turn_kinds`)."""
    return DECISION in cfg.turn_spec().entry.models


def open_engine_for(cfg: PipelineConfig) -> EngineLike:
    """The engine a config's spec names (engines/registry.py): a tiny model, a checkpoint folder, a trace
    replay, an OpenAI-compatible or Mercury stream, or a timing profile (in-process or through the mock)."""
    return open_engine_spec(cfg.engine, sampler=cfg.sampler, base_url=cfg.base_url, api_key_env=cfg.api_key_env,
                            seed=cfg.seed, step_ms=cfg.step_ms)


def load_recognizer_for(cfg: PipelineConfig) -> SharedRecognizer:
    """The streamed recognizer a config names (`--stt`), with its beam size and language-model weight."""
    return load_recognizer(cfg.stt, beam_size=cfg.stt_beam, lm_weight=cfg.stt_lm)


def warm_up_voice(voice: Any) -> None:
    """onnxruntime's first synthesis is slow: pay it before any caller does."""
    for _ in voice.synthesize("Hello there."):
        pass
