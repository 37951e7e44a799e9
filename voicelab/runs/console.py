"""The console tables of `voicelab run` (rich): per turn, injected faults, and overall per configuration.

Two shapes. The narrow one (default) fits an 80-column terminal: one small table per call under a heading,
the FAR breakdown in one cell, a flags cell naming only the defects present, two-line headers; the overall
figures as rows (figure | value [95 % interval]), one column per configuration. `--wide` prints the old
one-row-per-turn tables with a column per figure. Every figure of the wide tables is in the narrow ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import Any

from rich.console import Console
from rich.table import Table

# the critical path of a reply, in order; a part a run did not measure is left out of the cell
BREAKDOWN = (("ep", "endpointing_ms"), ("stt", "stt_ms"), ("eng", "engine_first_commit_ms"),
             ("gate", "gate_to_tts_ms"), ("tts", "tts_first_audio_ms"), ("play", "playout_ms"))
# endpointing's own parts: the VAD's stop, the wait for the final reading, the turn rule's wait
ENDPOINTING = (("vad", "vad_stop_ms"), ("final", "stt_final_wait_ms"), ("rule", "rule_wait_ms"))
# defects a turn can have: (label, key, kind); "bool" shows the label when true, "count" shows "label N" when N > 0
FLAGS = (("false cut-in", "false_cut_in", "bool"), ("false BI", "false_barge_in", "bool"),
         ("false pause", "false_pause", "bool"), ("heard err", "heard_word_errors", "count"),
         ("churn", "churn", "count"), ("post-syn", "post_synthesis", "count"), ("audible", "audible", "count"),
         ("wrong tool", "wrong_tool_call", "bool"), ("incoherent", "coherent", "false"),
         ("errors", "errors", "count"))
WIDE_TURN_COLUMNS = (("call", "call_id"), ("turn", "turn"), ("expect", "expect"), ("FAR ms", "far_ms"),
                     ("endpt", "endpointing_ms"), ("stt", "stt_ms"), ("engine", "engine_first_commit_ms"),
                     ("tts", "tts_first_audio_ms"), ("playout", "playout_ms"), ("stop ms", "stop_latency_ms"),
                     ("heard err", "heard_word_errors"), ("false BI", "false_barge_in"),
                     ("false pause", "false_pause"), ("churn", "churn"), ("post-syn", "post_synthesis"),
                     ("audible", "audible"), ("answer ok", "answer_correct"), ("coherent", "coherent"),
                     ("errors", "errors"))


def _f(x: Any, nd: int = 0) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def _pci(stats: Mapping[str, Any] | None, key: str) -> str:
    """'p50 [lo–hi]': a percentile with its bootstrap 95 % interval (just the figure when there is none)."""
    stats = stats or {}
    ci = stats.get(f"{key}_ci")
    fig = _f(stats.get(key))
    return fig if not ci or ci[0] is None else f"{fig} [{ci[0]:.0f}–{ci[1]:.0f}]"


def breakdown_cell(row: Mapping[str, Any]) -> str:
    """'ep 431 (vad 250 final 31 rule 150) stt 0 eng 27 …': the critical path's parts this turn has figures for."""
    parts = []
    for label, key in BREAKDOWN:
        if row.get(key) is None:
            continue
        cell = f"{label} {_f(row[key])}"
        inner = [f"{lab} {_f(row[k])}" for lab, k in ENDPOINTING if row.get(k) is not None]
        parts.append(f"{cell} ({' '.join(inner)})" if key == "endpointing_ms" and inner else cell)
    return " ".join(parts)


def flags_cell(row: Mapping[str, Any]) -> str:
    """The defects present in a turn, by name ('' for a clean turn)."""
    out = []
    for label, key, kind in FLAGS:
        v = row.get(key)
        if kind == "bool" and v is True or kind == "false" and v is False:
            out.append(label)
        elif kind == "count" and isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            out.append(f"{label} {_f(v)}")
    return ", ".join(out)


def _answer_mark(row: Mapping[str, Any]) -> str:
    v = row.get("answer_correct")
    return "—" if v is None else ("ok" if v else "wrong")


def print_turns(console: Console, rows: list[dict[str, Any]], title: str = "per turn", *,
                wide: bool = False) -> None:
    """Per-turn figures: one table per call (narrow), or one row per turn with a column per figure (`wide`)."""
    if wide:
        t = Table(title=title)
        for name, _ in WIDE_TURN_COLUMNS:
            t.add_column(name, justify="left" if name in ("call", "expect") else "right")
        for r in rows:
            t.add_row(*[_f(r.get(k)) for _, k in WIDE_TURN_COLUMNS])
        console.print(t)
        return
    console.print(f"[bold]{title}[/bold]")
    for call_id, turns in groupby(rows, key=lambda r: r.get("call_id")):
        t = Table(title=f"call {call_id}", title_justify="left", expand=False, pad_edge=False)
        t.add_column("turn", justify="right")
        t.add_column("expect", overflow="fold")
        t.add_column("FAR\nms", justify="right")
        t.add_column("breakdown ms", overflow="fold", ratio=3)
        t.add_column("stop\nms", justify="right")
        t.add_column("answer")
        t.add_column("flags", overflow="fold", ratio=2)
        for r in turns:
            t.add_row(_f(r.get("turn")), _f(r.get("expect")) if r.get("expect") else "", _f(r.get("far_ms")),
                      breakdown_cell(r), _f(r.get("stop_latency_ms")), _answer_mark(r), flags_cell(r))
        console.print(t)


def print_faults(console: Console, rows: list[dict[str, Any]]) -> None:
    """The injected faults (`--inject`) and what handled each; nothing when none fired."""
    if not rows:
        return
    t = Table(title="injected faults")
    for name in ("call", "fault", "where", "t s", "handled by", "bot heard\nafter"):
        t.add_column(name, overflow="fold")
    for r in rows:
        t.add_row(r["call_id"], r["fault"], r["where"], _f(r["t_s"], 2), r["handled_by"], _f(r["bot_heard_after"]))
    console.print(t)


def _read_cell(s: Mapping[str, Any]) -> str:
    """Answers correct on the turns whose slot words the recogniser read (metrics.slots_read)."""
    a = s.get("answers") or {}
    return "—" if a.get("correct_slots_read") is None else f"{100 * a['correct_slots_read']:.1f} % of {a.get('n_slots_read')}"


def _answer_cells(s: Mapping[str, Any]) -> tuple[str, str, str]:
    """'answer acc' (correct of the replies the fixtures score, with n), 'coherent' (of all replies) and tool
    calls executed/confirmed/refused, for the overall table: FAR beside whether the answers were right."""
    a = s.get("answers") or {}
    tools = s.get("tool_calls") or {}
    acc = "—" if a.get("correct") is None else f"{100 * a['correct']:.1f} % of {a.get('n')}"
    coh = "—" if a.get("coherent") is None else f"{100 * a['coherent']:.1f} %"
    return acc, coh, (f"{_f(tools.get('executed'))}/{_f(tools.get('confirmed'))}/{_f(tools.get('refused'))}"
                      if tools else "—")


def config_label(s: Mapping[str, Any]) -> str:
    return " ".join(str(s.get(k) or "") for k in ("engine", "sampler", "policy")).strip() or str(s["run_id"])


def summary_figures(s: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(figure, value) pairs of one summary, the order of the overall table; intervals in brackets."""
    rev = s["revisions"]
    acc, coh, tools = _answer_cells(s)
    return [
        ("turns", _f(s["turns"])),
        ("FAR p50 ms", _pci(s["far_ms"], "p50")), ("FAR p95 ms", _pci(s["far_ms"], "p95")),
        ("stop latency p50 ms", _pci(s["stop_latency_ms"], "p50")),
        ("stop latency p95 ms", _pci(s["stop_latency_ms"], "p95")),
        ("recovery p50 ms", _pci(s["recovery_ms"], "p50")),
        ("heard-text word errors", _f(s["heard_text_word_errors"])),
        ("false barge-ins", _f(s["false_barge_ins"])), ("false pauses", _f(s.get("false_pauses"))),
        ("false cut-ins", _f(s.get("false_cut_ins"))),
        ("audible revisions / 100 words", _f(rev["audible_per_100_words"], 2)),
        ("churn", _f(rev["churn"])), ("post-synthesis revisions", _f(rev["post_synthesis"])),
        ("answers correct", acc), ("answers correct, slot words read", _read_cell(s)), ("answers coherent", coh), ("tool calls run/confirmed/refused", tools),
        ("engine first commit p50 ms", _f(s["engine_figures"]["first_commit_ms_p50"])),
        ("engine tokens/s", _f(s["engine_figures"]["tokens_per_s"])),
        ("truth: FAR Δp95 ms (events vs WAV)", _f(s["truth"]["far_abs_diff_ms_p95"])),
    ]


def print_summary(console: Console, summaries: Sequence[dict[str, Any]], *, wide: bool = False) -> None:
    """The overall figures: a row per figure and a column per configuration (`wide`: a row per configuration)."""
    if wide:
        t = Table(title="overall")
        names = [name for name, _ in summary_figures(summaries[0])] if summaries else []
        t.add_column("config", no_wrap=True)
        for name in names:
            t.add_column(name, justify="right", overflow="fold")
        for s in summaries:
            t.add_row(config_label(s), *[v for _, v in summary_figures(s)])
        console.print(t)
        return
    t = Table(title="overall (95 % intervals in brackets)", title_justify="left")
    t.add_column("figure", overflow="fold")
    for s in summaries:
        t.add_column(config_label(s) if len(summaries) > 1 else "value", justify="right", overflow="fold")
    columns = [summary_figures(s) for s in summaries]
    for i, (name, _) in enumerate(columns[0] if columns else []):
        t.add_row(name, *[c[i][1] for c in columns])
    console.print(t)
