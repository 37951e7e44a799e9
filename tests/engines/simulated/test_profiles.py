"""Timing profiles: the rows, the reveal schedule, and the profile engine's measured timing."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from engines.errors import EngineSpecError
from engines.simulated.profiles import PROFILES, get_profile, profile_table
from engines.simulated.reveal import reveal_schedule
from engines.text_canvas import split_pieces

# five caller lines: the tiny engines answer each and the profile engine joins them (~150 tokens), so the
# output speed is measured over tens of milliseconds even at 2,086 t/s
LONG = [{"role": "user", "content": "what time do you open on monday\ncan i book a tune up on friday at 10 am my "
         "name is anna\nwhere is order 4821\nwhat is your address\ncan you cancel my appointment on tuesday "
         "my name is ben"}]


@pytest.fixture(scope="module")
def sources():
    import torch

    torch.set_num_threads(1)
    from engines.local.engine import open_engine

    return {"diffusion": open_engine("diffusion"), "ar": open_engine("ar")}


class VirtualClock:
    """The profile engine's clock and cancel event, on virtual time: a wait moves the clock to its deadline at once.

    The engine's own schedule (reveal times, the first-answer wait, skipping overdue reveals) runs as written;
    only how late this machine's timers wake is gone, so the figures are the schedule's and hold on a busy
    machine (a real-time median of three missed the 20 ms bound when both cores were taken)."""

    def __init__(self) -> None:
        self.ns = 1_000_000_000_000
        clock = self

        class Event:
            def __init__(self) -> None:
                self._set = False

            def set(self) -> None:
                self._set = True

            def is_set(self) -> bool:
                return self._set

            def wait(self, timeout: float) -> bool:
                if not self._set:
                    clock.ns += math.ceil(timeout * 1e9)
                return self._set

        self.Event = Event

    def monotonic_ns(self) -> int:
        return self.ns


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> VirtualClock:
    from engines.simulated import profile_engine

    c = VirtualClock()
    monkeypatch.setattr(profile_engine, "time", SimpleNamespace(monotonic_ns=c.monotonic_ns))
    monkeypatch.setattr(profile_engine, "threading", SimpleNamespace(Event=c.Event))
    return c


def test_rows_carry_the_published_figures() -> None:
    assert (get_profile("celeris-1").first_answer_s, get_profile("celeris-1").tokens_per_s) == (0.64, 2086.0)
    m2 = get_profile("Mercury-2")
    assert m2.kind == "diffusion" and m2.price is not None and (m2.price.input_per_m, m2.price.output_per_m) == (0.25, 0.75)
    assert {p.name for p in PROFILES.values() if p.vendor_figure} == {"mercury-2-blackwell", "gemini-diffusion",
                                                                      "diffusiongemma"}
    for p in PROFILES.values():
        assert p.name == p.name.lower() and " " not in p.name and p.kind in ("diffusion", "ar") and p.source
    assert len(profile_table()) == len(PROFILES)
    with pytest.raises(EngineSpecError, match="unknown profile 'gpt-9'"):
        get_profile("gpt-9")


def test_schedule_timing_and_revisions() -> None:
    pieces = split_pieces("on monday we are open from 9 am to 6 pm and on friday until 8 pm, see you then.")
    ar = reveal_schedule(pieces, get_profile("gpt-4.1-mini"), seed=3)
    assert ar[0].t_s == 0.76 and len(ar) == len(pieces)
    assert ar[-1].t_s == pytest.approx(0.76 + (len(pieces) - 1) / 80.0)
    assert all(b.pieces[:len(a.pieces)] == a.pieces for a, b in zip(ar, ar[1:], strict=False))  # append-only
    df = reveal_schedule(pieces, get_profile("mercury-2"), seed=3, block_size=8, steps_per_block=4)
    assert df[0].t_s == 3.53 and df[-1].pieces == tuple(pieces) and df[-1].final == len(pieces)
    changed = sum(a != b for x, y in zip(df, df[1:], strict=False) for a, b in zip(x.pieces, y.pieces, strict=False))
    assert changed > 0  # drafts revise positions
    assert reveal_schedule(pieces, get_profile("mercury-2"), seed=3, block_size=8) == \
        reveal_schedule(pieces, get_profile("mercury-2"), seed=3, block_size=8)  # seeded


def _check(profile_name: str, sources) -> None:
    from engines.simulated.profile_engine import ProfileEngine, measure_timing

    p = get_profile(profile_name)
    eng = ProfileEngine(p, sources["diffusion" if p.kind == "diffusion" else "ar"])
    eng.content(LONG)  # five answers take longer than a first answer here: compute them ahead (cached per chat)
    gen = eng.generate(LONG)  # on the virtual clock (the `clock` fixture): the schedule's own times
    snaps = list(gen)
    ttft, tps = measure_timing(snaps, gen.t_start_ns)
    assert abs(ttft - p.first_answer_s) <= 1e-6, (profile_name, ttft)
    # one reveal per due time; the speed over ~150 tokens is the profile's to within the rounding of reveal
    # times to whole tokens
    assert abs(tps / p.tokens_per_s - 1) <= 0.05, (profile_name, tps)
    assert snaps[-1].done and gen.usage.output_tokens == snaps[-1].eos > 100
    revised = sum(len(s.revised) for s in snaps)
    assert (revised > 0) == (p.kind == "diffusion") and eng.kind == ("diffusion" if p.kind == "diffusion"
                                                                     else "autoregressive")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["celeris-1", "gemini-2.5-flash"])
def test_profile_reproduces_first_answer_and_speed(name, sources, clock) -> None:
    _check(name, sources)


@pytest.mark.slow
def test_every_profile_reproduces_its_timing(sources, clock) -> None:
    for name in PROFILES:
        _check(name, sources)


def test_a_one_line_answer_is_computed_within_the_first_answer_wait(sources, clock) -> None:
    from engines.simulated.profile_engine import ProfileEngine, measure_timing

    p = get_profile("diffusiongemma")  # the shortest first answer, 0.426 s
    eng = ProfileEngine(p, sources["diffusion"])
    compute = eng.content

    def slow_content(messages):  # computing the answer takes 0.3 s of the (virtual) clock
        out = compute(messages)
        clock.ns += 300_000_000
        return out

    eng.content = slow_content  # type: ignore[method-assign]
    gen = eng.generate([{"role": "user", "content": "where is order 4821"}])
    snaps = list(gen)
    # the wait counts from the request: the compute time is inside it, not added to it
    assert abs(measure_timing(snaps, gen.t_start_ns)[0] - p.first_answer_s) <= 1e-6


async def test_async_profile_stream_cancels_during_the_first_answer_wait(sources) -> None:
    import asyncio
    import time

    from engines.simulated.profile_engine import ProfileEngine

    gen = ProfileEngine(get_profile("mercury-2"), sources["diffusion"]).generate(LONG)
    asyncio.get_running_loop().call_later(0.3, gen.cancel)
    t0 = time.monotonic()
    assert [s async for s in gen] == [] and time.monotonic() - t0 < 1.5


def test_registry_resolves_specs_and_rejects_bad_ones(tmp_path, monkeypatch) -> None:
    from engines.hosted.mercury import MercuryEngine
    from engines.registry import open_engine_spec
    from engines.simulated.profile_engine import ProfileEngine

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    eng = open_engine_spec("openai:gpt-4.1-nano", base_url="http://127.0.0.1:9/v1")
    assert eng.name == "openai:gpt-4.1-nano" and eng.describe()["auth"] == "none"
    m = open_engine_spec("mercury:mercury-2+diffusing")
    assert isinstance(m, MercuryEngine) and m.kind == "diffusion"
    p = open_engine_spec("profile:gpt-4.1-mini")
    assert isinstance(p, ProfileEngine) and p.kind == "autoregressive"
    p.close()
    for spec, kw, msg in [("gpt5", {}, "unknown engine 'gpt5'"),
                          ("profile:nope", {}, "unknown profile 'nope'"),
                          ("ar", {"sampler": "threshold"}, "autoregressive checkpoint cannot run"),
                          ("diffusion", {"sampler": "autoregressive"}, "diffusion checkpoint cannot run"),
                          ("diffusion", {"sampler": "greedy"}, "unknown sampler 'greedy'"),
                          ("openai:gpt-4.1-nano", {"sampler": "threshold"}, "takes no sampler"),
                          ("mercury:mercury-2+fast", {}, "unknown option"),
                          ("openai:x", {"api_key_env": "VOICELAB_NOT_SET"}, "VOICELAB_NOT_SET")]:
        with pytest.raises(EngineSpecError, match=msg):
            open_engine_spec(spec, **kw)


def test_profile_at_http_runs_through_the_mock() -> None:
    from engines.registry import open_engine_spec
    from engines.simulated.profile_engine import measure_timing

    eng = open_engine_spec("profile:gemini-2.5-flash@http")
    try:
        gen = eng.generate([{"role": "user", "content": "what time do you open on monday"}])
        snaps = list(gen)
        ttft, _ = measure_timing(snaps, gen.t_start_ns)
        assert snaps[-1].text() == "on monday we are open from 9 am to 6 pm." and eng.name.endswith("@http")
        assert 0.47 <= ttft < 0.47 + 0.25  # the profile's wait plus loopback HTTP
    finally:
        eng.close()
