"""The results pages, generated from run summaries, never typed: docs/results.md and the README's headline table.

A *run entry* is a folder holding `summary.json` and either `config.json` (a real run folder) or `meta.json`
(a committed copy under docs/runs/NAME: summary.json verbatim, plus the few facts of config.json a reader
needs: what ran, the command, the machine, the date and the commit). `import_entry` makes such a copy;
`render_results` writes one section per entry; `render_headline` writes the README table, whose rows are
chosen by `headline.json` in the docs runs folder: a JSON list of

    {"run": "NAME", "label": "what the row shows", "figures": ["far_p50", "far_p95", ...]}

where `run` may also be a list of two names (`["gate_mercury", "final_mercury"]`): the row then shows each
figure of the first run beside the second's ("612 [580–650] vs 1240 [1190–1300]"), e.g. the gate against
`final` under a real engine's timing. `figures` is optional (default `default_headline()`); the names are the
keys of `FIGURES`, the figure catalogue's `Result` views (`voicelab.measure.figures`). A figure a run did not
measure (null in summary.json, or a key it lacks) reads "not measured", never 0.

Standard library only (the catalogue too): the command line imports this without pandas.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

from voicelab.measure.figure_views import Result
from voicelab.measure.figures import Live, views
from voicelab.measure.machine_load import machine_text

META = "meta.json"
SUMMARY = "summary.json"
CONFIG = "config.json"
HEADLINE = "headline.json"
BEGIN = "<!-- results:begin -->"
END = "<!-- results:end -->"
COMMAND = "voicelab report --markdown docs/runs --readme README.md"
NOT_MEASURED = "not measured"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


class ResultsError(ValueError):
    """A run entry, a headline row or a README that cannot be used; one line, names the file."""


@dataclass(frozen=True)
class Entry:
    """One run: its summary.json as is, and its metadata (`meta_from_config`)."""

    name: str
    path: Path
    summary: dict[str, Any]
    meta: dict[str, Any]
    committed: bool  # a docs/runs copy (meta.json), not a run folder


@dataclass(frozen=True)
class Value:
    """One figure of one run: the number, its 95 % interval, its sample count, how to print it."""

    x: float
    kind: str  # "ms", "count", "share", "ratio"
    ci: tuple[float, float] | None = None
    n: int | None = None
    note: str = ""  # e.g. "median", "p95 0.12"


@dataclass(frozen=True)
class ResultRow:
    """A row of the results page as printed: the catalogue `Result`'s title and README column, and the reader
    its `read` names."""

    title: str  # in results.md
    column: str  # in the README table
    get: Callable[[Mapping[str, Any]], Value | None]


# ---- reading figures out of summary.json --------------------------------------------------------------------

def _dig(summary: Mapping[str, Any], *keys: str) -> Any:
    cur: Any = summary
    for k in keys:
        if not isinstance(cur, Mapping) or k not in cur:
            return None
        cur = cur[k]
    return cur


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else None


def _ci(x: Any) -> tuple[float, float] | None:
    if isinstance(x, Sequence) and len(x) == 2 and _num(x[0]) is not None and _num(x[1]) is not None:
        return float(x[0]), float(x[1])
    return None


def _keys(dotted: str) -> list[str]:
    return dotted.split(".")


def _latency(key: str, stat: str) -> Callable[[Mapping[str, Any]], Value | None]:
    def get(s: Mapping[str, Any]) -> Value | None:
        x = _num(_dig(s, *_keys(key), stat))
        n = _dig(s, *_keys(key), "n")
        return None if x is None else Value(x, "ms", _ci(_dig(s, *_keys(key), f"{stat}_ci")),
                                            n if isinstance(n, int) else None)
    return get


def _median(key: str) -> Callable[[Mapping[str, Any]], Value | None]:
    def get(s: Mapping[str, Any]) -> Value | None:
        x = _num(_dig(s, *_keys(key)))
        return None if x is None else Value(x, "ms", note="median")
    return get


def _ms(key: str) -> Callable[[Mapping[str, Any]], Value | None]:
    def get(s: Mapping[str, Any]) -> Value | None:
        x = _num(_dig(s, *_keys(key)))
        return None if x is None else Value(x, "ms")
    return get


def _count(key: str) -> Callable[[Mapping[str, Any]], Value | None]:
    def get(s: Mapping[str, Any]) -> Value | None:
        x = _num(_dig(s, *_keys(key)))
        return None if x is None else Value(x, "count")
    return get


def wilson(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a share (as `voicelab.measure.intervals.proportion_stats`, without SciPy)."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _share(key: str, n_key: str) -> Callable[[Mapping[str, Any]], Value | None]:
    def get(s: Mapping[str, Any]) -> Value | None:
        x, n = _num(_dig(s, *_keys(key))), _dig(s, *_keys(n_key))
        if x is None or not isinstance(n, int) or n <= 0:
            return None
        return Value(x, "share", wilson(round(x * n), n), n)
    return get


def _mean_p95(key: str) -> Callable[[Mapping[str, Any]], Value | None]:
    def get(s: Mapping[str, Any]) -> Value | None:
        x, n, p95 = _num(_dig(s, *_keys(key), "mean")), _dig(s, *_keys(key), "n"), _num(_dig(s, *_keys(key), "p95"))
        if x is None or not n:
            return None
        return Value(x, "ratio", n=n if isinstance(n, int) else None, note="" if p95 is None else f"p95 {p95:.2f}")
    return get


def _count_per_100_words(key: str) -> Callable[[Mapping[str, Any]], Value | None]:
    def get(s: Mapping[str, Any]) -> Value | None:
        x, per100 = _num(_dig(s, *_keys(key))), _num(_dig(s, *_keys(f"{key}_per_100_words")))
        if x is None:
            return None
        return Value(x, "count", note="" if per100 is None else f"{per100:.2f} per 100 spoken words")
    return get


def _reader(r: Result) -> Callable[[Mapping[str, Any]], Value | None]:
    """How a results row reads its value from summary.json (the catalogue's `Result.read`)."""
    if r.read in ("p50", "p95"):
        return _latency(r.key, r.read)
    if r.read == "share":
        return _share(r.key, r.n or "")
    readers = {"median": _median, "ms": _ms, "count": _count, "mean_p95": _mean_p95,
               "count_per_100_words": _count_per_100_words}
    return readers[r.read](r.key)


def _figures() -> dict[str, ResultRow]:
    return {r.name: ResultRow(r.title, r.column, _reader(r)) for _, r in views(Result)}


# the rows of the results page and the names headline.json may use: the figure catalogue's `Result` views
FIGURES: Mapping[str, ResultRow] = Live(_figures)


def default_headline() -> tuple[str, ...]:
    """The figures of a headline row that names none."""
    return tuple(r.name for _, r in views(Result) if r.headline)


# ---- printing ----------------------------------------------------------------------------------------------

def _fmt(x: float, kind: str) -> str:
    if kind == "share":
        return f"{100 * x:.0f} %"
    if kind == "ratio":
        return f"{x:.2f}"
    if kind == "ms":
        return f"{x:.0f}"
    return f"{x:g}"


def long_text(v: Value | None) -> str:
    """A figure for results.md: value, unit, 95 % interval and n ('not measured' when the run has none)."""
    if v is None:
        return NOT_MEASURED
    unit = " ms" if v.kind == "ms" else ""
    text = _fmt(v.x, v.kind) + unit
    if v.ci is not None:
        lo, hi = (_fmt(c, v.kind) for c in v.ci)
        text += f", 95 % interval {lo}–{hi}{unit}"
    extra = [v.note] if v.note else []
    if v.n is not None:
        extra.append(f"n = {v.n}" + (": too few for an interval" if v.ci is None and v.kind in ("ms", "share")
                                     and v.n < 2 else ""))
    return text + (f" ({'; '.join(extra)})" if extra else "")


def short_text(v: Value | None) -> str:
    """A figure for the README table: value and [interval]."""
    if v is None:
        return NOT_MEASURED
    text = _fmt(v.x, v.kind)
    if v.ci is not None:
        lo, hi = (_fmt(c, v.kind).removesuffix(" %") for c in v.ci)
        text += f" [{lo}–{hi}]"
    return text


def slug(name: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", name.strip().lower()).replace(" ", "-")


def _rel(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()


# ---- run entries -------------------------------------------------------------------------------------------

def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ResultsError(f"{path}: cannot read ({e.strerror or e})") from None
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}: not JSON ({e.msg}, line {e.lineno})") from None


def meta_from_config(config: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, Any]:
    """What a reader of the results needs from config.json: what ran, the command, machine, date, commit."""
    host = config.get("host") if isinstance(config.get("host"), Mapping) else {}
    source = config.get("source") if isinstance(config.get("source"), Mapping) else {}
    fixtures = [f.get("name") if isinstance(f, Mapping) else str(f) for f in config.get("fixtures") or []]
    return {
        "run_id": config.get("run_id", summary.get("run_id")),
        "about": "",
        "engine": config.get("engine_arg", config.get("engine", summary.get("engine"))),
        "sampler": summary.get("sampler", config.get("sampler")),
        "policy": summary.get("policy", config.get("policy")),
        "stt": config.get("stt"),
        "turn": config.get("turn"),
        "barge_in": config.get("barge_in"),
        "fixtures": fixtures,
        "repeat": config.get("repeat"),
        "command": list(config.get("command") or []),
        "machine": {k: host.get(k) for k in ("cpu_model", "cpu_count", "platform")},
        "started_utc": config.get("started_utc"),
        "commit": source.get("commit"),
        "dirty": source.get("dirty"),
        "versions": dict(config.get("versions") or {}),
    }


def read_entry(path: Path) -> Entry:
    """A docs/runs copy (summary.json + meta.json) or a finished run folder (summary.json + config.json)."""
    if not (path / SUMMARY).is_file():
        raise ResultsError(f"{path}: no summary.json (not a finished run folder or docs/runs entry)")
    if (path / "INCOMPLETE").exists():
        raise ResultsError(f"{path}: the run has not finished (INCOMPLETE is present)")
    summary = _read_json(path / SUMMARY)
    if (path / META).is_file():
        return Entry(path.name, path, summary, _read_json(path / META), True)
    if (path / CONFIG).is_file():
        return Entry(path.name, path, summary, meta_from_config(_read_json(path / CONFIG), summary), False)
    raise ResultsError(f"{path}: summary.json without meta.json or config.json")


def find_entries(paths: Sequence[Path]) -> list[Entry]:
    """Every entry at or below each path, in the order given (a folder's entries sorted by path)."""
    entries: list[Entry] = []
    for p in paths:
        if not p.is_dir():
            raise ResultsError(f"{p}: no such folder")
        if (p / SUMMARY).is_file():
            entries.append(read_entry(p))
            continue
        found = sorted({s.parent for s in p.rglob(SUMMARY)
                        if (s.parent / META).is_file() or (s.parent / CONFIG).is_file()})
        if not found:
            raise ResultsError(f"{p}: no run folders or docs/runs entries in it")
        entries += [read_entry(f) for f in found if not (f / "INCOMPLETE").exists()]
    names = [e.name for e in entries]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ResultsError(f"two runs named {', '.join(dup)}: import them under distinct names")
    return entries


def import_entry(run: Path, runs_dir: Path, name: str) -> Path:
    """Copy a finished run's summary.json (verbatim) and its meta.json into runs_dir/name; keeps an 'about'."""
    if not NAME_RE.match(name):
        raise ResultsError(f"--name '{name}': lower-case letters, digits, '_', '-' and '.' only")
    entry = read_entry(run)
    if entry.committed:
        raise ResultsError(f"{run}: already a docs/runs entry; import the run folder it came from")
    dest = runs_dir / name
    old = dest / META
    meta = {"name": name, **entry.meta}
    if old.is_file():
        meta["about"] = _read_json(old).get("about", "")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run / SUMMARY, dest / SUMMARY)
    (dest / META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return dest


# ---- docs/results.md ---------------------------------------------------------------------------------------

def describe(e: Entry) -> str:
    """What the run is, in one sentence (plus the entry's own 'about', if any)."""
    m, s = e.meta, e.summary
    parts = [f"engine `{m.get('engine') or s.get('engine')}`"]
    parts += [f"{k} `{m[k]}`" for k in ("sampler", "policy") if m.get(k)]
    parts += [f"{label} `{m[k]}`" for k, label in (("stt", "STT"), ("turn", "turn rule"),
                                                     ("barge_in", "barge-in")) if m.get(k)]
    fixtures = ", ".join(f"`{f}`" for f in m.get("fixtures") or []) or "not recorded"
    size = f"{s.get('calls', '?')} call(s), {s.get('turns', '?')} caller turn(s)"
    if m.get("repeat") and m["repeat"] != 1:
        size += f", each fixture played {m['repeat']} times"
    about = (m.get("about") or "").strip()
    return (f"{about}\n\n" if about else "") + f"{', '.join(parts)}; fixtures {fixtures}: {size}."


def provenance(e: Entry) -> list[str]:
    """The command, the machine and its load while the run lasted, the date and the commit, one bullet each."""
    m = e.meta
    argv = [str(a) for a in m.get("command") or []]
    if argv:
        argv[0] = Path(argv[0]).name
    mach = m.get("machine") or {}
    cpu = mach.get("cpu_model") or "CPU model not recorded"
    count = f"{mach['cpu_count']} CPUs" if mach.get("cpu_count") else "CPU count not recorded"
    commit = m.get("commit")
    commit_text = "not recorded" if not commit else f"`{commit[:12]}`" + (
        " with local edits" if m.get("dirty") else "" if m.get("dirty") is False else "")
    return [f"- command: `{shlex.join(argv)}`" if argv else "- command: not recorded",
            f"- machine: {cpu}, {count}, {mach.get('platform') or 'platform not recorded'}",
            f"- machine load: {machine_text(e.summary.get('machine'))}",
            f"- date: {m.get('started_utc') or 'not recorded'}",
            f"- commit: {commit_text}"]


def _section(e: Entry, out_dir: Path) -> list[str]:
    lines = [f"## {e.name}", "", describe(e), "", *provenance(e)]
    if e.committed:
        files = ", ".join(f"[{f}]({_rel(e.path / f, out_dir)})" for f in (SUMMARY, META))
        lines.append(f"- files: {files}")
    lines += ["", "| figure | value |", "|---|---|"]
    lines += [f"| {f.title} | {long_text(f.get(e.summary))} |" for f in FIGURES.values()]
    return lines + [""]


def render_results(entries: Sequence[Entry], out: Path) -> str:
    """docs/results.md: a section per run, then how the page is made and the figure names of headline.json."""
    out_dir = out.parent
    folders = list(dict.fromkeys(e.path.parent for e in entries if e.committed))
    where = ", ".join(f"[{_rel(f, out_dir)}/]({_rel(f, out_dir)})" for f in folders)
    lines = ["# Results", "",
             "Every figure on this page is generated from run summaries"
             + (f", those committed under {where} (summary.json as the run wrote it, plus meta.json: "
                "the command, machine, date and commit)" if where else "") + ". Do not edit it by hand: "
             "`tests/repo/test_docs.py` regenerates it and fails on any difference. Intervals are 95 % (bootstrap "
             "for latencies, Wilson for shares; see `docs/metrics.md`); a figure the run did not measure reads "
             "\"not measured\".", "",
             "| run | what | FAR p50 ms | date |", "|---|---|---|---|"]
    for e in entries:
        what = " / ".join(str(x) for x in (e.meta.get("engine"), e.meta.get("policy"),
                                             ", ".join(e.meta.get("fixtures") or [])) if x)
        lines.append(f"| [{e.name}](#{slug(e.name)}) | {what} | {short_text(FIGURES['far_p50'].get(e.summary))} "
                     f"| {(e.meta.get('started_utc') or 'not recorded')[:10]} |")
    lines.append("")
    for e in entries:
        lines += _section(e, out_dir)
    lines += ["## How this page is made", "",
              "- add a run: `voicelab report --markdown docs/runs --import RUN_FOLDER --name NAME` (copies its "
              "summary.json and meta.json into docs/runs/NAME, then regenerates this page);",
              f"- regenerate this page and the README's table: `{COMMAND}`;",
              "- the README's rows: `docs/runs/headline.json`, a list of `{\"run\": NAME or [NAME, NAME], "
              "\"label\": ..., \"figures\": [...]}` (two runs: their figures side by side).", "",
              "Figure names for `figures`:", "",
              "| name | figure |", "|---|---|"]
    lines += [f"| `{k}` | {f.title} |" for k, f in FIGURES.items()]
    return "\n".join(lines) + "\n"


# ---- the README's headline table ---------------------------------------------------------------------------

@dataclass(frozen=True)
class HeadlineRow:
    runs: tuple[str, ...]  # one run, or two side by side
    label: str
    figures: tuple[str, ...]


def load_headline(path: Path) -> list[HeadlineRow]:
    """headline.json: a list of {"run": NAME | [NAME, NAME], "label": str, "figures": [figure names]}."""
    data = _read_json(path)
    if not isinstance(data, list):
        raise ResultsError(f"{path}: a JSON list of rows expected")
    rows = []
    for i, r in enumerate(data):
        run = r.get("run") if isinstance(r, Mapping) else None
        runs = (run,) if isinstance(run, str) else tuple(run) if isinstance(run, list) else ()
        if not 1 <= len(runs) <= 2 or not all(isinstance(x, str) for x in runs):
            raise ResultsError(f"{path}: row {i}: 'run' must be a run name or a list of two")
        figures = tuple(r.get("figures") or default_headline())
        unknown = [f for f in figures if f not in FIGURES]
        if unknown:
            raise ResultsError(f"{path}: row {i}: unknown figure {', '.join(map(str, unknown))} "
                               f"(known: {', '.join(FIGURES)})")
        rows.append(HeadlineRow(runs, str(r.get("label") or " vs ".join(runs)), figures))
    return rows


def render_headline(rows: Sequence[HeadlineRow], entries: Sequence[Entry], results: Path, readme: Path) -> str:
    """The block between the README's markers: per headline row, one line per figure (narrow enough for a
    100-column README), the row's runs linked into results.md; two runs side by side read "A vs B"."""
    by_name = {e.name: e for e in entries}
    missing = sorted({n for r in rows for n in r.runs if n not in by_name})
    if missing:
        raise ResultsError(f"headline.json names runs that are not given: {', '.join(missing)}")
    link = _rel(results, readme.parent)
    lines = [BEGIN, f"<!-- generated by {COMMAND} -->", "",
             "| what | figure | value |", "|---|---|---|"]
    for r in rows:
        runs = " vs ".join(f"[{n}]({link}#{slug(n)})" for n in r.runs)
        for i, c in enumerate(r.figures):
            value = " vs ".join(short_text(FIGURES[c].get(by_name[n].summary)) for n in r.runs)
            lines.append(f"| {r.label if i == 0 else ''} | {FIGURES[c].column} | {value} |")
        lines.append(f"| | runs | {runs} |")
    lines += ["", f"Latencies in ms, [95 % intervals]; command, machine, date, commit: [{Path(link).name}]({link}).",
              END]
    return "\n".join(lines)


def replace_block(text: str, block: str) -> str | None:
    """`text` with everything from BEGIN to END replaced by `block`; None when the markers are missing."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return None
    return text[:start] + block + text[end + len(END):]


def headline_file(paths: Sequence[Path]) -> Path | None:
    """The first headline.json directly inside one of the given folders."""
    return next((p / HEADLINE for p in paths if (p / HEADLINE).is_file()), None)


def write_results(paths: Sequence[Path], out: Path, readme: Path | None) -> list[str]:
    """Write results.md (and the README's table); returns what was done, one line each."""
    entries = find_entries(paths)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_results(entries, out), encoding="utf-8")
    done = [f"results: {out} ({len(entries)} runs)"]
    if readme is None:
        return done
    head = headline_file(paths)
    if head is None:
        raise ResultsError(f"--readme: no {HEADLINE} in {', '.join(map(str, paths))}")
    try:
        text = readme.read_text(encoding="utf-8")
    except OSError as e:
        raise ResultsError(f"{readme}: cannot read ({e.strerror or e})") from None
    new = replace_block(text, render_headline(load_headline(head), entries, out, readme))
    if new is None:
        return done + [f"{readme}: no {BEGIN} ... {END} markers; left alone"]
    if new != text:
        readme.write_text(new, encoding="utf-8")
    return done + [f"headline table: {readme} ({len(load_headline(head))} rows from {head})"]
