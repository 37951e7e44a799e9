"""The shared options' defaults (`voicelab.cli.options.RUN_DEFAULTS`) are read from PipelineConfig's, so `voicelab
run` and `voicelab serve` with no options configure exactly the default pipeline."""

from __future__ import annotations

import inspect
from dataclasses import replace

import pytest

from voicelab.cli import options
from voicelab.cli.options import RUN_DEFAULTS, pipeline_config
from voicelab.gate import ShaperParams
from voicelab.pipeline.config import PipelineConfig


def test_the_defaults_make_the_default_config() -> None:
    assert pipeline_config(**RUN_DEFAULTS) == PipelineConfig()


def test_every_shared_option_has_a_default() -> None:
    params = inspect.signature(pipeline_config).parameters
    assert set(RUN_DEFAULTS) == {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY}


def test_the_defaults_follow_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """A default changed in PipelineConfig (or its shaper) is the CLI's default too, in the option's unit."""
    changed = replace(PipelineConfig(), engine="ar", vad_stop_secs=0.3, keep_leading_ms=None,
                      shaper=ShaperParams(first_min_words=3))
    monkeypatch.setattr(options, "PipelineConfig", lambda: changed)
    d = options._run_defaults()
    assert (d["engine"], d["vad_stop_ms"], d["keep_leading_ms"], d["first_chunk_words"]) == ("ar", 300.0, -1.0, 3)
