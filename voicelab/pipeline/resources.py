"""What a configuration loads once and its calls share: the engine, the Piper voice, the recognizer."""

from __future__ import annotations

from typing import Any

from engines.decision.model import DecisionModel, load_decision_model
from engines.protocol import EngineLike
from engines.registry import open_engine_spec
from voicelab.pipeline.config import STREAMED_STT, PipelineConfig
from voicelab.pipeline.services.stt_pocketsphinx import new_decoder
from voicelab.pipeline.services.stt_whisper import SharedRecognizer, load_recognizer
from voicelab.pipeline.services.tts_piper import load_voice


class Resources:
    """What a configuration loads once and its calls share: engine, Piper voice, pocketsphinx decoder."""

    def __init__(self, cfg: PipelineConfig) -> None:
        self.cfg = cfg
        self.engine = open_engine_for(cfg)
        self.voice = load_voice()
        self.decoder: Any = new_decoder(cfg.sample_rate) if cfg.stt == "pocketsphinx" else None
        self.recognizer: SharedRecognizer | None = (
            load_recognizer(cfg.stt, beam_size=cfg.stt_beam, lm_weight=cfg.stt_lm) if cfg.stt in STREAMED_STT else None)
        self.decision: DecisionModel | None = load_decision_model() if cfg.turn_timeout()[0] == "decide" else None
        self.warm_up()

    def warm_up(self) -> None:
        """One throwaway generation and synthesis, so no call pays for first-use costs (torch, onnxruntime)."""
        self.engine.warm_up()
        warm_up_voice(self.voice)

    def close(self) -> None:
        self.engine.close()


def open_engine_for(cfg: PipelineConfig) -> EngineLike:
    """The engine a config's spec names (engines/registry.py): a tiny model, a checkpoint folder, a trace
    replay, an OpenAI-compatible or Mercury stream, or a timing profile (in-process or through the mock)."""
    return open_engine_spec(cfg.engine, sampler=cfg.sampler, base_url=cfg.base_url, api_key_env=cfg.api_key_env,
                            seed=cfg.seed, step_ms=cfg.step_ms)


def warm_up_voice(voice: Any) -> None:
    """onnxruntime's first synthesis is slow: pay it before any caller does."""
    for _ in voice.synthesize("Hello there."):
        pass
