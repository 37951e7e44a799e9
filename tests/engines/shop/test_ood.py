"""The out-of-domain set, the recogniser noise model, --prompts files and the bench's OOD figures."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import pytest

from engines.eval.evaluate import load_prompts, ood_set
from engines.shop import corpus
from engines.shop.answers import score_reply
from engines.shop.asr_noise import FUNCTION_WORDS, NoiseConfig, damage, garble
from engines.shop.ood import OFF_TOPIC, REAL, UNRELATED, garbled_requests, ood_prompts


def test_ood_set_expects_no_tool_call_and_is_disjoint_from_training() -> None:
    prompts = ood_set(60)
    assert {p.expect.intent for p in prompts} == {"fallback"}
    assert {p.kind for p in prompts} == {"off_topic", "unrelated", "real", "garbled"}
    train = corpus.generate(corpus.TRAIN_N, corpus.TRAIN_SEED)  # engines/local/train.py's corpus
    said = {m["content"] for e in train for m in e.messages if m["role"] == "user"}
    assert not [p.messages[-1]["content"] for p in prompts if p.messages[-1]["content"] in said]
    # different source sentences, not only different seeds
    sources = set(corpus._QUESTIONS) | set(corpus._OFF_TOPIC_ACTS)
    assert not (set(OFF_TOPIC) | set(UNRELATED) | set(REAL)) & sources


def test_garbled_requests_are_seeded() -> None:
    a, b = garbled_requests(30, 5), garbled_requests(30, 5)
    assert a == b and a != garbled_requests(30, 6)
    assert len(ood_prompts(30)) == len(OFF_TOPIC) + len(UNRELATED) + len(REAL) + 30


def test_noise_model_keeps_protected_words_and_damage_destroys_one() -> None:
    text = "please cancel my appointment on monday my name is ben"
    for seed in range(40):
        r = random.Random(seed)
        noisy = garble(text, r, protect={"cancel", "monday", "ben"}).split()
        assert {"cancel", "monday", "ben"} <= set(noisy)
        hurt = damage(text, random.Random(seed), ["cancel", "monday", "ben"]).split()
        assert not {"cancel", "monday", "ben"} <= set(hurt)
    with pytest.raises(ValueError):
        damage("hello there", random.Random(0), ["cancel"])


def test_damage_can_hear_the_destroyed_word_as_a_function_word() -> None:
    # "monday 3 30 pm" heard as "monday the 30 pm": still shaped like a request, with its hour gone
    text = "move me to monday 3 30 pm"
    quiet = NoiseConfig(drop=0.0, substitute=0.0, insert=0.0, sound_alike=0.0)  # no light noise elsewhere
    for seed in range(20):
        hurt = damage(text, random.Random(seed), ["3"], quiet, as_function_word=1.0).split()
        assert hurt[:4] == text.split()[:4] and hurt[5:] == ["30", "pm"] and hurt[4] in FUNCTION_WORDS
    # off by default: the out-of-domain set's garbled requests do not move
    assert damage(text, random.Random(3), ["3"]) == damage(text, random.Random(3), ["3"], as_function_word=0.0)


def test_corpus_answers_ood_callers_without_tool_calls() -> None:
    ex = corpus.generate(3000, 11)
    ood = [e for e in ex if e.intent in ("fallback", "clarify")]
    assert len(ood) > 300 and {e.reply for e in ood} == {corpus.render(k) for k in ("fallback", "clarify", "clarify_day")}
    assert all(score_reply(e.reply, "fallback").correct for e in ood)
    # light noise keeps the slot values of in-domain requests
    for e in ex:
        if e.intent in ("cancel", "reschedule"):
            said = e.messages[-1]["content"].split()
            assert e.slots["name"] in said and e.slots["day"] in said


def test_prompts_file_loads_and_bad_lines_name_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps({"prompt": "do you sell pizza", "expect": "fallback"}) + "\n\n"
                 + json.dumps({"prompt": "are you open on friday", "expect": {"intent": "hours",
                                                                            "slots": {"day": "friday"}}}) + "\n")
    ps = load_prompts(f)
    assert [p.expect.intent for p in ps] == ["fallback", "hours"]
    for bad, why in [("{not json", "not JSON"), (json.dumps({"prompt": "hi"}), "expect"),
                     (json.dumps({"prompt": "hi", "expect": {"intent": "teleport"}}), "teleport")]:
        f.write_text(json.dumps({"prompt": "ok", "expect": "fallback"}) + "\n" + bad + "\n")
        with pytest.raises(ValueError) as e:
            load_prompts(f)
        assert f"{f}:2:" in str(e.value) and why in str(e.value) and "\n" not in str(e.value)


@pytest.mark.slow
@pytest.mark.skipif(not (Path(__file__).parents[3] / "engines/tiny/diffusion/config.json").exists(),
                    reason="tiny weights not trained")
def test_evaluate_prompts_file_and_bench_ood_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from engines.eval.engine_bench import bench_engine
    from engines.eval.evaluate import heldout_examples, main
    from engines.local.engine import open_engine

    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps({"prompt": "what is the capital of france", "expect": "fallback"}) + "\n"
                 + json.dumps({"prompt": "hi what time do you open on saturday",
                               "expect": {"intent": "hours", "slots": {"day": "saturday"}}}) + "\n")
    main(["--model", "diffusion", "--prompts", str(f)])
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["file"]
    assert res["n"] == 2 and 0.0 <= res["correct"] <= 1.0 and isinstance(res["wrong_tool_calls"], int)
    eng = open_engine("diffusion")
    row = bench_engine(eng, heldout_examples(4), warmup=1, ood=ood_set(4)[-8:])
    eng.close()
    assert row.ood_prompts == 8 and 0.0 <= row.ood_coherent <= 1.0 and row.wrong_tool_calls >= 0


@pytest.mark.slow
@pytest.mark.skipif(not (Path(__file__).parents[3] / "engines/tiny/diffusion/config.json").exists(),
                    reason="tiny weights not trained")
def test_bench_times_engines_side_by_side_in_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    from engines.eval import engine_bench as bench

    monkeypatch.setattr(bench, "DEFAULT_RUNS", [("diffusion", "threshold", {}), ("ar", "autoregressive", {})])
    unseen = bench.unseen_set()[::80]  # a few of the unseen-caller set, reported beside the held-out figure
    monkeypatch.setattr(bench, "unseen_set", lambda: unseen)
    rows = bench.run_bench(n=3, ood_garbled=0, threads=1, rounds=3)
    assert [r.unseen_prompts for r in rows] == [len(unseen)] * 2 and all(r.unseen_by_tag for r in rows)
    assert [len(r.rounds_tokens_per_s) for r in rows] == [3, 3]
    assert all(r.tokens_per_s == statistics.median(r.rounds_tokens_per_s) > 0 for r in rows)  # the median round
    assert rows[1].x_ar == 1.0 and rows[0].x_ar > 0
    assert "x AR" in bench.format_rows(rows)[0] and "unseen" in bench.format_rows(rows)[0]
    with pytest.raises(ValueError, match="rounds"):
        bench.run_bench(n=3, ood_garbled=0, rounds=0)
