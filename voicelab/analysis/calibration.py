"""docs/calibration.md, generated from committed bench results, never typed: for each choice the lab makes (the
recogniser, the turn-end strategy and its setting, the barge-in onset), the ranking on synthetic callers beside
the ranking on human speech, and whether the two agree.

Inputs (both committed under benchmarks/results/, each with the command that made it):
- `stt_bench.json` from `voicelab bench stt --out ...`: word error rate and time per pass per recogniser and
  suite (`synthetic`: espeak-ng and Piper callers; `real`: the bundled real recordings; `human`: the human
  set's read speech; `human-digits`: its digit strings);
- `turn_bench.json` from `voicelab bench turns --out ...`: dead air at a false cut-off rate per strategy and
  group (`generated`: espeak-ng; `human`: the human set's meetings), and the barge-in cases per group;
- `call_turns.json` from `benchmarks/call_turns.py`: the rules that need no audio on real phone calls' words
  and silences (Harper Valley), beside silence only.

A ranking "agrees" when the option ranked first is the same on both; the page also states the full orders, so
a disagreement lower down is visible. Standard library only.

    python -m voicelab.analysis.calibration --write   # regenerate docs/calibration.md (a test checks it)
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
STT_RESULT = RESULTS / "stt_bench.json"
TURN_RESULT = RESULTS / "turn_bench.json"
CALL_RESULT = RESULTS / "call_turns.json"
PAGE = ROOT / "docs" / "calibration.md"
COMMAND = "python -m voicelab.analysis.calibration --write"
SYNTHETIC_STT, HUMAN_STT = "synthetic", "human"
SYNTHETIC_TURNS, HUMAN_TURNS = "generated", "human"
HUMAN_READ_TURNS = "human-read"  # read speech: no hesitation to hear, shown beside conversation, not ranked
HUMAN_CALL_TURNS = "human-calls"  # two-party phone calls, each party on its own channel
RATE = "5%"  # the false cut-off rate the turn rankings are read at (eot-bench's operating point)
RESAMPLES, SEED = 2000, 0  # the paired bootstrap of the recognisers' difference from the default


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}"


def _ci(ci: Sequence[float] | None) -> str:
    return "" if not ci else f" [{ci[0]:.0f}–{ci[1]:.0f}]"


def _at(d: dict[str, Any]) -> str:
    return f"{_pct(d.get('false_cutoff_rate'))} / {_ms(d.get('dead_air_p50_ms'))}"


def ranking(scores: dict[str, float | None]) -> list[str]:
    """Options from best (lowest) to worst; options without a figure are left out."""
    return sorted((k for k, v in scores.items() if v is not None), key=lambda k: (scores[k], k))


def agreement(synthetic: list[str], human: list[str]) -> str:
    """'agree' when both rank the same option first (and the whole order is the same: 'agree, same order')."""
    if not synthetic or not human:
        return "not measured on both"
    common = [o for o in synthetic if o in human]
    same_order = common == [o for o in human if o in common]
    if synthetic[0] == human[0]:
        return "agree, same order" if same_order else "agree on the first, not on the order"
    return f"**disagree**: synthetic picks `{synthetic[0]}`, human speech picks `{human[0]}`"


def stt_verdict(summary: Sequence[dict[str, Any]]) -> str | None:
    """One line for the terminal: do synthetic callers and human speech pick the same recogniser? (None: the
    summary lacks one of the two suites.)"""
    syn = ranking({r["system"]: r["wer_corpus"] for r in summary if r["suite"] == SYNTHETIC_STT})
    hum = ranking({r["system"]: r["wer_corpus"] for r in summary if r["suite"] == HUMAN_STT})
    if not syn or not hum:
        return None
    said = agreement(syn, hum).replace("**", "")
    tail = "" if syn[0] == hum[0] else "; the synthetic ranking is synthetic-only: choose on human speech"
    return f"synthetic callers and human speech: {said}{tail}"


def turn_verdict(doc: dict[str, Any]) -> str | None:
    """The same line for the turn bench, at RATE false cut-offs, against each human conversation group present
    (None: the generated group or both human ones are missing)."""
    syn = ranking({e["strategy"]: _turn_figure(e, SYNTHETIC_TURNS)[0] for e in doc.get("strategies", [])})
    said = []
    for group, label in ((HUMAN_TURNS, "meetings"), (HUMAN_CALL_TURNS, "phone calls")):
        hum = ranking({e["strategy"]: _turn_figure(e, group)[0] for e in doc.get("strategies", [])})
        if syn and hum:
            tail = "" if syn[0] == hum[0] else " (the generated group's ranking is synthetic-only here)"
            said.append(f"{label}: {agreement(syn, hum).replace('**', '')}{tail}")
    if not said:
        return None
    return f"dead air at {RATE} false cut-offs, synthetic against human conversation: " + "; ".join(said)


def stt_section(doc: dict[str, Any]) -> list[str]:
    rows = doc.get("summary", [])
    systems = list(dict.fromkeys(r["system"] for r in rows))
    suites = [s for s in (SYNTHETIC_STT, "real", HUMAN_STT, "human-digits") if any(r["suite"] == s for r in rows)]
    by = {(r["system"], r["suite"]): r for r in rows}
    default = next((r["system"] for r in rows if r.get("default")), None)
    out = ["## Recogniser", "",
           f"`{doc.get('command', '?')}` on {doc.get('machine', {}).get('cpus', '?')} CPUs "
           f"({doc.get('machine', {}).get('platform', '?')}). Corpus WER (all errors over all reference words); "
           "time per pass p50 on the human read speech. The pipeline's default is marked.", "",
           "| recogniser | " + " | ".join(f"WER {s} (n)" for s in suites) + " | ms p50 (human) |",
           "|---|" + "---|" * (len(suites) + 1)]
    for s in systems:
        cells = [f"{_pct(by[(s, u)]['wer_corpus'])} ({by[(s, u)]['n']})" if (s, u) in by else "-" for u in suites]
        ms = by.get((s, HUMAN_STT), {}).get("ms_p50")
        mark = " (default)" if s == default else ""
        out.append(f"| `{s}`{mark} | " + " | ".join(cells) + f" | {_ms(ms)} |")
    syn = ranking({s: by[(s, SYNTHETIC_STT)]["wer_corpus"] for s in systems if (s, SYNTHETIC_STT) in by})
    hum = ranking({s: by[(s, HUMAN_STT)]["wer_corpus"] for s in systems if (s, HUMAN_STT) in by})
    out += ["", f"- synthetic callers rank: {' < '.join(f'`{s}`' for s in syn) or '-'}",
            f"- human speech ranks: {' < '.join(f'`{s}`' for s in hum) or '-'}",
            f"- {agreement(syn, hum)}", ""]
    if hum and default is not None and default in hum:
        out.append(f"The default, `{default}`, is {'the best' if hum[0] == default else 'not the best'} on human "
                   f"speech ({_pct(by[(default, HUMAN_STT)]['wer_corpus'])}; best "
                   f"`{hum[0]}` {_pct(by[(hum[0], HUMAN_STT)]['wer_corpus'])}).")
        out.append("")
        pairs = [(s, paired_difference(doc.get("rows", []), s, default)) for s in hum if s != default]
        if any(d is not None for _, d in pairs):
            out += [f"Each recogniser against the default on the same human utterances (WER points, paired "
                    f"bootstrap over utterances, {RESAMPLES} resamples, seed {SEED}; an interval that holds 0 is no "
                    "detectable difference):", "",
                    "| recogniser | minus the default [95 %] |", "|---|---|"]
            out += [f"| `{s}` | {_pp(d[0])} [{_pp(d[1])}, {_pp(d[2])}] |" for s, d in pairs if d is not None]
            out.append("")
    return out


def paired_difference(rows: Sequence[dict[str, Any]], system: str, default: str, suite: str = HUMAN_STT,
                      resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float, float] | None:
    """`system`'s corpus WER minus `default`'s on the utterances both read in `suite` (the bench's per-utterance
    rows), with a 95 % interval from a paired bootstrap over those utterances; None without shared utterances."""
    def counts(name: str) -> dict[tuple[str, int], tuple[int, int]]:
        return {(r["fixture"], r["turn"]): (r["errors"], r["reference_words"]) for r in rows
                if r["system"] == name and r["suite"] == suite}

    a, b = counts(system), counts(default)
    keys = sorted(a.keys() & b.keys())
    if not keys:
        return None

    def diff(sample: Sequence[tuple[str, int]]) -> float:
        ref = sum(b[k][1] for k in sample) or 1
        return (sum(a[k][0] for k in sample) - sum(b[k][0] for k in sample)) / ref

    rng = random.Random(seed)
    boot = sorted(diff([rng.choice(keys) for _ in keys]) for _ in range(resamples))
    return diff(keys), boot[int(0.025 * resamples)], boot[int(0.975 * resamples) - 1]


def _pp(x: float) -> str:
    return f"{100 * x:+.1f}"


def _turn_figure(entry: dict[str, Any], group: str) -> tuple[float | None, list[float] | None, dict[str, Any]]:
    rep = entry.get("groups", {}).get(group, {}).get("passes_removed")
    if rep is None:
        return None, None, {}
    return (rep.get("dead_air_p50_ms_at", {}).get(RATE), rep.get("dead_air_p50_ms_ci_at", {}).get(RATE),
            rep.get("at_default", {}))


def _ratio(r: dict[str, Any]) -> str:
    """`1.42x [0.667–3.225]`: a paired ratio with its interval, where there is one."""
    return f"{r['ratio']}x" + (f" [{r['ci'][0]}–{r['ci'][1]}]" if r.get("ci") else "")


def turn_section(doc: dict[str, Any]) -> list[str]:
    groups = doc.get("groups", {})
    out = ["## Turn-end strategy and setting", "",
           f"`{doc.get('command', '?')}`. Dead air (median, ms, pass times removed) at {RATE} false cut-offs of "
           "mid-turn pauses, with its 95 % bootstrap interval, and each strategy at its shipped setting. "
           + ", ".join(f"`{g}`: {v.get('pauses', 0)} pauses, {v.get('ends', 0)} ends" for g, v in groups.items())
           + ".", "",
           f"| strategy | synthetic ({SYNTHETIC_TURNS}) at {RATE} | human meetings at {RATE} | human phone calls at "
           f"{RATE} | human read at {RATE} | synthetic at its default: false cut-offs / dead air | meetings at its "
           "default | phone calls at its default | read at its default |",
           "|---|---|---|---|---|---|---|---|---|"]
    syn_scores: dict[str, float | None] = {}
    hum_scores: dict[str, float | None] = {}
    call_scores: dict[str, float | None] = {}
    for e in doc.get("strategies", []):
        name = e["strategy"]
        s, s_ci, s_def = _turn_figure(e, SYNTHETIC_TURNS)
        h, h_ci, h_def = _turn_figure(e, HUMAN_TURNS)
        c, c_ci, c_def = _turn_figure(e, HUMAN_CALL_TURNS)
        r, r_ci, r_def = _turn_figure(e, HUMAN_READ_TURNS)
        syn_scores[name], hum_scores[name], call_scores[name] = s, h, c
        out.append(f"| `{name}` ({e.get('knob')} {e.get('default')}) | {_ms(s)}{_ci(s_ci)} | {_ms(h)}{_ci(h_ci)} | "
                   f"{_ms(c)}{_ci(c_ci)} | {_ms(r)}{_ci(r_ci)} | {_at(s_def)} | {_at(h_def)} | {_at(c_def)} | "
                   f"{_at(r_def)} |")
    syn, hum, call = ranking(syn_scores), ranking(hum_scores), ranking(call_scores)
    out += ["", f"- synthetic callers rank: {' < '.join(f'`{s}`' for s in syn) or '-'}",
            f"- human meetings rank: {' < '.join(f'`{s}`' for s in hum) or '-'} (the others never reach {RATE})",
            f"- human phone calls rank: {' < '.join(f'`{s}`' for s in call) or '-'}",
            f"- synthetic against meetings: {agreement(syn, hum)}",
            f"- synthetic against phone calls: {agreement(syn, call)}"]
    for g, rows in doc.get("ratios", {}).items():
        said = [f"over `{r['over']}` {_ratio(r)}" for r in rows if r.get("ratio") is not None]
        of = rows[0]["of"] if rows else "?"
        out.append(f"- `{g}`: the shipped `{of}`'s dead air at {RATE} over each baseline's, paired: "
                   + ("; ".join(said) if said else "no ratio (a strategy never reaches it)"))
        matched = [(r["over"], r["at_shipped_setting"]) for r in rows if r.get("at_shipped_setting")]
        if matched:
            here = matched[0][1]
            each = [f"`{b}` {_ms(m['baseline_dead_air_p50_ms'])} ms, {_ratio(m)}" if m.get("ratio") is not None
                    else f"`{b}` never gets there" for b, m in matched]
            out.append(f"  - at its shipped setting ({_pct(here['rate'])} false cut-offs, "
                       f"{_ms(here['dead_air_p50_ms'])} ms) over each baseline set to the same rate: " + "; ".join(each))
    out.append("")
    return out


def barge_section(doc: dict[str, Any]) -> list[str]:
    out = ["## Barge-in onset", "",
           "The shipped barge-in (`pause`: the onset VAD pauses the bot, the words decide) on each group's barge-in "
           "cases: backchannels must not stop the bot, interruptions must, quickly.", "",
           "| group | backchannels | false barge-ins | interruptions | missed | stop latency p50 / p95 ms (n) |",
           "|---|---|---|---|---|---|"]
    for g, b in doc.get("barge_in", {}).items():
        st = b.get("stop_latency_ms", {})
        out.append(f"| `{g}` | {b.get('backchannels')} | {b.get('false_barge_ins')} | {b.get('interruptions')} | "
                   f"{b.get('missed_interruptions')} | {_ms(st.get('p50'))} / {_ms(st.get('p95'))} "
                   f"({st.get('n', 0)}) |")
    human = doc.get("barge_in", {}).get(HUMAN_TURNS)
    out += ["", "Human barge-in cases: " + (
        f"{human.get('backchannels')} backchannels and {human.get('interruptions')} interruptions."
        if human else "none in the human set yet; the onset's thresholds rest on the generated and bundled cases and "
        "the real recordings (one interruption), so they are **synthetic-only** figures.") , ""]
    return out


def calls_section(doc: dict[str, Any]) -> list[str]:
    rows = doc.get("strategies", [])
    out = ["## Turn end on real calls, words and silences only", "",
           f"`{doc.get('command', '?')}`: {doc.get('calls')} real phone calls (Harper Valley, no audio), "
           f"{doc.get('pauses')} pauses, {doc.get('ends')} ends; the rules that need no audio, median dead air at "
           f"{RATE} false cut-offs with its 95 % bootstrap interval.", "",
           f"| rule | real calls at {RATE} | at its shipped setting: false cut-offs / dead air |", "|---|---|---|"]
    for r in rows:
        d = r.get("at_default")
        at = f"{_pct(d['false_cutoffs'])} / {_ms(d['dead_air_p50_ms'])}" if d else "-"
        out.append(f"| {r['strategy']} | {_ms(r['dead_air_p50_ms_at'].get(RATE))}"
                   f"{_ci(r.get('dead_air_p50_ms_ci_at', {}).get(RATE))} | {at} |")
    scores = {r["strategy"]: r["dead_air_p50_ms_at"].get(RATE) for r in rows}
    ratios = [x for x in doc.get("ratios_to_silence_only", []) if x.get("at") == RATE]
    out += ["", f"- real calls rank: {' < '.join(f'`{s}`' for s in ranking(scores)) or '-'}"]
    out += [f"- {x['of']} over silence only, paired: {x['ratio']}x"
            + (f" [{x['ci'][0]}–{x['ci'][1]}]" if x.get("ci") else "") for x in ratios]
    return out + [""]


def render(stt_doc: dict[str, Any] | None, turn_doc: dict[str, Any] | None,
           calls_doc: dict[str, Any] | None = None) -> str:
    out = ["# Calibration: synthetic callers against human speech", "",
           f"Generated by `{COMMAND}` from `benchmarks/results/stt_bench.json` and "
           "`benchmarks/results/turn_bench.json`; a test fails when this page differs from them. Synthetic callers "
           "(espeak-ng, one Piper voice) make reproducible regression runs; a default is chosen on human speech "
           "(the set in `audio_fixtures/human/`, see its README), and where the two rank options differently the "
           "synthetic figure is labelled synthetic-only. The decisions built on these figures are in "
           "`docs/decisions/`.", ""]
    out += stt_section(stt_doc) if stt_doc else ["## Recogniser", "", "not measured", ""]
    if turn_doc:
        out += turn_section(turn_doc) + barge_section(turn_doc)
    else:
        out += ["## Turn-end strategy and setting", "", "not measured", ""]
    if calls_doc:
        out += calls_section(calls_doc)
    return "\n".join(out).rstrip() + "\n"


def _load(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def current() -> str:
    return render(_load(STT_RESULT), _load(TURN_RESULT), _load(CALL_RESULT))


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - a maintenance command
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"write {PAGE.relative_to(ROOT)}")
    a = ap.parse_args(argv)
    text = current()
    if a.write:
        PAGE.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
