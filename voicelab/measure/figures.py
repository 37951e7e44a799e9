"""The figure catalogue: every figure a run reports, declared once, with how each view shows it.

Pure Python (no pipecat, no torch, no numpy): the command line's light views (the console tables, the results
page) read it. A figure is a column of the per-turn table (`voicelab.measure.metrics.turn_table`, turns.csv,
turns.parquet) and/or a key of summary.json. Its entry says:

- `name`, `unit`, `better` ("lower", "higher", "nearer zero", or "" for a description that is no goal),
  `doc` (one line; the turns.parquet column's meaning in docs/data-schema.md);
- `turn`: how one caller turn's value is computed, from the turn's facts (`voicelab.measure.metrics.TurnFacts`:
  its events, its reply, the steps metrics.py derives from them); or a sentence naming what sets the column
  outside `turn_table` (the WAV analyser, the line run); None for a figure of summary.json only;
- `dtype`: the Arrow type of its turns.parquet column (None: not a documented column; kept after them);
- `summary`: how it goes into summary.json (`Summary`: dotted key, the statistic in words, the function over
  the run's rows and events, its position);
- `line`: whether a line run (`voicelab call`, which hears the agent only through a phone line) measures it:
  "events" (from the call's rows, as any run), "recording" (the line run sets it from the recording), "no";
- `part_of`: the figure this one is a consecutive part of (the FAR breakdown adds up to `far_ms`);
- `views`: how each view shows it, each with its position `at` in that view: the console (`Narrow`, `Part`,
  `Flag`, `Wide`, `Overall`), `voicelab compare` (`Paired`), the results page (`Result`) and the HTML report
  (`ReportSummary`, `ReportTurn`, `ReportLineTurn`, `ReportPart`).

The views and `summarize` read the catalogue when they run, so a figure added with `register` shows
everywhere. docs/metrics.md's catalogue tables are generated from it (`python -m voicelab.measure.catalogue_doc`).

The catalogue's parts, each in its own module: `voicelab.measure.figure` (the `Figure` entry and its check),
`voicelab.measure.figure_views` (the views), `voicelab.measure.figure_summary` (`Summary`, `SummaryData` and the
run-level computations), `voicelab.measure.turn_facts` (`TurnFacts`), `voicelab.measure.catalogue_doc` (the docs'
tables). This module holds the entries and reads and extends them. It imports none of `voicelab.measure.metrics`,
which imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from voicelab.measure.events import EventKind
from voicelab.measure.figure import Figure, check
from voicelab.measure.figure_summary import (
    Summary,
    SummaryData,
    audible_per_100_words,
    expectation_checks,
    forwards_per_token,
    mean_p95,
    rounded,
    slots_read_rows,
    tokens_per_s,
    tool_calls_by_outcome,
    truth_p95,
    unreliable_readings,
)
from voicelab.measure.figure_views import (
    Flag,
    Narrow,
    Overall,
    Paired,
    Part,
    ReportLineTurn,
    ReportPart,
    ReportSummary,
    ReportTurn,
    Result,
    V,
    Wide,
)
from voicelab.measure.turn_facts import TurnFacts

K = EventKind
ACCURACY_BAR = 0.95  # answers correct below this share are marked (the report; the sweep's Pareto plot)


# ---- the entries ---------------------------------------------------------------------------------------------

def _pauses(t: TurnFacts) -> int:
    return 0 if t.pauses is None else t.pauses.pauses


def _rev(name: str) -> Callable[[TurnFacts], int | None]:
    return lambda t: None if t.revisions is None else getattr(t.revisions, name)


def _median_summary(part: str, at: int) -> tuple[Summary, ...]:
    return (Summary(f"far_breakdown_ms.{part}", "median over answered turns",
                    lambda s: s.median(f"{part}_ms", s.answered), at),)


_LATENCY = "p50, p95, n and their 95 % intervals"
_EVENTS = "events"  # measured from the call's own rows, as in any run (a line run included)

_CATALOGUE: list[Figure] = [
    Figure("run_id", "id", "", "run_id of the run", "the table writer (voicelab.analysis.tables)", "string",
           line=_EVENTS),
    Figure("call_id", "id", "", "call", lambda t: t.call_id, "string", line=_EVENTS,
           views=(Wide("call", 0, left=True), ReportTurn(0), ReportLineTurn(0))),
    Figure("turn", "index", "", "caller utterance index within the call", lambda t: t.turn, "int32", line=_EVENTS,
           views=(Narrow("turn", 0, justify="right"), Wide("turn", 1), ReportTurn(1), ReportLineTurn(1))),
    Figure("expect", "label", "", "fixture expectation: null, 'interrupt' or 'no_interrupt' (backchannel)",
           lambda t: t.said.expect, "string", line=_EVENTS,
           views=(Narrow("expect", 1, overflow="fold", show="blank"), Wide("expect", 2, left=True), ReportTurn(2),
                  ReportLineTurn(2))),
    Figure("far_ms", "ms", "lower", "first audible response: bot acoustic onset minus caller speech end (events)",
           lambda t: rounded(t.far), "float64", line=_EVENTS,
           summary=(Summary("far_ms", f"{_LATENCY}, answered turns", lambda s: s.latency("far_ms", s.answered), 20),),
           views=(Narrow("FAR\nms", 2, justify="right"), Wide("FAR ms", 3),
                  Overall("FAR p50 ms", 1, "far_ms", "p50"), Overall("FAR p95 ms", 2, "far_ms", "p95"),
                  Paired("far_p50", "FAR p50", "p50", "ms", 0, "+50ms", answered_only=True),
                  Paired("far_p95", "FAR p95", "p95", "ms", 1, "+50ms", answered_only=True),
                  Result("far_p50", "FAR p50", "FAR p50 ms", 0, "far_ms", "p50", headline=True),
                  Result("far_p95", "FAR p95", "FAR p95 ms", 1, "far_ms", "p95", headline=True),
                  ReportSummary("FAR p50", 2, "far_ms.p50"), ReportSummary("FAR p95", 3, "far_ms.p95"),
                  ReportTurn(3), ReportLineTurn(3))),
    Figure("false_cut_in", "flag", "lower", "the bot's audio started inside this turn's caller speech (ground truth)",
           lambda t: t.cut_in, "bool", line="recording",
           summary=(Summary("false_cut_ins", "count of turns", lambda s: s.count("false_cut_in"), 47),),
           views=(Flag("false cut-in", 0), Overall("false cut-ins", 9, "false_cut_ins"),
                  Result("false_cut_ins", "false cut-ins", "false cut-ins", 16, "false_cut_ins", "count",
                         headline=True))),
    Figure("answer_text", "text", "", "the reply's whole text, tool span included (engine_done)",
           lambda t: t.answer["answer_text"], "string", line="recording"),
    Figure("coherent", "flag", "higher",
           "the reply is a well-formed response of the business's grammar (engines.shop.answers)",
           lambda t: t.answer["coherent"], "bool", line="recording",
           summary=(Summary("answers.coherent", "share of all replies, 3 decimals",
                            lambda s: s.share("coherent", s.known("coherent")), 53),
                    Summary("answers.replies", "replies scored for coherence", lambda s: len(s.known("coherent")), 55)),
           views=(Flag("incoherent", 8, when="false"), Wide("coherent", 17),
                  Overall("answers coherent", 15, "answers.coherent", "share"),
                  Result("answers_coherent", "answers coherent", "coherent", 21, "answers.coherent", "share",
                         n="answers.replies"))),
    Figure("answer_correct", "flag", "higher", "right intent and exact slots against the fixture's expect_reply",
           lambda t: t.answer["answer_correct"], "bool", line="recording",
           summary=(Summary("answers.correct", "share of the scored replies (turns with expect_reply), 3 decimals",
                            lambda s: s.share("answer_correct", s.known("answer_correct")), 50),
                    Summary("answers.n", "scored replies", lambda s: len(s.known("answer_correct")), 54)),
           views=(Narrow("answer", 4, show="ok_wrong"), Wide("answer ok", 16),
                  Overall("answers correct", 13, "answers.correct", "share_of", n="answers.n"),
                  Paired("accuracy", "answer accuracy", "mean", "", 8, "+5%"),
                  Result("answers_correct", "answers correct", "correct", 19, "answers.correct", "share", n="answers.n",
                         headline=True),
                  ReportLineTurn(11))),
    Figure("expectations", "json", "", "the fixture's checks of the reply's words (says_any, says_all, matches, "
                                       "not_says): a JSON array, one object per check: check, want, passed, detail; "
                                       "null: the turn has none (docs/own-calls.md)",
           lambda t: t.answer["expectations"], "string", line="recording",
           summary=(Summary("answers.expectations_passed", "checks passed over every turn's expectations",
                            lambda s: expectation_checks(s, True), 57),
                    Summary("answers.expectations", "checks made", lambda s: expectation_checks(s, False), 58)),
           views=(Narrow("checks", 5, overflow="fold", show="checks", optional=True),
                  Overall("expectations passed", 16, "answers.expectations_passed", "count_of",
                          n="answers.expectations"))),
    Figure("wrong_tool_call", "flag", "lower", "a tool call where the fixture expected none (or another one)",
           lambda t: t.answer["wrong_tool_call"], "bool", line="recording",
           summary=(Summary("answers.wrong_tool_calls", "count of the scored replies",
                            lambda s: s.count("wrong_tool_call", s.known("answer_correct")), 56),),
           views=(Flag("wrong tool", 7),
                  Result("wrong_tool_calls", "wrong tool calls", "wrong tool calls", 22, "answers.wrong_tool_calls",
                         "count"))),
    Figure("preemptive", "label", "", "preemptive generation: 'hit' (kept), 'miss' (regenerated) or null (none)",
           lambda t: t.preemptive, "string",
           summary=(Summary("preemptive.hit", "count of turns", lambda s: s.count("preemptive", equal="hit"), 62),
                    Summary("preemptive.miss", "count of turns", lambda s: s.count("preemptive", equal="miss"), 63))),
    Figure("preempt_wasted_ms", "ms", "lower", "engine time of preemptive replies that were dropped",
           lambda t: rounded(t.preempt_wasted) if t.preemptive is not None else None, "float64",
           summary=(Summary("preemptive.wasted_engine_ms", "sum",
                            lambda s: rounded(sum(r.get("preempt_wasted_ms") or 0.0 for r in s.rows)), 64),)),
    Figure("stt_text", "text", "", "the recogniser's final words for the turn (null: no final transcript)",
           lambda t: t.stt["stt_text"], "string"),
    Figure("stt_wer", "ratio", "lower", "word error rate of stt_text against the fixture's text (project normaliser)",
           lambda t: t.stt["stt_wer"], "float64",
           summary=(Summary("stt_wer", "mean, p95 and n over turns, 3 decimals", lambda s: mean_p95(s, "stt_wer"), 48),),
           views=(Result("stt_wer", "stt_wer (mean)", "stt_wer", 18, "stt_wer", "mean_p95"),)),
    Figure("slots_read", "flag", "higher",
           "stt_text holds every slot word of the fixture's expect_reply (null: no slot word)",
           lambda t: t.slots_read, "bool",
           summary=(Summary("answers.correct_slots_read", "share correct of the scored turns whose slots were read",
                            lambda s: s.share("answer_correct", slots_read_rows(s)), 51),
                    Summary("answers.n_slots_read", "scored turns whose slots were read",
                            lambda s: len(slots_read_rows(s)), 52)),
           views=(Overall("answers correct, slot words read", 14, "answers.correct_slots_read", "share_of",
                          n="answers.n_slots_read"),
                  Result("answers_correct_slots_read", "answers correct, slot words read", "correct, slots read", 20,
                         "answers.correct_slots_read", "share", n="answers.n_slots_read"))),
    Figure("endpointing_ms", "ms", "lower", "caller speech end -> first turn_end", lambda t: t.path["endpointing_ms"],
           "float64", part_of="far_ms", summary=_median_summary("endpointing", 30),
           views=(Part("ep", 0), Wide("endpt", 4), ReportTurn(5), ReportPart("#8da0cb", 0),
                  Result("endpointing", "FAR part: endpointing", "endpointing ms", 2, "far_breakdown_ms.endpointing",
                         "median"))),
    Figure("vad_stop_ms", "ms", "lower", "of endpointing: caller speech end -> the VAD's last stop before the turn end",
           lambda t: t.path["vad_stop_ms"], "float64", part_of="endpointing_ms",
           summary=_median_summary("vad_stop", 35),
           views=(Part("vad", 0), ReportPart("#c6cde6", 0, "VAD stop"),
                  Result("vad_stop", "endpointing part: VAD stop", "VAD stop ms", 3, "far_breakdown_ms.vad_stop",
                         "median"))),
    Figure("stt_final_wait_ms", "ms", "lower", "of endpointing: the VAD stop -> the final reading, when it came later",
           lambda t: t.path["stt_final_wait_ms"], "float64", part_of="endpointing_ms",
           summary=_median_summary("stt_final_wait", 36),
           views=(Part("final", 1), ReportPart("#8da0cb", 1, "final reading"),
                  Result("stt_final_wait", "endpointing part: wait for the final reading", "final reading ms", 4,
                         "far_breakdown_ms.stt_final_wait", "median"))),
    Figure("rule_wait_ms", "ms", "lower", "of endpointing: the final reading (or the VAD stop) -> the turn rule's end",
           lambda t: t.path["rule_wait_ms"], "float64", part_of="endpointing_ms",
           summary=_median_summary("rule_wait", 37),
           views=(Part("rule", 2), ReportPart("#5a6ea8", 2, "rule wait"),
                  Result("rule_wait", "endpointing part: turn rule's wait", "rule wait ms", 5,
                         "far_breakdown_ms.rule_wait", "median"))),
    Figure("stt_ms", "ms", "lower", "turn_end -> llm_request (stt_final when no llm_request)",
           lambda t: t.path["stt_ms"], "float64", part_of="far_ms", summary=_median_summary("stt", 31),
           views=(Part("stt", 1), Wide("stt", 5), ReportTurn(6), ReportPart("#66c2a5", 1),
                  Result("stt", "FAR part: STT", "STT ms", 6, "far_breakdown_ms.stt", "median"))),
    Figure("engine_first_commit_ms", "ms", "lower", "llm_request -> first gate_commit, on the critical path (0 when a "
                                                    "preemptive reply committed before the turn ended)",
           lambda t: t.path["engine_first_commit_ms"], "float64", part_of="far_ms",
           summary=_median_summary("engine_first_commit", 32),
           views=(Part("eng", 2), Wide("engine", 6), ReportTurn(7), ReportPart("#fc8d62", 2),
                  Result("engine_first_commit", "FAR part: engine to first commit", "engine to commit ms", 7,
                         "far_breakdown_ms.engine_first_commit", "median"))),
    Figure("gate_to_tts_ms", "ms", "lower", "first gate_commit -> first tts_request", lambda t: t.path["gate_to_tts_ms"],
           "float64", part_of="far_ms", views=(Part("gate", 3), ReportPart("#e5c494", 3))),
    Figure("tts_first_audio_ms", "ms", "lower", "first tts_request -> its tts_first_audio",
           lambda t: t.path["tts_first_audio_ms"], "float64", part_of="far_ms",
           summary=_median_summary("tts_first_audio", 33),
           views=(Part("tts", 4), Wide("tts", 7), ReportTurn(8), ReportPart("#a6d854", 4),
                  Result("tts_first_audio", "FAR part: TTS to first audio", "TTS ms", 8,
                         "far_breakdown_ms.tts_first_audio", "median"))),
    Figure("playout_ms", "ms", "lower", "tts_first_audio -> bot acoustic onset", lambda t: t.path["playout_ms"],
           "float64", part_of="far_ms", summary=_median_summary("playout", 34),
           views=(Part("play", 5), Wide("playout", 8), ReportTurn(9), ReportPart("#e78ac3", 5),
                  Result("playout", "FAR part: playout", "playout ms", 9, "far_breakdown_ms.playout", "median"))),
    Figure("stop_latency_ms", "ms", "lower", "barge-in: last audible bot sample minus interrupting speech onset",
           lambda t: rounded(t.stop_latency), "float64", line=_EVENTS,
           summary=(Summary("stop_latency_ms", f"{_LATENCY}, interrupting turns",
                            lambda s: s.latency("stop_latency_ms"), 40),),
           views=(Narrow("stop\nms", 3, justify="right"), Wide("stop ms", 9),
                  Overall("stop latency p50 ms", 3, "stop_latency_ms", "p50"),
                  Overall("stop latency p95 ms", 4, "stop_latency_ms", "p95"),
                  Paired("stop_p50", "stop latency p50", "p50", "ms", 2, "+50ms"),
                  Paired("stop_p95", "stop latency p95", "p95", "ms", 3, "+50ms"),
                  Result("stop_p50", "stop latency p50", "stop p50 ms", 11, "stop_latency_ms", "p50", headline=True),
                  Result("stop_p95", "stop latency p95", "stop p95 ms", 12, "stop_latency_ms", "p95"),
                  ReportSummary("stop p50", 4, "stop_latency_ms.p50"), ReportTurn(10), ReportLineTurn(5))),
    Figure("recovery_ms", "ms", "lower", "far_ms of an expect='interrupt' turn",
           lambda t: rounded(t.far) if t.said.expect == "interrupt" else None, "float64", line=_EVENTS,
           summary=(Summary("recovery_ms", _LATENCY, lambda s: s.latency("recovery_ms"), 41),),
           views=(Overall("recovery p50 ms", 5, "recovery_ms", "p50"),
                  Paired("recovery_p50", "recovery p50", "p50", "ms", 4, "+50ms"),
                  Result("recovery_p50", "recovery (FAR after a barge-in) p50", "recovery ms", 13, "recovery_ms", "p50"),
                  ReportSummary("recovery p50", 5, "recovery_ms.p50"), ReportLineTurn(7))),
    Figure("interrupted", "flag", "", "the reply was cut by a barge-in", lambda t: t.cut, "bool",
           views=(ReportTurn(12),)),
    Figure("heard_word_errors", "words", "lower", "word edit distance, kept context vs words played (cut replies)",
           lambda t: t.heard_errors, "int32",
           summary=(Summary("heard_text_word_errors", "sum over cut replies",
                            lambda s: s.total("heard_word_errors"), 42),),
           views=(Flag("heard err", 3, when="positive"), Wide("heard err", 10),
                  Overall("heard-text word errors", 6, "heard_text_word_errors"),
                  Result("heard_text_word_errors", "heard-text word errors", "heard-text errors", 17,
                         "heard_text_word_errors", "count"),
                  ReportSummary("heard-text errors", 8, "heard_text_word_errors"), ReportTurn(13))),
    Figure("false_barge_in", "flag", "lower", "backchannel turns: the bot stopped anyway",
           lambda t: t.barged if t.said.expect == "no_interrupt" else None, "bool", line=_EVENTS,
           summary=(Summary("false_barge_ins", "count over backchannel turns",
                            lambda s: s.count("false_barge_in", s.backchannels) if s.backchannels else None, 43),),
           views=(Flag("false BI", 1), Wide("false BI", 11), Overall("false barge-ins", 7, "false_barge_ins"),
                  Result("false_barge_ins", "false barge-ins", "false barge-ins", 14, "false_barge_ins", "count",
                         headline=True),
                  ReportSummary("false barge-ins", 7, "false_barge_ins"), ReportTurn(14), ReportLineTurn(9))),
    Figure("pauses", "count", "", "playout pauses (barge-in by pause) attributed by time to this caller utterance",
           _pauses, "int32", row_last=True,
           summary=(Summary("pauses", "sum over turns", lambda s: sum(r["pauses"] for r in s.rows), 45),)),
    Figure("false_pause", "flag", "lower", "backchannel turns: the bot paused on it (it should have kept talking)",
           lambda t: _pauses(t) > 0 if t.said.expect == "no_interrupt" else None, "bool", row_last=True,
           summary=(Summary("false_pauses", "count over backchannel turns",
                            lambda s: s.count("false_pause", s.backchannels) if s.backchannels else None, 44),),
           views=(Flag("false pause", 2), Wide("false pause", 12), Overall("false pauses", 8, "false_pauses"),
                  Result("false_pauses", "false pauses", "false pauses", 15, "false_pauses", "count"))),
    Figure("resume_gap_ms", "ms", "lower", "longest paused silence before the bot resumed (null: no resume)",
           lambda t: rounded(max(t.pauses.resume_gaps_ms)) if t.pauses is not None and t.pauses.resume_gaps_ms else None,
           "float64", row_last=True,
           summary=(Summary("resume_gap_ms", _LATENCY, lambda s: s.latency("resume_gap_ms"), 46),)),
    Figure("spoken_words", "words", "", "words of the reply that were played", lambda t: t.played_words, "int32",
           summary=(Summary("revisions.spoken_words", "sum", lambda s: sum(r["spoken_words"] for r in s.rows), 73),)),
    Figure("churn", "count", "lower", "revisions before release (absorbed by the gate)", _rev("churn"), "int32",
           summary=(Summary("revisions.churn", "sum over replies with snapshots",
                            lambda s: s.total("churn", s.known("churn")), 70),),
           views=(Flag("churn", 4, when="positive"), Wide("churn", 13), Overall("churn", 11, "revisions.churn"),
                  Result("churn", "churn (changed before the gate released it)", "churn", 25, "revisions.churn",
                         "count"),
                  ReportTurn(15))),
    Figure("post_synthesis", "count", "lower", "revisions after the TTS request, before playout", _rev("post_synthesis"),
           "int32",
           summary=(Summary("revisions.post_synthesis", "sum over replies with snapshots",
                            lambda s: s.total("post_synthesis", s.known("churn")), 71),),
           views=(Flag("post-syn", 5, when="positive"), Wide("post-syn", 14),
                  Overall("post-synthesis revisions", 12, "revisions.post_synthesis"),
                  Result("post_synthesis", "post-synthesis revisions (changed after TTS, before playout)",
                         "post-synthesis", 24, "revisions.post_synthesis", "count"),
                  ReportTurn(16))),
    Figure("audible", "count", "lower", "revisions after the text was played (audible defects)", _rev("audible"),
           "int32",
           summary=(Summary("revisions.audible", "sum over replies with snapshots",
                            lambda s: s.total("audible", s.known("churn")), 72),
                    Summary("revisions.audible_per_100_words", "100 x audible / spoken words, 3 decimals",
                            audible_per_100_words, 74)),
           views=(Flag("audible", 6, when="positive"), Wide("audible", 15),
                  Overall("audible revisions / 100 words", 10, "revisions.audible_per_100_words", nd=2),
                  Paired("audible", "audible revisions per turn", "mean", "/turn", 7, "+0"),
                  Result("audible_revisions", "audible revisions", "audible revisions", 23, "revisions.audible",
                         "count_per_100_words", headline=True),
                  ReportSummary("audible /100 words", 6, "revisions.audible_per_100_words"), ReportTurn(17))),
    Figure("first_snapshot_ms", "ms", "lower", "llm_request -> first engine_snapshot",
           lambda t: t.engine["first_snapshot_ms"], "float64"),
    Figure("first_token_ms", "ms", "lower", "the engine's TTFT: llm_request -> first engine_snapshot with visible text",
           lambda t: t.engine["first_token_ms"], "float64",
           summary=(Summary("engine_figures.ttft_ms_p50", "median", lambda s: s.median("first_token_ms"), 83),)),
    Figure("first_token_to_audio_ms", "ms", "lower", "first visible token -> first tts_first_audio of the reply (the "
                                                     "part of FAR the gate controls)",
           lambda t: t.engine["first_token_to_audio_ms"], "float64",
           summary=(Summary("first_token_to_audio_ms", f"{_LATENCY}, answered turns",
                            lambda s: s.latency("first_token_to_audio_ms", s.answered), 61),),
           views=(Paired("first_token_to_audio_p50", "first token to audio p50", "p50", "ms", 5, "+50ms"),
                  Paired("first_token_to_audio_p95", "first token to audio p95", "p95", "ms", 6, "+50ms"),
                  Result("first_token_to_audio_p50", "first token to audio p50", "token to audio ms", 10,
                         "first_token_to_audio_ms", "p50"))),
    Figure("output_tokens_per_s", "tokens/s", "higher", "(tokens - 1) / (first visible text -> last snapshot) of that "
                                                        "generation",
           lambda t: t.engine["output_tokens_per_s"], "float64",
           summary=(Summary("engine_figures.output_tokens_per_s_p50", "median, 2 decimals",
                            lambda s: s.median("output_tokens_per_s", nd=2), 84),)),
    Figure("first_commit_ms", "ms", "lower", "llm_request -> first gate_commit, the engine's own time",
           lambda t: t.engine["first_commit_ms"], "float64",
           summary=(Summary("engine_figures.first_commit_ms_p50", "median", lambda s: s.median("first_commit_ms"), 80),),
           views=(Overall("engine first commit p50 ms", 18, "engine_figures.first_commit_ms_p50"),)),
    Figure("engine_ms", "ms", "lower", "llm_request -> engine_done", lambda t: t.engine["engine_ms"], "float64",
           summary=(Summary("engine_figures.tokens_per_s", "tokens over engine seconds of the finished generations, "
                                                           "2 decimals", tokens_per_s, 81),),
           views=(Overall("engine tokens/s", 19, "engine_figures.tokens_per_s"),)),
    Figure("tokens", "tokens", "", "tokens generated (engine_done)", lambda t: t.engine["tokens"], "int32"),
    Figure("steps", "count", "", "engine steps (engine_done)", lambda t: t.engine["steps"], "int32"),
    Figure("forwards", "count", "lower", "model forward passes (engine_done)", lambda t: t.engine["forwards"], "int32",
           summary=(Summary("engine_figures.forwards_per_token", "forwards over tokens of the finished generations, "
                                                                 "3 decimals", forwards_per_token, 82),)),
    Figure("cancelled", "flag", "", "the generation was cancelled", lambda t: t.engine["cancelled"], "bool"),
    Figure("chunks", "count", "", "gate commits of the reply", lambda t: t.count(K.GATE_COMMIT), "int32"),
    Figure("errors", "count", "lower", "error events of the reply", lambda t: t.count(K.ERROR), "int32",
           views=(Flag("errors", 9, when="positive"), Wide("errors", 18))),
    Figure("spec_hits", "count", "higher", "speculative synthesis: held audio played as a committed chunk (null: none "
                                           "speculated)",
           lambda t: t.speculative["spec_hits"], "int32",
           summary=(Summary("speculative.hits", "sum", lambda s: s.total("spec_hits"), 65),)),
    Figure("spec_drops", "count", "lower", "speculative synthesis: held audio thrown away unheard (revised, cut "
                                           "elsewhere, reply ended)",
           lambda t: t.speculative["spec_drops"], "int32",
           summary=(Summary("speculative.drops", "sum", lambda s: s.total("spec_drops"), 66),)),
    Figure("tts_ms_saved", "ms", "higher", "speculative synthesis: synthesis ms already done when the hits' chunks were "
                                           "requested",
           lambda t: t.speculative["tts_ms_saved"], "float64",
           summary=(Summary("speculative.tts_ms_saved", "sum", lambda s: rounded(s.total("tts_ms_saved")), 67),)),
    Figure("truth_far_ms", "ms", "lower", "FAR re-derived from the recorded WAV (voicelab.measure.truth)",
           "the WAV analyser (voicelab.measure.truth)", "float64", line=_EVENTS,
           views=(ReportTurn(4), ReportLineTurn(4))),
    Figure("truth_stop_latency_ms", "ms", "lower", "stop latency re-derived from the recorded WAV",
           "the WAV analyser (voicelab.measure.truth)", "float64", line=_EVENTS,
           views=(ReportTurn(11), ReportLineTurn(6))),
    Figure("far_diff_ms", "ms", "nearer zero", "far_ms - truth_far_ms", "the table writer (voicelab.analysis.tables)",
           "float64", line=_EVENTS,
           summary=(Summary("truth.far_abs_diff_ms_p95", "p95 of |far_ms - WAV FAR| over matched turns",
                            lambda s: truth_p95(s, "far_ms"), 90),),
           views=(Overall("truth: FAR Δp95 ms (events vs WAV)", 20, "truth.far_abs_diff_ms_p95"),
                  Result("truth_far", "truth: FAR, events against the WAV (p95 of the difference)", "truth FAR Δ ms", 26,
                         "truth.far_abs_diff_ms_p95", "ms"),
                  ReportSummary("truth FAR |diff| p95", 9, "truth.far_abs_diff_ms_p95"))),
    Figure("stop_diff_ms", "ms", "nearer zero", "stop_latency_ms - truth_stop_latency_ms",
           "the table writer (voicelab.analysis.tables)", "float64", line=_EVENTS,
           summary=(Summary("truth.stop_abs_diff_ms_p95", "p95 of |stop_latency_ms - WAV stop latency| over matched "
                                                          "turns", lambda s: truth_p95(s, "stop_latency_ms"), 91),),
           views=(Result("truth_stop", "truth: stop latency, events against the WAV (p95 of the difference)",
                         "truth stop Δ ms", 27, "truth.stop_abs_diff_ms_p95", "ms"),
                  ReportSummary("truth stop |diff| p95", 10, "truth.stop_abs_diff_ms_p95"))),
    Figure("truth_overlap", "flag", "", "the WAV shows the bot already audible at the caller's speech end",
           "the WAV analyser (voicelab.measure.truth)", "bool", line=_EVENTS),
    # the line run's own columns (voicelab.call.line_run): not in the documented schema, kept after it
    Figure("talk_over_ms", "ms", "lower", "the agent audible during the caller's true speech (10 ms windows)",
           "the line run (voicelab.call.line_run)", line="recording",
           summary=(Summary("talk_over_ms", f"{_LATENCY}, answered turns (set by the line run)", None, 95),),
           views=(Flag("talk-over ms", 10, when="positive"), ReportLineTurn(8))),
    Figure("readback_text", "text", "", "the agent's reply as the lab's recogniser read it back from the recording",
           "the line run (voicelab.call.line_run)", line="recording",
           views=(Narrow("heard", 6, overflow="fold", show="text", optional=True), ReportLineTurn(12))),
    Figure("false_barge_in_by", "label", "", "what showed the false barge-in: the agent's clear, or its silence",
           "the line run (voicelab.call.line_run)", line="recording", views=(ReportLineTurn(10),)),
    Figure("audio_gaps", "count", "lower", "cuts to silence of 150-400 ms inside the agent's reply to this turn, as lost "
                                          "packets sound, less those its own clears made (voicelab.measure.audio_gaps)",
           "the line run (voicelab.call.line_run)", line="recording",
           summary=(Summary("audio_gaps", "count in the agent's audio over the calls, the greeting's included (set by "
                                          "the line run)", None, 96),),
           views=(Flag("audio gaps", 11, when="positive"),)),
    # figures of summary.json only
    Figure("calls", "count", "", "calls in the run",
           summary=(Summary("calls", "count", lambda s: len({e.call_id for e in s.events}), 10),), line=_EVENTS,
           views=(ReportSummary("calls", 0, "calls"),)),
    Figure("calls_failed", "count", "lower", "calls that failed on the line: refused, hung up mid-call, never answered, "
                                             "past their limit (set by the line run, which lists them in `failures`)",
           summary=(Summary("calls_failed", "count (set by the line run)", None, 12),), line="recording"),
    Figure("clears_unprompted", "count", "lower", "clears the agent sent while it was heard and the caller had been "
                                                  "silent 1 s: it cut itself off mid-reply, an audible revision on the "
                                                  "line (voicelab.call.line.caller_spoke)",
           summary=(Summary("clears_unprompted", "count over the calls (set by the line run)", None, 13),),
           line="recording"),
    Figure("turns", "count", "", "caller utterances in the run",
           summary=(Summary("turns", "count", lambda s: len(s.rows), 11),), line=_EVENTS,
           views=(Overall("turns", 0, "turns"), ReportSummary("turns", 1, "turns"))),
    Figure("unreliable_readings", "count", "lower", "turn ends decided on a reading the recogniser-reliability test "
                                                    "rejects (null without turn_decision rows, as on a line run)",
           summary=(Summary("unreliable_readings", "n, of (turn decisions) and by_reason", unreliable_readings, 49),),
           line=_EVENTS),
    Figure("tool_calls", "count", "", "tool_call rows by outcome: executed, confirmed, refused",
           summary=(Summary("tool_calls", "counts by outcome", tool_calls_by_outcome, 60),),
           views=(Overall("tool calls run/confirmed/refused", 17, "tool_calls", "parts",
                          parts=("executed", "confirmed", "refused")),)),
    Figure("price", "$", "lower", "tokens, cost per call and per 1,000 calls (voicelab.analysis.price)",
           summary=(Summary("price", "set by the run (null without a published price)", None, 99),)),
    Figure("machine", "verdict", "", "the machine while the run lasted: quiet or busy, the event loop's lag and "
                                     "the share of the CPU other processes took (voicelab.measure.machine_load)",
           summary=(Summary("machine", "set by the run: verdict, loop_lag_ms (p50, p95, max, n), others_cpu_share, "
                                       "own_cpu_share, cores, seconds (calls on Ray: the busiest call's, each task's own probe)",
                            None, 100),), line=_EVENTS, views=(Overall("machine", 30, "machine", "machine"),)),
]


# ---- reading and extending the catalogue ---------------------------------------------------------------------

def figures() -> tuple[Figure, ...]:
    """Every figure, in catalogue order (the per-turn table's column order)."""
    return tuple(_CATALOGUE)


def figure(name: str) -> Figure:
    for f in _CATALOGUE:
        if f.name == name:
            return f
    raise KeyError(name)


def register(f: Figure) -> Figure:
    """Add a figure to the catalogue (after the others); every view shows it from then on."""
    check(f, lambda name: any(g.name == name for g in _CATALOGUE))
    _CATALOGUE.append(f)
    return f


def unregister(name: str) -> None:
    _CATALOGUE.remove(figure(name))


def views(kind: type[V]) -> list[tuple[Figure, V]]:
    """(figure, view) for every view of this kind, in the view's order (`at`, then catalogue order)."""
    found = [(f, v) for f in _CATALOGUE for v in f.views if isinstance(v, kind)]
    return sorted(found, key=lambda fv: fv[1].at)


def parts_of(name: str) -> list[Figure]:
    """The figures that are consecutive parts of `name` (the FAR breakdown), in catalogue order."""
    return [f for f in _CATALOGUE if f.part_of == name]


def turn_row(facts: TurnFacts) -> dict[str, Any]:
    """One row of the per-turn table: every computed figure of one caller turn."""
    row: dict[str, Any] = {}
    for late in (False, True):
        for f in _CATALOGUE:
            if f.computed and f.row_last == late:
                row[f.name] = f.turn(facts)  # type: ignore[operator]
    return row


def summaries() -> list[tuple[Figure, Summary]]:
    """(figure, summary) for every summary.json value, in summary.json order."""
    return sorted(((f, s) for f in _CATALOGUE for s in f.summary), key=lambda fs: fs[1].at)


def summary(data: SummaryData) -> dict[str, Any]:
    """The figures' part of summary.json, nested by dotted key, in summary order (values `summarize` computes)."""
    out: dict[str, Any] = {}
    for _, s in summaries():
        if s.of is None:
            continue
        *groups, leaf = s.key.split(".")
        node = out
        for g in groups:
            node = node.setdefault(g, {})
        node[leaf] = s.of(data)
    return out


def line_not_measured() -> tuple[str, ...]:
    """Top-level summary.json keys a line run cannot measure (every figure under the key has line "no"), in
    summary order: the run sets them to null and lists them in `not_measured`."""
    under: dict[str, list[Figure]] = {}
    for f, s in summaries():
        under.setdefault(s.key.split(".")[0], []).append(f)
    return tuple(k for k, fs in under.items() if all(f.line == "no" for f in fs))


def line_columns() -> tuple[str, ...]:
    """Per-turn columns a line run sets from its recording (turns.csv and turns.parquet)."""
    return tuple(f.name for f in _CATALOGUE if f.line == "recording" and f.per_turn)


T = TypeVar("T")


class Live(Mapping[str, T]):
    """A read-only mapping rebuilt from the catalogue on every use, so a registered figure is in it."""

    def __init__(self, build: Callable[[], dict[str, T]]) -> None:
        self._build = build

    def __getitem__(self, key: str) -> T:
        return self._build()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._build())

    def __len__(self) -> int:
        return len(self._build())


