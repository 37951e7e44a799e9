"""The resource pool shares a piece only between configurations that agree on the settings it is loaded
from: one engine for configurations that differ in their recognizer, one recognizer per `--stt`, beam and
language-model weight. Loading is faked: the test is about the keys, not the models."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

import voicelab.pipeline.resources as resources
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.resources import ResourcePool, Resources


class FakeEngine:
    def __init__(self) -> None:
        self.closed = False

    def warm_up(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class FakeVoice:
    def synthesize(self, _text: str) -> list[bytes]:
        return [b""]


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every recognizer loaded, as (kind, beam_size, lm_weight); engines and the voice are fakes."""
    loaded: list[tuple[Any, ...]] = []

    def load_recognizer(kind: str, beam_size: int = 1, lm_weight: float = 0.0) -> Any:
        loaded.append((kind, beam_size, lm_weight))
        return SimpleNamespace(kind=kind, beam_size=beam_size, lm_weight=lm_weight)

    monkeypatch.setattr(resources, "open_engine_for", lambda _cfg: FakeEngine())
    monkeypatch.setattr(resources, "load_recognizer", load_recognizer)
    monkeypatch.setattr(resources, "load_voice", FakeVoice)
    monkeypatch.setattr(resources, "EngineLLMService", lambda *_a: None)
    return loaded


def _cfg(**changes: Any) -> PipelineConfig:
    # no decision model, no Silero, no smart-turn, no barge-in judge: nothing real to load
    return replace(PipelineConfig(stt="whisper", vad="webrtc", turn="timeout:500", barge_in="vad"), **changes)


def test_configs_differing_only_in_beam_do_not_share_a_recognizer(loads: list[tuple[Any, ...]]) -> None:
    pool = ResourcePool()
    greedy, beam = Resources(_cfg(stt_beam=1), pool), Resources(_cfg(stt_beam=5), pool)
    assert greedy.recognizer is not beam.recognizer
    assert greedy.recognizer is not None and beam.recognizer is not None
    assert (greedy.recognizer.beam_size, beam.recognizer.beam_size) == (1, 5)
    assert greedy.engine is beam.engine and greedy.voice is beam.voice  # what does not depend on the beam is shared
    again = Resources(_cfg(stt_beam=5), pool)
    assert again.recognizer is beam.recognizer and len(loads) == 2
    lm = Resources(_cfg(stt_beam=1, stt_lm=0.0), pool)
    assert lm.recognizer is not greedy.recognizer and len(loads) == 3


def test_pool_shares_across_calls_and_closes_its_engines(loads: list[tuple[Any, ...]]) -> None:
    pool = ResourcePool()

    async def two() -> tuple[Resources, Resources]:
        return await pool.get(_cfg()), await pool.get(_cfg(stt="pocketsphinx"))

    a, b = asyncio.run(two())
    assert a.engine is b.engine and a.voice is b.voice
    assert b.recognizer is None and b.decoder is None  # a pocketsphinx decoder is each call's own
    a.close()  # a pool's engine closes with the pool, not with one call's resources
    assert not a.engine.closed
    pool.close()
    assert a.engine.closed and not pool.engines
