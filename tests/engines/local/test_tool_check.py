"""The tool-call check: a call the model is unsure of is never shown, and the answer asks instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engines.local import TINY, TINY_TOOL_FLOORS
from engines.local.checkpoint import load
from engines.local.engine import Engine, open_engine
from engines.local.samplers import SamplerConfig, Special, Step
from engines.local.samplers.tool_check import _held, first_token
from engines.snapshot import Snapshot

# a misheard reschedule ("move" heard as "moo") that the shipped models answer with a tool call when unchecked
MISHEARD = [{"role": "user", "content": "could we moo the visit for irene to tuesday 1 30 pm"}]
CLEAR = [{"role": "user", "content": "i need to cancel my appointment on tuesday my name is ben"}]


def _run(eng: Engine, messages: list[dict[str, str]], pin_each: bool = False, **cfg: object) -> list[Snapshot]:
    gen = eng.generate(messages, **cfg)
    out = []
    for snap in gen:
        out.append(snap)
        if pin_each:
            gen.pin(snap.prefix_len)
    return out


def _shown_never_changes(snaps: list[Snapshot]) -> None:
    seen: dict[int, int] = {}
    for s in snaps:
        for i, (t, m) in enumerate(zip(s.tokens, s.masked, strict=True)):
            if not m and i < s.prefix_len:
                assert seen.setdefault(i, t) == t, f"shown position {i} changed at step {s.step}"


# the diffusion model ships with its check off (docs/decisions/tool-call-check.md), so these tests turn it on
PICKED = TINY_TOOL_FLOORS


@pytest.fixture(scope="module", params=["diffusion", "ar"])
def shipped(request: pytest.FixtureRequest) -> Engine:
    return open_engine(request.param, tool_floor=PICKED[request.param])


def test_the_shipped_ar_model_checks_its_tool_calls_and_the_diffusion_model_does_not() -> None:
    assert open_engine("ar").config.tool_floor == PICKED["ar"]
    assert open_engine("diffusion").config.tool_floor == 0.0
    for m in PICKED:  # both carry the reprompt, so turning the check on needs the floor alone
        assert open_engine(m).special.reprompt


def test_the_floors_are_those_the_validation_split_picked() -> None:
    import json

    for m, floor in PICKED.items():
        assert json.loads((TINY / "stages" / f"tool_floor_{m}.json").read_text())["floor"] == floor


def test_the_vocabulary_is_decoded_for_tool_tokens_only_when_a_generation_checks() -> None:
    eng = open_engine("diffusion")  # ships with the check off
    list(eng.generate(CLEAR))
    assert "checking_special" not in eng.__dict__
    list(eng.generate(CLEAR, tool_floor=0.5))
    assert eng.checking_special.tool_open and eng.checking_special.reprompt == eng.special.reprompt


def test_an_unsure_tool_call_is_vetoed_and_the_answer_asks(shipped: Engine) -> None:
    unchecked = _run(shipped, MISHEARD, tool_floor=0.0)[-1].text()
    assert unchecked.startswith("[reschedule(")  # what the check is for
    snaps = _run(shipped, MISHEARD, pin_each=True)
    assert snaps[-1].done
    assert "[" not in snaps[-1].text() and snaps[-1].text().startswith("sorry")
    # nothing of the vetoed call was ever shown as committed text, so nothing was pinned or released
    assert all("[" not in s.text() for s in snaps)
    _shown_never_changes(snaps)


def test_a_clear_request_keeps_its_tool_call(shipped: Engine) -> None:
    checked = _run(shipped, CLEAR, pin_each=True)
    assert checked[-1].text() == _run(shipped, CLEAR, tool_floor=0.0)[-1].text()
    assert checked[-1].text().startswith("[cancel(name=ben, day=tuesday)]")
    _shown_never_changes(checked)


def test_a_span_is_held_until_it_closes(shipped: Engine) -> None:
    snaps = _run(shipped, CLEAR)
    for s in snaps:
        assert s.prefix_len == 0 or "]" in s.text()


def test_the_forwards_spent_on_a_vetoed_call_are_counted(shipped: Engine) -> None:
    unchecked = _run(shipped, MISHEARD, tool_floor=0.0)
    closed = next(s for s in unchecked if "]" in s.text())
    vetoed = _run(shipped, MISHEARD)[-1]
    # the forwards that wrote the call, and for a bidirectional model the check's own
    assert vetoed.forwards == closed.forwards + (0 if shipped.ckpt.model.config.causal else 1)


def test_first_token_never_opens_a_tool_call_or_ends_the_answer(shipped: Engine) -> None:
    gen = shipped.generate(MISHEARD)
    tok = first_token(shipped.ckpt.model, gen.prompt, shipped.checking_special, shipped.config.canvas)
    assert tok not in shipped.checking_special.tool_open | shipped.checking_special.stop_ids | {shipped.checking_special.mask_id}


def test_tool_tokens_come_from_the_tokenizer(shipped: Engine) -> None:
    tok = shipped.ckpt.tokenizer
    assert {tok.piece(i) for i in shipped.checking_special.tool_open} == {"["}
    assert all("]" in tok.piece(i) for i in shipped.checking_special.tool_close)
    assert shipped.checking_special.tool_close


def test_held_reads_only_a_leading_span() -> None:
    sp = Special(mask_id=0, stop_ids=frozenset({9}), tool_open=frozenset({1}), tool_close=frozenset({2}))

    def step(tokens: list[int], masked: list[bool]) -> Step:
        return Step(tokens, masked, [1.0] * len(tokens), tokens, 4, 0, 0, 1, False)

    assert _held(step([0, 0, 0, 0], [True] * 4), sp) == (0, False)
    assert _held(step([5, 1, 2, 9], [False] * 4), sp) is None  # a "[" later on is no leading span
    assert _held(step([1, 5, 0, 2], [False, False, True, False]), sp) == (2, False)
    assert _held(step([1, 5, 2, 9], [False] * 4), sp) == (3, True)
    assert _held(step([1, 5, 5, 5], [False] * 4), sp) == (4, False)


_settings = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("sampler", ["threshold", "low_confidence", "revising"])
@_settings
@given(seed=st.integers(0, 10_000), floor=st.sampled_from([0.0, 0.2, 0.999]))
def test_a_forced_tool_opener_on_a_random_model_keeps_every_sampler_contract(
        tiny_diffusion: Path, sampler: str, seed: int, floor: float) -> None:
    """Any floor, any sampler: the answer finishes, pinned text never changes, and the check never shows a
    span that failed it."""
    eng = Engine(load(tiny_diffusion), sampler)
    opener = next(iter(eng.checking_special.tool_open), None)
    if opener is None:
        pytest.skip("the random checkpoint's tokenizer has no '[' token")
    cfg = SamplerConfig(canvas=8, block_size=4, steps_per_block=2, seed=seed, temperature=0.7, threshold=0.5,
                        tool_floor=floor, first_token=opener)
    snaps = _run(eng, [{"role": "user", "content": "hi"}], pin_each=True,
                 **{k: getattr(cfg, k) for k in cfg.__dataclass_fields__})
    assert snaps and snaps[-1].done
    if sampler != "revising":
        _shown_never_changes(snaps)


def test_the_autoregressive_sampler_honours_a_given_first_token(tiny_ar: Path) -> None:
    eng = Engine(load(tiny_ar), "autoregressive")
    snaps = _run(eng, [{"role": "user", "content": "hi"}], first_token=5)
    assert snaps[0].tokens[0] == 5 and not snaps[0].masked[0]


def test_a_released_call_shows_the_probabilities_it_was_committed_with(shipped: Engine) -> None:
    committed: dict[int, float] = {}
    for s in _run(shipped, CLEAR, tool_floor=0.0):
        for i, m in enumerate(s.masked):
            if not m:
                committed.setdefault(i, s.confidence[i])
    released = next(s for s in _run(shipped, CLEAR) if s.prefix_len)
    end = next(i for i, p in enumerate(released.pieces) if "]" in p) + 1
    assert [released.confidence[i] for i in range(end)] == [committed[i] for i in range(end)]


@pytest.mark.parametrize(("key", "value", "says"), [("tool_floor", 1.5, "tool_floor must lie in [0, 1]"),
                                                    ("reprompt", 5, "reprompt must be text")])
def test_a_bad_check_setting_in_config_json_is_one_clear_error(tiny_diffusion: Path, tmp_path: Path, key: str,
                                                               value: object, says: str) -> None:
    import json
    import re
    import shutil

    from engines.errors import CheckpointError

    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_diffusion, folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.setdefault("voicelab", {})[key] = value
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match=re.escape(says)) as e:
        open_engine(str(folder))
    assert str(folder / "config.json") in str(e.value)
