"""Price per call: the price rows, token counts from engine_done rows, cost per call and per 1,000 calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.simulated.profiles import PRICES, PROFILES
from voicelab.analysis.price import LOCAL, price_for, price_summary
from voicelab.measure.events import Event, EventKind
from voicelab.runs.synthetic import write_run


def done(call: str, turn: int, **payload: object) -> Event:
    return Event(call, turn, turn * 1_000_000, EventKind.ENGINE_DONE, dict(payload))


def test_price_rows_follow_the_engine() -> None:
    assert price_for({"engine_arg": "diffusion", "engine": "diffusion"}) is LOCAL
    assert price_for({"engine_arg": "ckpt/x", "engine_describe": {"folder": "ckpt/x", "params": 9}}) is LOCAL
    assert price_for({"engine_arg": "replay:t.jsonl", "engine_describe": {"trace": "t.jsonl"}}) is None
    mercury = PROFILES["mercury-2"].to_dict()
    assert price_for({"engine_arg": "profile:mercury-2", "engine_describe": {"profile": mercury}}) == PRICES["mercury-2"]
    assert price_for({"engine": "openai:x", "engine_describe": {"model": "Mercury-3"}}) == PRICES["mercury-3"]
    assert price_for({"engine_describe": {"profile": PROFILES["diffusiongemma"].to_dict()}}) is None  # unpublished
    assert (PRICES["mercury-2"].input_per_m, PRICES["mercury-2"].output_per_m) == (0.25, 0.75)
    assert (PRICES["mercury-3"].input_per_m, PRICES["mercury-3"].output_per_m) == (0.10, 0.35)


def test_cost_per_call_from_token_counts() -> None:
    events = [done("c0", 0, input_tokens=1000, output_tokens=200, tokens=200),
              done("c0", 1, input_tokens=1400, output_tokens=100, tokens=100),
              done("c1", 0, input_tokens=1000, output_tokens=300, tokens=300, cancelled=True)]  # billed anyway
    p = price_summary(events, {"engine_arg": "profile:mercury-2",
                               "engine_describe": {"profile": PROFILES["mercury-2"].to_dict()}})
    cost = (3400 * 0.25 + 600 * 0.75) / 1e6
    assert (p["input_tokens"], p["output_tokens"], p["turns"]) == (3400, 600, 3)
    assert p["output_tokens_per_turn"] == 200.0 and p["input_tokens_per_turn"] == pytest.approx(1133.3)
    assert p["per_call_usd"] == pytest.approx(cost / 2, abs=1e-8)
    assert p["per_1000_calls_usd"] == pytest.approx(1000 * cost / 2, abs=1e-5)
    assert p["note"] is None


def test_unknown_counts_or_price_give_null_never_zero() -> None:
    no_input = [done("c0", 0, tokens=50)]
    p = price_summary(no_input, {"engine": "mercury-2"})
    assert p["per_call_usd"] is None and "no token counts" in p["note"]
    local = price_summary(no_input, {"engine": "diffusion"})  # $0 per token: input counts do not matter
    assert local["per_call_usd"] == 0.0 and local["output_tokens"] == 50
    unpriced = price_summary(no_input, {"engine": "replay"})
    assert unpriced["per_call_usd"] is None and "no published price" in unpriced["note"]


def test_summary_json_carries_the_price(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    price = json.loads((run / "summary.json").read_text())["price"]
    assert price["per_1000_calls_usd"] == 0.0 and price["output_tokens"] > 0
