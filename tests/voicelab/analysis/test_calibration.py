"""docs/calibration.md regenerates from the committed bench results; the agreement it states follows the figures."""

from __future__ import annotations

import pytest

from voicelab.analysis import calibration as cal


@pytest.mark.slow
def test_the_page_matches_the_committed_results() -> None:
    assert cal.PAGE.read_text(encoding="utf-8") == cal.current(), f"run `{cal.COMMAND}`"


def test_ranking_puts_the_lowest_first_and_leaves_out_the_unmeasured() -> None:
    assert cal.ranking({"a": 0.3, "b": 0.1, "c": None}) == ["b", "a"]


def test_agreement_names_both_picks_when_they_differ() -> None:
    assert cal.agreement(["a", "b"], ["a", "b"]) == "agree, same order"
    assert cal.agreement(["a", "b", "c"], ["a", "c", "b"]) == "agree on the first, not on the order"
    said = cal.agreement(["tiny", "base"], ["base", "tiny"])
    assert "disagree" in said and "`tiny`" in said and "`base`" in said
    assert cal.agreement([], ["a"]) == "not measured on both"


def _stt(rows: list[tuple[str, str, float]], default: str) -> dict[str, object]:
    return {"command": "voicelab bench stt", "machine": {"cpus": 2, "platform": "x"},
            "summary": [{"system": s, "suite": u, "n": 10, "wer_corpus": w, "wer_mean": w, "ms_p50": 100.0,
                         "ms_p95": 200.0, "default": s == default} for s, u, w in rows]}


def test_the_recogniser_section_flags_a_synthetic_only_pick() -> None:
    doc = _stt([("tiny", "synthetic", 0.2), ("base", "synthetic", 0.3), ("tiny", "human", 0.12),
                ("base", "human", 0.08)], default="tiny")
    text = "\n".join(cal.stt_section(doc))
    assert "synthetic picks `tiny`, human speech picks `base`" in text
    assert "`tiny` (default)" in text and "not the best on human speech" in text


def test_the_turn_section_reads_dead_air_at_five_percent_per_group() -> None:
    def report(v: float) -> dict[str, object]:
        return {"passes_removed": {"dead_air_p50_ms_at": {"5%": v}, "dead_air_p50_ms_ci_at": {"5%": [v - 1, v + 1]},
                                   "at_default": {"false_cutoff_rate": 0.1, "dead_air_p50_ms": 500.0}}}

    def entry(name: str, syn: float, hum: float) -> dict[str, object]:
        return {"strategy": name, "knob": "k", "default": 1, "groups": {"generated": report(syn), "human": report(hum)}}

    doc = {"command": "voicelab bench turns", "groups": {"generated": {"pauses": 4, "ends": 4}},
           "strategies": [entry("timeout", 1000, 1600), entry("smart", 1200, 1050)]}
    text = "\n".join(cal.turn_section(doc))
    assert "synthetic picks `timeout`, human speech picks `smart`" in text
    assert "1000 [999–1001]" in text
    for e, call in zip(doc["strategies"], (1500, 2500), strict=True):  # type: ignore[call-overload]
        e["groups"]["human-calls"] = report(call)
    doc["ratios"] = {"human-calls": [{"of": "smart", "over": "timeout", "at": "5%", "ratio": 1.67, "ci": [1.1, 2.0]}]}
    text = "\n".join(cal.turn_section(doc))
    assert "- human phone calls rank: `timeout` < `smart`" in text
    assert "synthetic against phone calls: agree, same order" in text
    assert ("`human-calls`: the shipped `smart`'s dead air at 5% over each baseline's, paired: over `timeout` 1.67x "
            "[1.1–2.0]") in text
    line = cal.turn_verdict(doc)
    assert line is not None and "meetings: disagree" in line and "phone calls: agree" in line


def test_the_terminal_verdicts_say_synthetic_only_on_a_disagreement() -> None:
    doc = _stt([("tiny", "synthetic", 0.2), ("base", "synthetic", 0.3), ("tiny", "human", 0.12),
                ("base", "human", 0.08)], default="tiny")
    line = cal.stt_verdict(doc["summary"])  # type: ignore[arg-type]
    assert line is not None and "synthetic-only" in line
    assert cal.stt_verdict([r for r in doc["summary"] if r["suite"] == "human"]) is None  # type: ignore[union-attr]


def test_the_paired_difference_is_zero_for_equal_readings_and_signed_for_worse_ones() -> None:
    rows = [{"system": sys_, "suite": "human", "fixture": f"u{i}", "turn": 0, "errors": e, "reference_words": 10}
            for i in range(30) for sys_, e in (("d", i % 3), ("same", i % 3), ("worse", i % 3 + 2))]
    same = cal.paired_difference(rows, "same", "d")
    assert same == (0.0, 0.0, 0.0)
    worse = cal.paired_difference(rows, "worse", "d")
    assert worse is not None and worse[0] == 0.2 and 0 < worse[1] <= worse[0] <= worse[2]
    assert cal.paired_difference(rows, "absent", "d") is None
    assert cal.paired_difference(rows, "worse", "d") == worse  # seeded: the page is reproducible


def test_the_calls_section_ranks_the_rules_and_gives_the_paired_ratio() -> None:
    def row(name: str, v: float, default: bool) -> dict[str, object]:
        d = {"knob": 1.0, "false_cutoffs": 0.169, "dead_air_p50_ms": 400} if default else None
        return {"strategy": name, "dead_air_p50_ms_at": {"5%": v}, "dead_air_p50_ms_ci_at": {"5%": [v - 10, v + 10]},
                "at_default": d}

    doc = {"command": "python benchmarks/call_turns.py", "calls": 3, "pauses": 10, "ends": 9,
           "strategies": [row("silence", 2743, False), row("words", 1946, True)],
           "ratios_to_silence_only": [{"of": "words", "at": "5%", "ratio": 0.709, "ci": [0.481, 0.929]}]}
    text = "\n".join(cal.calls_section(doc))
    assert "rank: `words` < `silence`" in text
    assert "| words | 1946 [1936–1956] | 16.9 % / 400 |" in text
    assert "paired: 0.709x [0.481–0.929]" in text
