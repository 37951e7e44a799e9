"""The validation split that picks a training stage: drawn from generators only, never from the sets it is judged on.

A stage is picked on `--set val` (held-out combinations of the corpus and garbled requests, each from its own
seed), then the unseen-caller set is read once. These tests hold the split apart from the unseen set and from the
out-of-domain set's own draws."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.eval.evaluate import Prompt, main, ood_set, unseen_set, validation_examples, validation_garbled


def _user_text(p: Prompt) -> str:
    return p.messages[-1]["content"]


def test_the_split_holds_no_unseen_prompt() -> None:
    unseen = {_user_text(p) for p in unseen_set()}
    val = {e.messages[-1]["content"] for e in validation_examples(300)} | {_user_text(p) for p in validation_garbled(120)}
    assert not unseen & val


def test_garbled_requests_are_their_own_draw_and_seeded() -> None:
    ood = {_user_text(p) for p in ood_set(120) if p.kind == "garbled"}
    val = [_user_text(p) for p in validation_garbled(120)]
    assert val == [_user_text(p) for p in validation_garbled(120)]
    assert len(set(val) & ood) < 0.1 * len(val)  # a short request may come out the same from two draws
    assert all(p.expect.intent == "fallback" for p in validation_garbled(5))


@pytest.mark.slow
def test_set_val_reads_both_parts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "val.json"
    main(["--model", "diffusion", "--set", "val", "--n", "4", "--ood-garbled", "3", "--out", str(out)])
    res = json.loads(out.read_text())
    assert set(res) == {"val", "val_garbled"}
    assert res["val"]["n"] == 4 and res["val_garbled"]["n"] == 3
    assert "unseen" not in capsys.readouterr().out
