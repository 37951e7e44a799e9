"""What a run's calls would cost: tokens per turn from the events times a price per million tokens.

Pure: no pipecat, no torch (`engines.simulated.profiles` is plain Python). Token counts come from each `engine_done`
row: `input_tokens` / `output_tokens` (the HTTP engine's usage, or the local tokenizer's counts; see
`engines.protocol.ReportsUsage`), else `tokens` (the generated length) for the output. Every generation is
counted, cancelled ones too: a provider bills a barge-in's half answer.

Where a run's price comes from is its engine kind's (`engines.registry.EngineKind.price`): `local` engines (the
tiny ones, checkpoint folders) run on this machine with no per-token charge ($0); `model` kinds (openai:, mercury:,
profile:) take the named model's published price, from the kind's own list, then
`engines.simulated.profiles.PRICES` (US dollars per million input / output tokens: Mercury 2 $0.25 / $0.75,
Mercury 3 $0.10 / $0.35, as published, with their sources) or the profile's row; `unpublished` ones (replay:)
have none. An engine with no published price gets null costs and a note, never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engines.registry import KINDS, find_kind
from engines.simulated.profiles import PRICES, PROFILES, Price
from voicelab.measure.events import Event, EventKind

LOCAL = Price(0.0, 0.0, "local engine on this machine: no per-token charge", None)
LOCAL_ALIASES = ("tiny-diffusion", "tiny-ar")  # the tiny engines under older names in run configs


def _norm(name: str) -> str:
    return name.strip().lower().replace(" ", "-").replace("_", "-")


def price_for(config: Mapping[str, Any]) -> Price | None:
    """The price row of a run's engine (config.json), or None when nobody publishes one."""
    desc = config.get("engine_describe") or {}
    profile = desc.get("profile") if isinstance(desc, Mapping) else None
    if isinstance(profile, Mapping):  # a timing profile carries its provider's price (or None)
        p = profile.get("price")
        return Price(**p) if isinstance(p, Mapping) else None
    names = [str(config.get(k) or "") for k in ("engine_arg", "engine")]
    if isinstance(desc, Mapping):
        names.append(str(desc.get("model") or ""))
    local = {*LOCAL_ALIASES, *(n for k in KINDS if k.price == "local" for n in k.names)}
    for raw in names:  # a spec, a run label or a model name
        n = _norm(raw)
        kind = find_kind(n)
        if kind is not None and kind.price == "model" and kind.prefix:  # priced by the model it names
            n = n.split(":", 1)[1]
            if n in kind.prices:
                return kind.prices[n]
        if n in PRICES:
            return PRICES[n]
        if n in PROFILES:
            return PROFILES[n].price
        if n in local:
            return LOCAL
    if isinstance(desc, Mapping) and desc.get("folder") and desc.get("params"):
        return LOCAL  # a checkpoint folder (engines.local.engine.Engine.describe) runs here
    return None


def _r(x: float | None, nd: int) -> float | None:
    return None if x is None else round(x, nd)


def price_summary(events: Iterable[Event], config: Mapping[str, Any]) -> dict[str, Any]:
    """summary.json `price`: the price row, token counts (total and per answered turn) and cost per call and per
    1,000 calls."""
    evs = list(events)
    calls = len({e.call_id for e in evs})
    done_rows = [e for e in evs if e.kind == EventKind.ENGINE_DONE]
    done = [e.payload for e in done_rows]
    turns = len({(e.call_id, e.turn) for e in done_rows})  # a turn answered twice counts once
    inputs = [p.get("input_tokens") for p in done]
    outputs = [p.get("output_tokens", p.get("tokens")) for p in done]
    known_in = [int(x) for x in inputs if x is not None]
    known_out = [int(x) for x in outputs if x is not None]
    price = price_for(config)
    notes = []
    cost: float | None = None
    if price is None:
        notes.append(f"no published price for engine '{config.get('engine_arg') or config.get('engine')}'")
    elif len(known_out) < len(done) or (len(known_in) < len(done) and price.input_per_m > 0):
        notes.append("some generations logged no token counts: cost unknown")
    else:
        cost = (sum(known_in) * price.input_per_m + sum(known_out) * price.output_per_m) / 1e6
    per_call = cost / calls if cost is not None and calls else None
    return {
        "input_per_m": None if price is None else price.input_per_m,
        "output_per_m": None if price is None else price.output_per_m,
        "source": None if price is None else price.source,
        "date": None if price is None else price.date,
        "generations": len(done),
        "input_tokens": sum(known_in) if len(known_in) == len(done) and done else None,
        "output_tokens": sum(known_out) if len(known_out) == len(done) and done else None,
        "turns": turns,
        "input_tokens_per_turn": _r(sum(known_in) / turns, 1) if known_in and len(known_in) == len(done) else None,
        "output_tokens_per_turn": _r(sum(known_out) / turns, 1) if known_out and len(known_out) == len(done)
        else None,
        "per_call_usd": _r(per_call, 8),
        "per_1000_calls_usd": _r(None if per_call is None else 1000 * per_call, 5),
        "note": "; ".join(notes) or None,
    }
