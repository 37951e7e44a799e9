"""What a configuration loads once and its calls share: the engine, the Piper voice, the recognizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engines.decision import DecisionModel, load_decision_model
from engines.engine import open_engine
from engines.protocol import EngineLike
from engines.trace import ReplayEngine
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.stt_pocketsphinx import new_decoder
from voicelab.pipeline.stt_whisper import SharedRecognizer, load_recognizer
from voicelab.pipeline.tts_piper import load_voice


class Resources:
    """What a configuration loads once and its calls share: engine, Piper voice, pocketsphinx decoder."""

    def __init__(self, cfg: PipelineConfig) -> None:
        self.cfg = cfg
        self.engine = open_engine_for(cfg)
        self.voice = load_voice()
        self.decoder: Any = new_decoder(cfg.sample_rate) if cfg.stt == "pocketsphinx" else None
        self.recognizer: SharedRecognizer | None = load_recognizer() if cfg.stt == "whisper" else None
        self.decision: DecisionModel | None = load_decision_model() if cfg.turn_timeout()[0] == "decide" else None
        self.warm_up()

    def warm_up(self) -> None:
        """One throwaway generation and synthesis, so no call pays for first-use costs (torch, onnxruntime)."""
        self.engine.warm_up()
        warm_up_voice(self.voice)

    def close(self) -> None:
        self.engine.close()


def open_engine_for(cfg: PipelineConfig) -> EngineLike:
    """The engine a config names: a shipped tiny model, a checkpoint folder, or a trace replay."""
    if cfg.engine.startswith("replay:"):
        return ReplayEngine(Path(cfg.engine.split(":", 1)[1]))
    return open_engine(cfg.engine, sampler=cfg.sampler)


def warm_up_voice(voice: Any) -> None:
    """onnxruntime's first synthesis is slow: pay it before any caller does."""
    for _ in voice.synthesize("Hello there."):
        pass
