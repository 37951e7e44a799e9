"""The commit-policy probe: revising streams are flagged, append-only ones are not, and the safe policies follow."""

from __future__ import annotations

import json

import pytest

from engines.eval.probe import DEFAULT_PROMPTS, probe


@pytest.fixture(scope="module")
def tiny():
    import torch

    torch.set_num_threads(1)
    from engines.local.engine import open_engine

    return {"diffusion": open_engine("diffusion"), "ar": open_engine("ar")}


def test_tiny_ar_stream_is_append_only_and_every_policy_is_safe(tiny, tmp_path) -> None:
    rep = probe(tiny["ar"], out_dir=tmp_path)
    assert rep["streams"] == 11 and rep["tokens"] >= 200  # eleven caller lines, one generation each
    assert rep["append_only"] and not rep["revising"] and rep["revision_events"] == 0
    assert {"final", "prefix", "stable:1", "pinned:prefix"} <= set(rep["safe_policies"])
    saved = json.loads((tmp_path / "probe.json").read_text())
    assert saved["tokens"] == rep["tokens"] and (tmp_path / "probe.png").stat().st_size > 10_000


@pytest.mark.slow
def test_mock_diffusing_stream_is_revising_and_only_final_is_safe(tiny) -> None:
    from engines.hosted.mercury import MercuryEngine
    from engines.simulated.mock_server import MockOptions, RunningMock

    with RunningMock(MockOptions(sources=dict(tiny))) as mock:
        rep = probe(MercuryEngine("celeris-1", base_url=mock.url, diffusing=True))
        ar = probe(MercuryEngine("gpt-oss-20b", base_url=mock.url))  # an AR profile over HTTP
    # the mock answers all eleven lines in one stream: the same ~300 tiny-engine tokens as above, which a
    # text stream's canvas holds as ~130-150 word positions (how many depends on the shipped weights' wording)
    assert rep["streams"] == 1 and rep["tokens"] >= 120
    assert rep["revising"] and rep["revision_events"] > 0 and rep["latest_change_ms_before_end"] >= 0
    assert "final" in rep["safe_policies"] and "prefix" not in rep["safe_policies"]
    assert "pinned:prefix" not in rep["safe_policies"]  # a remote model cannot be made to keep pinned text
    assert ar["append_only"] and "prefix" in ar["safe_policies"]


def test_revising_tiny_sampler_is_measured_not_assumed(tiny) -> None:
    from engines.local.engine import open_engine

    eng = open_engine("diffusion", "revising")
    rep = probe(eng, DEFAULT_PROMPTS)
    assert rep["tokens"] >= 200 and "final" in rep["safe_policies"]
    # the tiny revising sampler honours pin(): pinned policies stay safe whatever it revises
    assert "pinned:prefix" in rep["safe_policies"]
    assert rep["revising"] == (rep["revision_events"] > 0)
