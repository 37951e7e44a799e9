"""The console tables of `voicelab run` and `voicelab call` (rich): per turn, injected faults, and overall per
configuration. Every cell is made from the run's per-turn rows (the rows of turns.csv and turns.parquet) and its
summary.json, so a table says what the summary says.

Two shapes. The narrow one (default) fits an 80-column terminal: one small table per call under a heading,
the FAR breakdown in one cell, a flags cell naming only the defects present, two-line headers; the overall
figures as rows (figure | value [95 % interval]), one column per configuration. `--wide` prints the old
one-row-per-turn tables with a column per figure. Every figure of the wide tables is in the narrow ones.
Which figures each table shows, under what header and in what order, is the figure catalogue's
(`voicelab.measure.figures`: its `Narrow`, `Part`, `Flag`, `Wide` and `Overall` views).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import groupby
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from voicelab.measure.expectations import cell_text
from voicelab.measure.figure import Figure
from voicelab.measure.figure_views import Flag, Narrow, Overall, Part, Wide
from voicelab.measure.figures import parts_of, views
from voicelab.measure.machine_load import BUSY, machine_text, verdict_of

BUSY_MARK = " (busy machine)"  # after a busy run's column header


def fmt(x: Any, nd: int = 0) -> str:
    """A value as a table shows it: "—" for None, yes/no, a float to `nd` decimals."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def percentile_cell(stats: Mapping[str, Any] | None, key: str) -> str:
    """'p50 [lo–hi]': a percentile with its bootstrap 95 % interval (just the figure when there is none)."""
    stats = stats or {}
    ci = stats.get(f"{key}_ci")
    fig = fmt(stats.get(key))
    return fig if not ci or ci[0] is None else f"{fig} [{ci[0]:.0f}–{ci[1]:.0f}]"


def _dig(s: Mapping[str, Any], dotted: str) -> Any:
    cur: Any = s
    for k in dotted.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(k)
    return cur


def _part_label(name: str) -> str:
    return next(p.label for f, p in views(Part) if f.name == name)


def breakdown_cell(row: Mapping[str, Any], of: str = "far_ms") -> str:
    """'ep 431 (vad 250 final 31 rule 150) stt 0 eng 27 …': the parts of a figure (the FAR's critical path) this
    turn has values for, each with its own parts in brackets; a part a run did not measure is left out."""
    parts = []
    for f in parts_of(of):
        if row.get(f.name) is None:
            continue
        cell = f"{_part_label(f.name)} {fmt(row[f.name])}"
        inner = [f"{_part_label(g.name)} {fmt(row[g.name])}" for g in parts_of(f.name) if row.get(g.name) is not None]
        parts.append(f"{cell} ({' '.join(inner)})" if inner else cell)
    return " ".join(parts)


def flags_cell(row: Mapping[str, Any]) -> str:
    """The defects present in a turn, by name ('' for a clean turn): a flag shows its label when its figure is
    true ("true") or false ("false"), "label N" when it counts N > 0 ("positive")."""
    out = []
    for f, flag in views(Flag):
        v = row.get(f.name)
        if flag.when == "true" and v is True or flag.when == "false" and v is False:
            out.append(flag.label)
        elif flag.when == "positive" and isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            out.append(f"{flag.label} {fmt(v)}")
    return ", ".join(out)


def turn_cell(show: str, v: Any) -> str:
    """A narrow table's cell (`Narrow.show`): "num", "blank" (nothing for a missing value), "ok_wrong" (an
    answer's mark), "text" (words), "checks" (an `expectations` cell: passed/checked, the failed checks)."""
    if show == "blank":
        return fmt(v) if v else ""
    if show == "ok_wrong":
        return "—" if v is None else ("ok" if v else "wrong")
    if show == "text":
        return "" if v is None else str(v)
    if show == "checks":
        return cell_text(v)
    return fmt(v)


def narrow_columns(rows: Sequence[Mapping[str, Any]]) -> list[tuple[Figure, Narrow]]:
    """The catalogue's narrow columns these rows fill: an `optional` column only when some row has a value."""
    return [(f, c) for f, c in views(Narrow) if not c.optional or any(r.get(f.name) is not None for r in rows)]


def _narrow_table(call_id: Any, rows: Sequence[Mapping[str, Any]]
                  ) -> tuple[Table, list[Callable[[Mapping[str, Any]], str]]]:
    """The narrow table of one call, and how each of its cells is made from a turn's row: the catalogue's
    columns, the breakdown cell after the figure whose parts it lists (FAR) when a row has a part, the flags
    last. `rows` (every call's) decide which optional columns there are, the same for every call."""
    t = Table(title=f"call {call_id}", title_justify="left", expand=False, pad_edge=False)
    cells: list[Callable[[Mapping[str, Any]], str]] = []
    for f, c in narrow_columns(rows):
        t.add_column(c.header, **{k: v for k, v in (("justify", c.justify), ("overflow", c.overflow)) if v})
        cells.append(lambda r, name=f.name, show=c.show: turn_cell(show, r.get(name)))
        if parts_of(f.name) and any(breakdown_cell(r, f.name) for r in rows):
            t.add_column("breakdown ms", overflow="fold", ratio=3)
            cells.append(lambda r, name=f.name: breakdown_cell(r, name))
    t.add_column("flags", overflow="fold", ratio=2)
    return t, [*cells, flags_cell]


def turn_cells(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Every row's narrow-table cells by header ("flags" last), as `print_turns` prints them."""
    t, cells = _narrow_table(None, rows)
    return [{str(col.header): cell(r) for col, cell in zip(t.columns, cells, strict=True)} for r in rows]


def print_turns(console: Console, rows: list[dict[str, Any]], title: str = "per turn", *,
                wide: bool = False) -> None:
    """Per-turn figures: one table per call (narrow), or one row per turn with a column per figure (`wide`)."""
    if wide:
        t = Table(title=title)
        cols = views(Wide)
        for _, w in cols:
            t.add_column(w.header, justify="left" if w.left else "right")
        for r in rows:
            t.add_row(*[fmt(r.get(f.name)) for f, _ in cols])
        console.print(t)
        return
    console.print(f"[bold]{title}[/bold]")
    for call_id, turns in groupby(rows, key=lambda r: r.get("call_id")):
        t, cells = _narrow_table(call_id, rows)
        for r in turns:
            t.add_row(*[cell(r) for cell in cells])
        console.print(t)


def print_faults(console: Console, rows: list[dict[str, Any]]) -> None:
    """The injected faults (`--inject`) and what handled each; nothing when none fired."""
    if not rows:
        return
    t = Table(title="injected faults")
    for name in ("call", "fault", "where", "t s", "handled by", "bot heard\nafter"):
        t.add_column(name, overflow="fold")
    for r in rows:
        t.add_row(r["call_id"], r["fault"], r["where"], fmt(r["t_s"], 2), r["handled_by"], fmt(r["bot_heard_after"]))
    console.print(t)


def _overall_cell(s: Mapping[str, Any], o: Overall) -> str:
    """One value of the overall table: a percentile with its interval, a share (of n), parts joined by '/', or a
    number."""
    v = _dig(s, o.key)
    if o.show in ("p50", "p95"):
        return percentile_cell(v if isinstance(v, Mapping) else None, o.show)
    if o.show == "share_of":
        return "—" if v is None else f"{100 * v:.1f} % of {_dig(s, o.n) if o.n else None}"
    if o.show == "share":
        return "—" if v is None else f"{100 * v:.1f} %"
    if o.show == "count_of":
        return "—" if v is None else f"{fmt(v)} of {fmt(_dig(s, o.n) if o.n else None)}"
    if o.show == "parts":
        return "/".join(fmt(v.get(p)) for p in o.parts) if v else "—"
    if o.show == "machine":
        return machine_text(v)
    return fmt(v, o.nd)


def config_label(s: Mapping[str, Any]) -> str:
    return " ".join(str(s.get(k) or "") for k in ("engine", "sampler", "policy")).strip() or str(s["run_id"])


def summary_figures(s: Mapping[str, Any], *, line: bool = False) -> list[tuple[str, str]]:
    """(figure, value) pairs of one summary, the order of the overall table; intervals in brackets. `line`: only
    the figures a line run measures (the catalogue's `line` is not "no")."""
    return [(o.label, _overall_cell(s, o)) for f, o in views(Overall) if not line or f.line != "no"]


def print_figures(console: Console, cells: Sequence[tuple[str, str]], title: str = "overall") -> None:
    """A figure | value table (one configuration)."""
    t = Table(title=title, title_justify="left", expand=False, pad_edge=False)
    t.add_column("figure", overflow="fold")
    t.add_column("value", justify="right", overflow="fold")
    for name, value in cells:
        t.add_row(name, value)
    console.print(t)


def print_summary(console: Console, summaries: Sequence[dict[str, Any]], *, wide: bool = False) -> None:
    """The overall figures: a row per figure and a column per configuration (`wide`: a row per configuration)."""
    if wide:
        t = Table(title="overall")
        names = [name for name, _ in summary_figures(summaries[0])] if summaries else []
        t.add_column("config", no_wrap=True)
        for name in names:
            t.add_column(name, justify="right", overflow="fold")
        for s in summaries:
            t.add_row(config_label(s) + (BUSY_MARK if is_busy(s) else ""), *[v for _, v in summary_figures(s)])
        console.print(t)
        print_busy(console, summaries)
        return
    t = Table(title="overall (95 % intervals in brackets)", title_justify="left")
    t.add_column("figure", overflow="fold")
    for s in summaries:
        t.add_column((config_label(s) if len(summaries) > 1 else "value") + (BUSY_MARK if is_busy(s) else ""),
                     justify="right", overflow="fold")
    columns = [summary_figures(s) for s in summaries]
    for i, (name, _) in enumerate(columns[0] if columns else []):
        t.add_row(name, *[c[i][1] for c in columns])
    console.print(t)
    print_busy(console, summaries)


def is_busy(s: Mapping[str, Any]) -> bool:
    return verdict_of(s.get("machine")) == BUSY


def busy_lines(summaries: Sequence[Mapping[str, Any]]) -> list[str]:
    """A line per run measured on a busy machine (`voicelab.measure.machine_load`): what it read, and what that
    means for its figures."""
    return [f"{s.get('run_id')}: {machine_text(s.get('machine'))}: its figures are slower than the configuration's "
            "own; rerun on a quiet machine to quote them (docs/metrics.md, how to read a busy run)"
            for s in summaries if is_busy(s)]


def print_busy(console: Console, summaries: Sequence[Mapping[str, Any]]) -> None:
    for line in busy_lines(summaries):
        console.print(f"[bold yellow]busy machine[/bold yellow] {escape(line)}", highlight=False)
