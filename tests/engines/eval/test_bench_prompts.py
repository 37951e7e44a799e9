"""`voicelab bench engines --prompts FILE`: the bench on the user's own prompts, per intent, with failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from voicelab.cli.app import app


def test_a_bad_prompt_file_is_one_line_naming_the_file_and_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    res = CliRunner().invoke(app, ["bench", "engines", "--prompts", str(missing)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.output.strip() == f"error: {missing}: No such file or directory"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": "hi", "expect": "fallback"}) + "\n{oops\n")
    res = CliRunner().invoke(app, ["bench", "engines", "--prompts", str(bad)])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1
    assert res.output.startswith(f"error: {bad}:2: not JSON")
    bad.write_text(json.dumps({"prompt": "hi", "expect": {"intent": "teleport"}}) + "\n")
    res = CliRunner().invoke(app, ["bench", "engines", "--prompts", str(bad)])
    assert res.exit_code == 2 and res.output.startswith(f"error: {bad}:1: unknown intent 'teleport'")


@pytest.mark.slow
@pytest.mark.skipif(not (Path(__file__).parents[3] / "engines/tiny/diffusion/config.json").exists(),
                    reason="tiny weights not trained")
def test_bench_on_my_prompts_gives_per_intent_rows_and_failures(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from engines.eval import engine_bench as bench

    monkeypatch.setattr(bench, "DEFAULT_RUNS", [("diffusion", "threshold", {}), ("ar", "autoregressive", {})])
    f = tmp_path / "mine.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in (
        {"prompt": "What time do you open on Saturday?", "expect": {"intent": "hours", "slots": {"day": "saturday"}}},
        {"prompt": "what is the capital of france", "expect": "fallback"},
        # a wrong expectation on purpose: listed as a failure
        {"prompt": "are you open on monday", "expect": {"intent": "hours", "slots": {"day": "friday"}}},
    )) + "\n")
    args = ["bench", "engines", "--prompts", str(f), "--rounds", "1", "--ood-garbled", "0", "--no-unseen",
            "--threads", "1"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "x AR" in lines[0] and "coherent" in lines[0] and "wrong tool calls" in lines[0]
    assert any(x.strip().startswith("hours") and "n    2" in x for x in lines)
    assert any(x.strip().startswith("fallback") for x in lines)
    assert any("FAIL 'are you open on monday'" in x and "wrong day" in x for x in lines)
    res = CliRunner().invoke(app, args + ["--json"])
    rows = json.loads(res.output)
    assert [r["engine"] for r in rows] == ["diffusion", "ar"] and rows[1]["x_ar"] == 1.0
    assert rows[0]["prompts_source"] == str(f) and rows[0]["by_intent"]["hours"]["n"] == 2
    assert rows[0]["failures"][0]["prompt"] == "are you open on monday"
