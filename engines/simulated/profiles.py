"""Engine timing profiles: named, sourced rows of first-answer latency and output speed (and prices),
which `profile:NAME` engines replay with the tiny engines' answers (engines/simulated/profile_engine.py).

Figures and their sources: docs/engines.md. "Comparison feed"
rows are one feed's measurements of public endpoints on one review date (the notes do not record
the date); vendor rows are the vendor's own configuration, flagged `vendor_figure`.

Plain Python, no torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from engines.errors import EngineSpecError

FEED = "comparison feed of public endpoints (docs/engines.md)"


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens, as published."""

    input_per_m: float
    output_per_m: float
    source: str
    date: str | None  # when the price was published or read; None where the notes do not say


@dataclass(frozen=True, slots=True)
class Profile:
    name: str  # the model name in lower case with hyphens: `profile:NAME`
    kind: str  # "diffusion" (reveals blocks with revisions) or "ar" (token by token)
    first_answer_s: float  # request to the first visible text
    tokens_per_s: float  # output speed after the first text
    source: str
    date: str | None  # measurement or publication date; None where the source gives none
    vendor_figure: bool  # the vendor's own configuration, not a measured public endpoint
    price: Price | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PRICES: dict[str, Price] = {
    "mercury-2": Price(0.25, 0.75, "Inception, via contentbuffer/vercel (docs/engines.md)", None),
    "mercury-3": Price(0.10, 0.35, "Inception, as published", None),
}


def _feed(name: str, kind: str, first: float, tps: float) -> Profile:
    return Profile(name, kind, first, tps, FEED, None, False, PRICES.get(name))


PROFILES: dict[str, Profile] = {p.name: p for p in (
    _feed("celeris-1", "diffusion", 0.64, 2086.0),
    _feed("mercury-2", "diffusion", 3.53, 802.0),
    _feed("gemini-2.5-flash", "ar", 0.47, 221.0),
    _feed("grok-4.1-fast", "ar", 0.54, 138.0),
    _feed("gpt-4.1-nano", "ar", 0.63, 181.0),
    _feed("gpt-oss-20b", "ar", 0.65, 313.0),
    _feed("gemini-3-flash", "ar", 0.75, 199.0),
    _feed("gpt-4.1-mini", "ar", 0.76, 80.0),
    Profile("mercury-2-blackwell", "diffusion", 3.53, 1009.0, "Inception, on NVIDIA Blackwell", None, True,
            PRICES["mercury-2"], "first answer borrowed from the feed's mercury-2 row: the vendor gives none"),
    Profile("gemini-diffusion", "diffusion", 0.84, 1479.0, "Google, May 2025 (gigazine; ai-tldr)", "2025-05", True,
            None, "1,479 t/s sampling; the 0.84 s overhead listed separately is used as the first answer"),
    Profile("diffusiongemma", "diffusion", 0.426, 1008.0, "vLLM blog, DiffusionGemma on one H100 (FP8, batch 1)",
            "2026-06-10", True, None, "> 1,000 t/s; first answer = the blog's mean TTFT for 4096-token prompts"),
)}


def get_profile(name: str) -> Profile:
    """The row named `name`; an EngineSpecError listing the names otherwise."""
    p = PROFILES.get(name.strip().lower())
    if p is None:
        raise EngineSpecError(f"unknown profile '{name}' (one of {', '.join(PROFILES)})")
    return p


def profile_table() -> list[dict[str, Any]]:
    """One flat row per profile, for `voicelab profiles` and the README."""
    rows = []
    for p in PROFILES.values():
        rows.append({"name": p.name, "kind": p.kind, "first_answer_s": p.first_answer_s,
                     "tokens_per_s": p.tokens_per_s, "vendor_figure": p.vendor_figure, "source": p.source,
                     "date": p.date or "", "price_in_per_m": p.price.input_per_m if p.price else None,
                     "price_out_per_m": p.price.output_per_m if p.price else None, "note": p.note})
    return rows
