"""`voicelab report RUN`: one self-contained HTML page (plots as inline PNGs, inline CSS, no network).

Input: a run folder, or a folder of runs (a matrix or a sweep). Sections:
1. the summary of each configuration (with the measurement-truth verdict);
2. FAR distribution per configuration (box plot with every turn as a dot);
3. stacked FAR breakdown (median of each part per configuration; per turn when there is one run), endpointing
   drawn as its parts (VAD stop, final reading, rule wait) where the tables have them;
4. for each run shown in detail: a waterfall timeline per turn (caller speech, VAD, turn end, STT, engine
   steps, commits, TTS, playout, what the recording shows), the denoising canvas heatmap of the first replies
   (position x step: masked, tentative, committed, spoken; revisions marked), and the per-turn table.

Everything is read through `voicelab.analysis.load_run`; the recording lane uses calls/<call_id>.wav when
present. Which figures the summary and per-turn tables and the stacked breakdown show is the figure catalogue's
(`voicelab.measure.figures`: its `ReportSummary`, `ReportTurn`, `ReportLineTurn` and `ReportPart` views). Plots
use matplotlib's object API (no pyplot state).
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from voicelab.analysis import AnalysisError, RunData, client_server, find_runs, load_run
from voicelab.analysis.tables import is_finished
from voicelab.measure import onset
from voicelab.measure.figure_views import ReportLineTurn, ReportPart, ReportSummary, ReportTurn
from voicelab.measure.figures import ACCURACY_BAR, views
from voicelab.measure.truth import TruthError, read_call_wav, summary_verdict

CANVAS_STATES = ("masked", "tentative", "committed", "spoken")
CANVAS_COLORS = ("#3b3b3b", "#f2d16b", "#4a90d9", "#3cb371")

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1100px;color:#222;
line-height:1.45;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.5em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .5em;
text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
img{max-width:100%;display:block;margin:.5em 0}.note{color:#555;font-size:.92em}
.ok{color:#1a7f37;font-weight:600}.bad{color:#b42318;font-weight:600}.scroll{overflow-x:auto}
"""


# ---- helpers ---------------------------------------------------------------------------------------------

def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _img(fig: Figure, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="{_png(fig)}">'


def _p(text: str, cls: str = "note") -> str:
    return f'<p class="{cls}">{html.escape(text)}</p>'


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _answered(turns: pd.DataFrame) -> pd.DataFrame:
    return turns[turns["expect"].fillna("") != "no_interrupt"]


# ---- configuration-level plots ---------------------------------------------------------------------------

def far_distribution(runs: Sequence[RunData]) -> Figure | None:
    """Box plot of per-turn FAR per configuration, every turn drawn as a dot on top."""
    data = [(_answered(r.turns)["far_ms"].dropna().to_numpy(dtype=float), r.label) for r in runs]
    data = [(d, lbl) for d, lbl in data if d.size]
    if not data:
        return None
    fig = Figure(figsize=(9, 0.6 + 0.45 * len(data) + 0.8))
    ax = fig.subplots()
    ax.boxplot([d for d, _ in data], vert=False, widths=0.5, showfliers=False)
    rng = np.random.default_rng(0)  # fixed jitter: the same run draws the same picture
    for i, (d, _) in enumerate(data, start=1):
        ax.scatter(d, i + rng.uniform(-0.15, 0.15, d.size), s=12, alpha=0.6, color="#1f77b4", zorder=3)
    cis = {r.label: (r.summary.get("far_ms") or {}).get("p50_ci") for r in runs}
    for i, (_, lbl) in enumerate(data, start=1):
        if cis.get(lbl):  # the median's bootstrap 95 % interval, drawn just under the box
            ax.plot(cis[lbl], [i - 0.32, i - 0.32], color="#b42318", linewidth=3, zorder=4,
                    label="p50 95 % interval" if i == 1 else None)
    if any(cis.values()):
        ax.legend(fontsize=7, loc="lower right")
    ax.set_yticks(range(1, len(data) + 1), [lbl for _, lbl in data], fontsize=8)
    ax.set_xlabel("first audible response (ms after the caller stopped speaking)")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _split(t: pd.DataFrame, whole: str, parts: Sequence[str]) -> bool:
    """Whether this table can draw `whole` as its parts: it has their columns, and every turn with a `whole`
    value has all its parts (a run folder from before the split has only the whole)."""
    if not parts or any(p not in t.columns for p in parts):
        return False
    has = t[whole].notna() if whole in t.columns else pd.Series(False, index=t.index)
    return bool(t.loc[has, list(parts)].notna().all(axis=None))


def breakdown_parts(tables: Sequence[pd.DataFrame]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The stacked bars of the FAR breakdown (its critical path) for these per-turn tables: columns, colours and
    legend labels, from the catalogue's `ReportPart` views. A bar whose figure has `ReportPart` parts of its own
    (endpointing: VAD stop, final reading, rule wait) is drawn as them when every table has them, else whole."""
    found = views(ReportPart)
    names = {f.name for f, _ in found}
    subs: dict[str, list[tuple[Any, ReportPart]]] = {}
    for f, v in found:
        if f.part_of in names:
            subs.setdefault(f.part_of, []).append((f, v))
    chosen: list[tuple[Any, ReportPart]] = []
    for f, v in found:
        if f.part_of in names:
            continue
        mine = subs.get(f.name, [])
        split = bool(mine) and all(_split(t, f.name, [g.name for g, _ in mine]) for t in tables)
        chosen += mine if split else [(f, v)]
    return (tuple(f.name for f, _ in chosen), tuple(v.colour for _, v in chosen),
            tuple(v.label or f.name.removesuffix("_ms").replace("_", " ") for f, v in chosen))


def breakdown_plot(runs: Sequence[RunData]) -> Figure | None:
    """Stacked bars of the FAR parts: medians per configuration, or every turn of a single run."""
    parts, colours, names = breakdown_parts([_answered(r.turns) for r in runs])
    if len(runs) == 1:
        t = _answered(runs[0].turns).dropna(subset=["far_ms"])
        labels = [f"{c}/{k}" for c, k in zip(t["call_id"], t["turn"], strict=True)]
        values = [[_num(v) or 0.0 for v in t[p]] for p in parts]
        far = list(t["far_ms"].astype(float))
    else:
        labels, far = [], []
        values = [[] for _ in parts]
        for r in runs:
            t = _answered(r.turns).dropna(subset=["far_ms"])
            if t.empty:
                continue
            labels.append(r.label)
            far.append(float(t["far_ms"].median()))
            for i, p in enumerate(parts):
                values[i].append(_num(t[p].median()) or 0.0)
    if not labels:
        return None
    fig = Figure(figsize=(9, 0.8 + 0.35 * len(labels) + 0.8))
    ax = fig.subplots()
    y = np.arange(len(labels))
    left = np.zeros(len(labels))
    for vals, colour, name in zip(values, colours, names, strict=True):
        v = np.clip(np.array(vals, dtype=float), 0, None)
        ax.barh(y, v, left=left, color=colour, label=name)
        left += v
    ax.scatter(far, y, marker="|", s=200, color="black", zorder=3, label="FAR" if len(runs) == 1 else "median FAR")
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ms")
    ax.legend(fontsize=7, ncol=4, loc="lower left", bbox_to_anchor=(0, 1.01), frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return fig


# ---- per-turn waterfall ----------------------------------------------------------------------------------

LANES = ("caller speech", "VAD", "turn end / STT", "engine steps", "commits", "TTS", "playout", "recording")


def _wav_activity(run: RunData, call_id: str) -> tuple[np.ndarray, float] | None:
    """Per-ms audible flags of the bot channel (onset rule windows), or None without a readable WAV."""
    wav = run.path / "calls" / f"{call_id}.wav"
    if not wav.is_file():
        return None
    try:
        _, bot, sr = read_call_wav(wav)
    except TruthError:
        return None
    hop_s = max(1, round(sr * onset.RULE.hop_ms / 1000)) / sr
    return onset.active_windows(bot, sr), hop_s


def _spans(flags: np.ndarray) -> list[tuple[int, int]]:
    edges = np.diff(np.concatenate(([0], flags.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))


def _waterfall_title(ax: Axes, run: RunData, call_id: str, turn: int, recording_lane: int) -> None:
    """Title the turn's timeline (call, turn, expect, FAR, stop latency) and draw the FAR arrow."""
    row = run.turns[(run.turns["call_id"] == call_id) & (run.turns["turn"] == turn)]
    far = _num(row["far_ms"].iloc[0]) if not row.empty else None
    title = f"{call_id} turn {turn}"
    if not row.empty and isinstance(row["expect"].iloc[0], str):
        title += f" ({row['expect'].iloc[0]})"
    if far is not None:
        title += f" - FAR {far:.0f} ms"
        ax.annotate("", xy=(far, recording_lane + 0.45), xytext=(0, recording_lane + 0.45),
                    arrowprops={"arrowstyle": "<->", "color": "#d81b60"})
    stop = _num(row["stop_latency_ms"].iloc[0]) if not row.empty else None
    if stop is not None:
        title += f" - stop {stop:.0f} ms"
    ax.set_title(title, fontsize=9, loc="left")


def waterfall(run: RunData, call_id: str, turn: int, activity: tuple[np.ndarray, float] | None) -> Figure | None:
    """Timeline of one turn, 0 = the caller's speech end (ground truth); all events of the call in view."""
    ev = run.events[run.events["call_id"] == call_id]
    mine = ev[ev["turn"] == turn]
    s_end = mine.loc[mine["kind"] == "caller_speech_end", "t_ms"]
    s_start = mine.loc[mine["kind"] == "caller_speech_start", "t_ms"]
    if s_end.empty:
        return None
    t0 = float(s_end.iloc[0])
    lo = (float(s_start.iloc[0]) if not s_start.empty else t0) - 300
    reply_end = mine.loc[mine["kind"].isin(["playout_stop", "bot_audible_end"]), "t_ms"]
    hi = max(float(reply_end.max()) if not reply_end.empty else t0 + 1500, t0 + 800) + 300
    view = ev[(ev["t_ms"] >= lo) & (ev["t_ms"] <= hi)]

    fig = Figure(figsize=(10, 3.1))
    ax = fig.subplots()
    lane = {name: i for i, name in enumerate(LANES)}

    def rel(t: float) -> float:
        return t - t0

    def bars(start_kind: str, stop_kind: str, row: str, color: str, key: str | None = None) -> None:
        starts = ev[(ev["kind"] == start_kind) & (ev["t_ms"] <= hi)]
        stops = ev[ev["kind"] == stop_kind]
        for s in starts.itertuples(index=False):
            later = stops[stops["t_ms"] >= s.t_ms]
            if key is not None:
                later = later[(later[key] == getattr(s, key)) & (later["turn"] == s.turn)]
            e = float(later["t_ms"].iloc[0]) if not later.empty else hi
            if e < lo:
                continue  # over before the view starts
            s = s._replace(t_ms=max(s.t_ms, lo))
            alpha = 1.0 if s.turn == turn else 0.45  # another turn's reply (e.g. the one being cut)
            ax.barh(lane[row], rel(min(e, hi)) - rel(s.t_ms), left=rel(s.t_ms), height=0.6, color=color,
                    alpha=alpha, edgecolor="black", linewidth=0.3)

    def marks(kind: str, row: str, marker: str, color: str, size: float = 40) -> None:
        pts = view[view["kind"] == kind]
        if not pts.empty:
            ax.scatter([rel(t) for t in pts["t_ms"]], [lane[row]] * len(pts), marker=marker, color=color, s=size,
                       zorder=3)

    bars("caller_speech_start", "caller_speech_end", "caller speech", "#9e9e9e")
    bars("vad_start", "vad_stop", "VAD", "#b39ddb")
    marks("turn_end", "turn end / STT", "|", "black", 120)
    marks("stt_final", "turn end / STT", "o", "#2e7d32")
    marks("llm_request", "turn end / STT", ">", "#1565c0")
    marks("engine_snapshot", "engine steps", "|", "#616161", 30)
    marks("engine_done", "engine steps", "x", "black")
    marks("gate_commit", "commits", "D", "#4a90d9", 30)
    bars("tts_request", "tts_first_audio", "TTS", "#a6d854", key="chunk_id")
    bars("playout_start", "playout_stop", "playout", "#3cb371", key="chunk_id")
    if activity is not None:
        flags, hop_s = activity
        a, b = max(0, int(lo / 1000 / hop_s)), min(flags.size, int(hi / 1000 / hop_s) + 1)
        for s, e in _spans(flags[a:b]):
            ax.barh(lane["recording"], (e - s) * hop_s * 1000, left=rel((a + s) * hop_s * 1000), height=0.6,
                    color="#263238")
    marks("bot_audible_onset", "recording", "v", "#d81b60", 60)
    marks("bot_audible_end", "recording", "^", "#d81b60", 60)
    for t in view.loc[view["kind"] == "interruption", "t_ms"]:
        ax.axvline(rel(t), color="#b42318", linestyle="--", linewidth=1)
    ax.axvline(0, color="black", linewidth=0.8)
    _waterfall_title(ax, run, call_id, turn, lane["recording"])
    ax.set_yticks(range(len(LANES)), LANES, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(rel(lo), rel(hi))
    ax.set_xlabel("ms from the end of the caller's speech (dashed red: interruption)", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return fig


# ---- denoising canvas heatmap ----------------------------------------------------------------------------

def canvas_matrix(run: RunData, call_id: str, turn: int) -> tuple[np.ndarray, list[tuple[int, int]], bool] | None:
    """(states[step row, position], revision marks (row, position), per-position mask logged).

    States index CANVAS_STATES. One row per engine_snapshot of the turn's first generation, plus a last row
    for the end of the call (what was finally spoken). None when the turn logged no snapshots.
    """
    snaps = run.payloads("engine_snapshot")
    if snaps.empty:
        return None
    snaps = snaps[(snaps["call_id"] == call_id) & (snaps["turn"] == turn)].sort_values("t_ns")
    if snaps.empty:
        return None
    if "gen_id" in snaps.columns and snaps["gen_id"].notna().any():  # the pipeline tags each generation
        snaps = snaps[snaps["gen_id"] == snaps["gen_id"].iloc[0]]
    steps = list(snaps["step"])
    restart = next((i for i in range(1, len(steps)) if steps[i] <= steps[i - 1]), len(steps))
    snaps = snaps.iloc[:restart]  # a second generation (re-asked turn) would need its own picture
    has_mask = "mask" in snaps.columns and snaps["mask"].notna().all()
    if has_mask:
        n = int(max(len(m) for m in snaps["mask"]))
    else:
        n = int(max(int(p) + int(m) for p, m in zip(snaps["prefix_len"], snaps["masked"], strict=True)))
    n = max(n, 1)
    ch = run.chunks[(run.chunks["call_id"] == call_id) & (run.chunks["turn"] == turn)]
    ch = ch[ch["reply"] == 0] if "reply" in ch.columns else ch
    commits = [(float(t), int(e)) for t, e in zip(ch["commit_ms"], ch["tokens_end"], strict=True) if _num(e) is not None]
    spoken = [(float(t), int(e)) for t, e in zip(ch["playout_start_ms"], ch["tokens_end"], strict=True)
              if _num(t) is not None and _num(e) is not None]
    rows, marks = [], []
    times = [float(t) / 1e6 for t in snaps["t_ns"]] + [math.inf]
    unmasked_last = np.zeros(n, dtype=bool)
    for r, t in enumerate(times):
        if r < len(snaps):
            s = snaps.iloc[r]
            unmasked = np.zeros(n, dtype=bool)
            if has_mask:
                m = str(s["mask"])
                unmasked[: len(m)] = [c == "0" for c in m]
            else:
                unmasked[: int(s["prefix_len"])] = True
            unmasked_last = unmasked
            revised = s["revised"] if isinstance(s.get("revised"), list) else []
            marks += [(r, int(p)) for p in revised if 0 <= int(p) < n]
        else:
            unmasked = unmasked_last
        state = np.where(unmasked, 1, 0)
        c_end = max([e for tc, e in commits if tc <= t], default=0)
        s_end = max([e for ts, e in spoken if ts <= t], default=0)
        idx = np.arange(n)
        state = np.where(unmasked & (idx < c_end), 2, state)
        state = np.where(unmasked & (idx < s_end), 3, state)
        rows.append(state)
    return np.array(rows), marks, bool(has_mask)


def canvas_heatmap(run: RunData, call_id: str, turn: int) -> tuple[Figure, bool] | None:
    m = canvas_matrix(run, call_id, turn)
    if m is None:
        return None
    states, marks, has_mask = m
    fig = Figure(figsize=(9, min(6.0, 1.2 + 0.12 * states.shape[0])))
    ax = fig.subplots()
    ax.imshow(states, aspect="auto", interpolation="nearest", cmap=ListedColormap(CANVAS_COLORS), vmin=0, vmax=3)
    if marks:
        ax.scatter([p for _, p in marks], [r for r, _ in marks], marker="x", color="#e53935", s=28, linewidths=1.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("canvas position (token)")
    ax.set_ylabel("engine step (last row: end of call)")
    ax.set_title(f"{call_id} turn {turn}: denoising canvas", fontsize=9, loc="left")
    handles = [Patch(color=c, label=s) for c, s in zip(CANVAS_COLORS, CANVAS_STATES, strict=True)]
    handles.append(Patch(color="#e53935", label="x = revised"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig, has_mask


# ---- HTML ------------------------------------------------------------------------------------------------

def summary_cols() -> list[tuple[str, str]]:
    """(dotted summary.json key, header) of the summary table: the catalogue's `ReportSummary` views."""
    return [(v.key, v.header) for _, v in views(ReportSummary)]


def turn_cols(line_run: bool = False) -> list[str]:
    """The per-turn table's columns (a line run's: what a recording can show): the catalogue's `ReportTurn` and
    `ReportLineTurn` views."""
    return [f.name for f, _ in (views(ReportLineTurn) if line_run else views(ReportTurn))]


def _get(d: dict[str, Any], dotted: str) -> Any:
    for k in dotted.split("."):
        if not isinstance(d, dict):
            return None
        d = d.get(k)  # type: ignore[assignment]
    return d


NOT_MEASURED = "not measured"


def not_measured(summary: dict[str, Any], dotted: str) -> bool:
    """The run could not see this figure (summary.json's `not_measured`, e.g. a `voicelab call` run measured from
    the line's audio alone): it is shown as "not measured", never as 0 or as an empty sample."""
    return dotted.split(".")[0] in (summary.get("not_measured") or ())


def _with_ci(summary: dict[str, Any], dotted: str) -> str:
    """A figure, and its bootstrap 95 % interval when summary.json has one ('p50 [lo–hi]')."""
    if not_measured(summary, dotted):
        return NOT_MEASURED
    ci = _get(summary, f"{dotted}_ci")
    fig = _fmt(_get(summary, dotted))
    return f"{fig} [{ci[0]:.0f}–{ci[1]:.0f}]" if isinstance(ci, list) and ci[0] is not None else fig


CLIENT_SERVER_COLS = (("turn", "turn"), ("client_far_ms", "client FAR"), ("server_far_vad_ms", "server FAR (VAD)"),
                      ("difference_ms", "difference"), ("vad_lag_ms", "VAD lag"), ("uplink_ms", "uplink"),
                      ("jitter_buffer_ms", "jitter buffer"), ("downlink_other_ms", "downlink rest"),
                      ("jitter_target_ms", "jitter target"),
                      ("residual_ms", "residual"), ("offset_error_ms", "± offset"),
                      ("server_far_ms", "server FAR (recording)"))


def client_server_section(runs: Sequence[RunData]) -> str:
    """Live runs: the page's own FAR against the server's, part by part (`voicelab.analysis.client_server`)."""
    tables = []
    for r in runs:
        if not r.config.get("live"):
            continue
        rows = client_server.breakdown(r.event_list())
        head = "".join(f"<th>{html.escape(h)}</th>" for _, h in CLIENT_SERVER_COLS)
        body = "".join("<tr>" + "".join(f"<td>{_fmt(getattr(b, k))}</td>" for k, _ in CLIENT_SERVER_COLS) + "</tr>"
                       for b in rows)
        tables.append(_p(f"{r.run_id} ({r.config.get('user_agent') or 'unknown browser'})")
                      + (f'<div class="scroll"><table><tr>{head}</tr>{body}</table></div>' if rows
                         else _p("The page reported no client-side FAR in this session.")))
    if not tables:
        return ""
    return ("<h2>Live sessions: client − server FAR</h2>"
            + _p("The page measures its own FAR (its microphone's speech end to the bot's onset in its analyser); the "
                 "server FAR it shows beside it starts at the VAD's estimate of the speech end. Difference = VAD lag "
                 "(VAD estimate − acoustic end in the server recording) + uplink (page mic end → that acoustic end) "
                 "+ jitter buffer (the page's getStats, over the reply's first 300 ms) + downlink rest "
                 "(packetization, network, decoding, the "
                 "page's 10 ms polling). Page times are put on the call clock with the offset of the least "
                 "round-trip ping; uplink and downlink are each uncertain by ± offset, their sum is not. Residual: "
                 f"what the parts leave of the difference (0 within {client_server.RESIDUAL_TOLERANCE_MS:g} ms when "
                 "every anchor agrees).")
            + "".join(tables))


def _summary_table(runs: Sequence[RunData]) -> str:
    cols = summary_cols()
    head = "<tr><th>configuration</th>" + "".join(f"<th>{html.escape(h)}</th>" for _, h in cols) + "</tr>"
    body = []
    for r in runs:
        cells = "".join(f"<td>{_with_ci(r.summary, k)}</td>" for k, _ in cols)
        body.append(f"<tr><td>{html.escape(r.label)}<br><small>{html.escape(r.run_id)}</small></td>{cells}</tr>")
    return f'<div class="scroll"><table>{head}{"".join(body)}</table></div>'


def answers_section(runs: Sequence[RunData]) -> str:
    """FAR beside answer accuracy and coherence per configuration (engines.shop.answers), so a fast but wrong
    configuration shows; accuracy below ACCURACY_BAR is marked."""
    head = "".join(f"<th>{h}</th>" for h in ("configuration", "FAR p50", "FAR p95", "answer accuracy", "coherent",
                                             "wrong tool calls", "tool calls executed / confirmed / refused"))
    body = []
    for r in runs:
        a = r.summary.get("answers") or {}
        tools = r.summary.get("tool_calls") or {}
        acc = a.get("correct")
        cls = "note" if acc is None else ("ok" if acc >= ACCURACY_BAR else "bad")
        acc_txt = "–" if acc is None else f"{100 * acc:.1f} % of {a.get('n')}"
        coh = a.get("coherent")
        coh_txt = "–" if coh is None else f"{100 * coh:.1f} % of {a.get('replies')}"
        if not_measured(r.summary, "answers"):
            acc_txt = coh_txt = NOT_MEASURED
        wrong = NOT_MEASURED if not_measured(r.summary, "tool_calls") else _fmt(a.get("wrong_tool_calls"))
        tools_txt = (NOT_MEASURED if not_measured(r.summary, "tool_calls") else
                     f"{_fmt(tools.get('executed'))} / {_fmt(tools.get('confirmed'))} / {_fmt(tools.get('refused'))}")
        body.append(f"<tr><td>{html.escape(r.label)}</td><td>{_with_ci(r.summary, 'far_ms.p50')}</td>"
                    f"<td>{_with_ci(r.summary, 'far_ms.p95')}</td><td class=\"{cls}\">{acc_txt}</td>"
                    f"<td>{coh_txt}</td><td>{wrong}</td><td>{tools_txt}</td></tr>")
    return ("<h2>Answers beside FAR</h2>" + f'<div class="scroll"><table><tr>{head}</tr>{"".join(body)}</table></div>'
            + _p(f"Answer accuracy: replies with the right intent and exact slot values, of the caller turns whose "
                 f"fixture says what the answer is (expect_reply); below {100 * ACCURACY_BAR:.0f} % in red. "
                 "Coherent: replies that are a well-formed response of the shop's reply grammar with consistent "
                 "slots, of all replies. Wrong tool calls: a tool call where none (or another) was expected. "
                 "Destructive tool calls without a reason are refused by the pipeline (--tool-reason); confirmed: "
                 "run after the caller said yes to the bot's question (--tool-reason confirm)."))


def line_section(runs: Sequence[RunData]) -> str:
    """Runs over a telephone media stream: the line's own figures (`voicelab.call.line`)."""
    rows = []
    for r in runs:
        line = r.summary.get("line")
        if not isinstance(line, dict):
            continue
        cells = [_fmt(_get(line, k)) for k in ("caller_send_late_ms.p95", "agent_frame_ms.p50", "agent_jitter_ms",
                                                "agent_gap_ms.max", "queue_depth_ms.p95", "queue_delay_ms.p95",
                                                "clears", "cleared_audio_ms")]
        cells += [_with_ci(r.summary, "talk_over_ms.p95"), _fmt(r.summary.get("calls_failed"))]
        rows.append(f"<tr><td>{html.escape(r.label)}</td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    if not rows:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("configuration", "caller frames late p95", "agent frame p50",
                                             "agent jitter", "agent gap max", "queue depth p95", "queue delay p95",
                                             "clears", "cleared audio", "talk-over p95", "calls failed"))
    return ("<h2>The phone line</h2>" + f'<div class="scroll"><table><tr>{head}</tr>{"".join(rows)}</table></div>'
            + _p("Runs measured over a telephone media stream (voicelab call; docs/phone-line.md): how late the lab's "
                 "20 ms caller frames left, how the agent sent its audio (per message; RFC 3550 jitter; longest "
                 "gap), how much of it waited in the carrier's queue (depth while talking; delay before it was "
                 "heard), clears and the audio they dropped, and talk-over (the agent audible during the caller's "
                 "speech). Figures such a run cannot see read \"not measured\"."))


def _turn_table(run: RunData) -> str:
    cols = [c for c in turn_cols(run.summary.get("measured_from") == "line") if c in run.turns.columns]
    head = "<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>"
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
                   for row in run.turns[cols].itertuples(index=False))
    return f'<div class="scroll"><table>{head}{body}</table></div>'


def _runs_at(path: Path) -> list[RunData]:
    if (path / "events.jsonl").is_file() or (path / "events.parquet").is_file():
        if not is_finished(path):
            raise AnalysisError(f"{path}: unfinished run (no summary.json, or its INCOMPLETE marker is there: it "
                                "was killed or is still running); run it again")
        return [load_run(path)]
    found = find_runs(path)
    if not found:
        raise AnalysisError(f"{path}: no run folders here (none with summary.json)")
    return [load_run(p) for p in found]


def render(runs: Sequence[RunData], title: str, max_turns: int = 12, max_canvases: int = 4,
           detail_runs: int = 3, decision: str = "") -> str:
    """The report page for these runs (the first `detail_runs` get waterfalls, canvases and turn tables);
    `decision` is an HTML section put after the summary (`voicelab.analysis.pareto.render_section`)."""
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
           f"<style>{CSS}</style></head><body>", f"<h1>{html.escape(title)}</h1>",
           _p(f"generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} from {len(runs)} run(s); "
              "all times in milliseconds; percentiles over turns; '–' = no samples.")]
    out.append("<h2>Summary</h2>" + _summary_table(runs) + decision)
    for r in runs:
        verdict = summary_verdict(r.summary)
        cls = "ok" if " OK:" in verdict else ("bad" if "NOT MET" in verdict else "note")
        out.append(f'<p class="{cls}">{html.escape(r.label)}: {html.escape(verdict)}</p>')
        if r.summary_derived:
            out.append(_p(f"{r.run_id}: no summary.json (unfinished run?): figures recomputed from the events."))

    out.append("<h2>First audible response per configuration</h2>")
    fig = far_distribution(runs)
    out.append(_img(fig, "FAR distribution") if fig else _p("No turn has a measured FAR."))
    out.append(_p("Each row is one configuration; each dot one answered caller turn (backchannels excluded). The box "
                  "spans the middle half of the turns, the line inside it is the median. Further left is faster."))
    out.append(answers_section(runs))
    out.append(line_section(runs))
    out.append("<h2>Where the time goes</h2>")
    fig = breakdown_plot(runs)
    out.append(_img(fig, "FAR breakdown") if fig else _p("No turn has a complete breakdown."))
    out.append(_p("The parts are consecutive intervals from the caller's speech end to the bot's acoustic onset, so "
                  "for one turn they add up to its FAR (the black tick). Across configurations the bars are medians "
                  "of each part, which need not add up to the median FAR."))
    out.append(client_server_section(runs))

    for r in runs[:detail_runs]:
        out.append(f"<h2>Run {html.escape(r.run_id)}</h2>" + _p(r.label))
        out.append("<h3>Turns</h3>" + _turn_table(r))
        out.append("<h3>Timeline of each turn</h3>")
        out.append(_p("Lanes from the top: the caller's speech (ground truth), VAD, turn end (|), STT final (o) and "
                      "LLM request (>), engine steps, gate commits, TTS (request to first audio), playout of each "
                      "chunk, and the recording (dark: bot audio above -40 dBFS in the WAV; pink triangles: the "
                      "pipeline's own onset/end marks). Faded bars belong to another turn's reply, e.g. the one a "
                      "barge-in cuts."))
        activity: dict[str, tuple[np.ndarray, float] | None] = {}
        keys = list(r.turns[["call_id", "turn"]].itertuples(index=False, name=None))
        for call_id, turn in keys[:max_turns]:
            if call_id not in activity:
                activity[call_id] = _wav_activity(r, call_id)
            fig = waterfall(r, call_id, int(turn), activity[call_id])
            if fig is not None:
                out.append(_img(fig, f"timeline {call_id} {turn}"))
        if len(keys) > max_turns:
            out.append(_p(f"{len(keys) - max_turns} more turns not drawn (--max-turns)."))
        canvases = 0
        masks_logged = True
        parts = []
        for call_id, turn in keys:
            if canvases >= max_canvases:
                break
            res = canvas_heatmap(r, call_id, int(turn))
            if res is None:
                continue
            fig, has_mask = res
            masks_logged &= has_mask
            parts.append(_img(fig, f"canvas {call_id} {turn}"))
            canvases += 1
        if parts:
            out.append("<h3>Denoising canvas</h3>")
            out.append(_p("One row per engine step, one column per canvas position. Dark: still masked; yellow: "
                          "unmasked but not yet released by the gate (tentative); blue: committed (released to "
                          "TTS); green: its chunk has started playing. A red x marks a position whose token changed "
                          "or was re-masked at that step: on yellow it is churn the gate absorbed, on blue a "
                          "post-synthesis revision, on green an audible defect."))
            if not masks_logged:
                out.append(_p("This run did not log per-position masks (snapshot_payload(..., canvas=True)): "
                              "positions past the unmasked prefix are drawn as masked."))
            out += parts
    if len(runs) > detail_runs:
        out.append(_p(f"{len(runs) - detail_runs} more runs summarised above but not drawn in detail."))
    out.append("</body></html>")
    return "\n".join(out)


def build_report(path: str | Path, out: str | Path | None = None, max_turns: int = 12, max_canvases: int = 4,
                 detail_runs: int = 3) -> Path:
    """Write the HTML report for a run folder or a folder of runs; returns the file (default PATH/report.html)."""
    p = Path(path)
    if not p.is_dir():
        raise AnalysisError(f"{p}: no such run folder")
    runs = _runs_at(p)
    title = f"voicelab report: {runs[0].run_id}" if len(runs) == 1 else f"voicelab report: {p.name}"
    page = render(runs, title, max_turns, max_canvases, detail_runs)
    dest = Path(out) if out is not None else p / "report.html"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(page, encoding="utf-8")
    return dest
