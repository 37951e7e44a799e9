"""Run data as tables: Parquet files with a documented schema, and pandas frames for analysts.

A finished run folder (RUNFOLDER contract) holds three Parquet tables, made here by `parquet_tables(run_dir)` and
written by the run folder's writer (`voicelab.runs.folder.RunFolder.write_tables`):

- `events.parquet`: one row per event of events.jsonl (the payload kept whole as JSON, common fields lifted
  into columns);
- `turns.parquet`: one row per caller utterance, the per-turn table of `voicelab.measure.metrics.turn_table` plus the
  WAV analyzer's figures (`voicelab.measure.truth`) and their differences;
- `chunks.parquet`: one row per gate chunk (commit), with when it was sent to TTS, first synthesized, started
  and stopped playing, and what of it was heard.

Every table carries `run_id`, so a folder of runs can be queried as one table with pandas
(`load_runs(root).turns`) or DuckDB:

    duckdb.sql("SELECT run_id, avg(far_ms) FROM read_parquet('runs/**/turns.parquet', union_by_name=true) "
               "GROUP BY run_id")

The columns, their Arrow types and meanings are in `SCHEMA` (the turns table's from the figure catalogue,
`voicelab.measure.figures`; rendered to docs/data-schema.md by `schema_markdown()`; a test keeps the two in
step). Times named `*_ms` without a `t_` are durations; `t_ms` and the chunk times are milliseconds on the call
clock (zero at call start). Nullable everywhere a figure may be missing: a missing figure is null, never 0.
Columns a run adds beyond the documented ones (a line run's own figures) are kept, with inferred types, after
them.

`load_run(path)` reads a run folder into a `RunData` (events, turns, chunks frames; config and summary
dicts), from the Parquet files when present and otherwise from events.jsonl (a crashed or unfinished run).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from voicelab.gate import ShaperParams
from voicelab.measure.events import Event, EventKind, EventLogError, read_events
from voicelab.measure.figures import figures
from voicelab.measure.metrics import summarize, turn_table
from voicelab.measure.truth import TruthError, analyze_run

K = EventKind
SCHEMA_VERSION = "1"
TABLES = ("events", "turns", "chunks")


class AnalysisError(ValueError):
    """A path that is not a readable run folder, or a table that breaks its schema; one line, names the file."""


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    doc: str


_F, _I, _S, _B = pa.float64(), pa.int32(), pa.string(), pa.bool_()
ARROW = {"float64": _F, "int32": _I, "int64": pa.int64(), "string": _S, "bool": _B}

_SCHEMA: dict[str, list[Column]] = {
    "events": [
        Column("run_id", _S, "the run folder's run_id (config.json), so many runs can be read as one table"),
        Column("call_id", _S, "call the event belongs to"),
        Column("turn", _I, "caller utterance index (reply turn for reply-path events); -1 for call-level rows"),
        Column("t_ns", pa.int64(), "nanoseconds on the call clock (zero at call start)"),
        Column("t_ms", _F, "t_ns in milliseconds"),
        Column("kind", _S, "event kind (voicelab.measure.events.EventKind)"),
        Column("chunk_id", _I, "payload.chunk_id for gate/TTS/playout rows, else null"),
        Column("step", _I, "payload.step for engine_snapshot rows, else null"),
        Column("text", _S, "payload.text when present (caller text, STT text, snapshot text, chunk text)"),
        Column("payload", _S, "the whole payload as a JSON object"),
    ],
    "chunks": [
        Column("run_id", _S, "run_id of the run"),
        Column("call_id", _S, "call"),
        Column("turn", _I, "reply turn"),
        Column("reply", _I, "generation index within the turn (0 unless the turn was answered twice)"),
        Column("chunk_id", _I, "chunk index within its reply (gate)"),
        Column("text", _S, "text sent to TTS"),
        Column("start_char", _I, "start offset in the response text"),
        Column("end_char", _I, "end offset in the response text"),
        Column("tokens_end", _I, "canvas tokens the release relies on"),
        Column("policy", _S, "gate policy that released it"),
        Column("words", _I, "words in text"),
        Column("commit_ms", _F, "gate_commit time (call clock)"),
        Column("tts_request_ms", _F, "tts_request time"),
        Column("tts_first_audio_ms", _F, "tts_first_audio time"),
        Column("playout_start_ms", _F, "playout_start time (null: never played)"),
        Column("playout_stop_ms", _F, "playout_stop time"),
        Column("interrupted", _B, "playout was cut by a barge-in"),
        Column("played", _S, "words heard when cut (playout_stop.played), else null"),
    ],
}


def _turn_columns() -> list[Column]:
    """The documented turns columns: the catalogue's figures with a dtype, in catalogue order."""
    return [Column(f.name, ARROW[f.dtype], f.doc) for f in figures() if f.dtype is not None]


class _Schema(Mapping[str, list[Column]]):
    """{table: its columns}; the turns table's come from the figure catalogue each time (a registered figure is
    in it)."""

    def __getitem__(self, table: str) -> list[Column]:
        return _turn_columns() if table == "turns" else _SCHEMA[table]

    def __iter__(self) -> Iterator[str]:
        return iter(TABLES)

    def __len__(self) -> int:
        return len(TABLES)


SCHEMA: Mapping[str, list[Column]] = _Schema()


def arrow_schema(table: str) -> pa.Schema:
    """The pyarrow schema of one table ('events', 'turns', 'chunks'), with column docs as field metadata."""
    if table not in SCHEMA:
        raise AnalysisError(f"unknown table '{table}' (one of {', '.join(TABLES)})")
    return pa.schema([pa.field(c.name, c.type, nullable=True, metadata={"doc": c.doc}) for c in SCHEMA[table]],
                     metadata={"voicelab.table": table, "voicelab.schema_version": SCHEMA_VERSION})


def schema_markdown() -> str:
    """docs/data-schema.md: every table's columns, types and meanings."""
    out = ["# Run data tables (Parquet)", "",
           "Generated from `voicelab.analysis.SCHEMA` (schema version " + SCHEMA_VERSION + "); "
           "see the module docstring for how to read and query them.", ""]
    for table, cols in SCHEMA.items():
        out += [f"## {table}.parquet", "", "| column | type | meaning |", "|---|---|---|"]
        out += [f"| `{c.name}` | {c.type} | {c.doc} |" for c in cols]
        out.append("")
    return "\n".join(out)


# ---- building the tables ---------------------------------------------------------------------------------

def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _table(name: str, rows: Sequence[Mapping[str, Any]], path: Path | None = None) -> pa.Table:
    """Rows -> Arrow table in the documented column order and types; extra keys appended, inferred."""
    schema = arrow_schema(name)
    known = set(schema.names)
    extra: list[str] = []
    for r in rows:
        extra += [k for k in r if k not in known and k not in extra]
    arrays, fields = [], list(schema)
    try:
        for f in schema:
            arrays.append(pa.array([r.get(f.name) for r in rows], type=f.type))
        for k in extra:
            arr = pa.array([r.get(k) for r in rows])
            arrays.append(arr)
            fields.append(pa.field(k, arr.type))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
        where = f"{path}: " if path else ""
        raise AnalysisError(f"{where}table '{name}' does not fit its schema: {exc}") from None
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=schema.metadata))


def events_rows(run_id: str, events: Iterable[Event]) -> list[dict[str, Any]]:
    rows = []
    for e in events:
        p = e.payload
        text = p.get("text")
        rows.append({
            "run_id": run_id, "call_id": e.call_id, "turn": e.turn, "t_ns": e.t_ns, "t_ms": e.t_ns / 1e6,
            "kind": str(e.kind), "chunk_id": _int_or_none(p.get("chunk_id")),
            "step": _int_or_none(p.get("step")) if e.kind == K.ENGINE_SNAPSHOT else None,
            "text": text if isinstance(text, str) else None,
            "payload": json.dumps(p, ensure_ascii=False, separators=(",", ":")),
        })
    return rows


def turns_rows(run_id: str, events: Iterable[Event],
               truth_rows: Iterable[Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    wav = {(t["call_id"], t["turn"]): t for t in truth_rows or ()}
    rows = []
    for r in turn_table(events):
        t = wav.get((r["call_id"], r["turn"]), {})
        row = {"run_id": run_id, **r}
        row["truth_far_ms"] = t.get("far_ms")
        row["truth_stop_latency_ms"] = t.get("stop_latency_ms")
        row["far_diff_ms"] = (round(r["far_ms"] - t["far_ms"], 1)
                              if r.get("far_ms") is not None and t.get("far_ms") is not None else None)
        row["stop_diff_ms"] = (round(r["stop_latency_ms"] - t["stop_latency_ms"], 1)
                               if r.get("stop_latency_ms") is not None and t.get("stop_latency_ms") is not None
                               else None)
        row["truth_overlap"] = t.get("overlap")
        rows.append(row)
    return rows


def chunks_rows(run_id: str, events: Iterable[Event]) -> list[dict[str, Any]]:
    """One row per gate_commit, joined with the TTS and playout rows of the same chunk of the same reply."""
    by_call: dict[tuple[str, int], list[Event]] = {}
    for e in events:
        by_call.setdefault((e.call_id, e.turn), []).append(e)
    rows: list[dict[str, Any]] = []
    for (call_id, turn), evs in sorted(by_call.items()):
        evs.sort(key=lambda e: e.t_ns)
        reply = 0
        open_rows: dict[Any, dict[str, Any]] = {}
        for e in evs:
            p = e.payload
            if e.kind == K.GATE_COMMIT:
                if p["chunk_id"] in open_rows:  # chunk ids restart: a new generation for this turn
                    reply += 1
                    open_rows = {}
                text = str(p.get("text", ""))
                row = {"run_id": run_id, "call_id": call_id, "turn": turn, "reply": reply,
                       "chunk_id": _int_or_none(p["chunk_id"]), "text": text,
                       "start_char": _int_or_none(p.get("start_char")), "end_char": _int_or_none(p.get("end_char")),
                       "tokens_end": _int_or_none(p.get("tokens_end")), "policy": p.get("policy"),
                       "words": len(text.split()), "commit_ms": e.t_ns / 1e6, "tts_request_ms": None,
                       "tts_first_audio_ms": None, "playout_start_ms": None, "playout_stop_ms": None,
                       "interrupted": None, "played": None}
                open_rows[p["chunk_id"]] = row
                rows.append(row)
                continue
            cid = p.get("chunk_id")
            row = open_rows.get(cid) if cid is not None else None
            if row is None:
                continue
            col = {K.TTS_REQUEST: "tts_request_ms", K.TTS_FIRST_AUDIO: "tts_first_audio_ms",
                   K.PLAYOUT_START: "playout_start_ms", K.PLAYOUT_STOP: "playout_stop_ms"}.get(EventKind(e.kind))
            if col is not None and row[col] is None:
                row[col] = e.t_ns / 1e6
                if e.kind == K.PLAYOUT_STOP:
                    row["interrupted"] = bool(p.get("interrupted", False))
                    played = p.get("played")
                    row["played"] = str(played) if played is not None else None
    return rows


# ---- writing ---------------------------------------------------------------------------------------------

def _read_json(path: Path) -> dict[str, Any]:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AnalysisError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AnalysisError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(d, dict):
        raise AnalysisError(f"{path}: not a JSON object")
    return d


def _run_id(run: Path, config: Mapping[str, Any]) -> str:
    rid = config.get("run_id")
    return rid if isinstance(rid, str) and rid else run.name


def _read_run_events(run: Path) -> list[Event]:
    try:
        return read_events(run / "events.jsonl")
    except EventLogError as exc:
        raise AnalysisError(str(exc)) from None


def parquet_tables(run_dir: str | Path, truth_rows: Iterable[Mapping[str, Any]] | None = None,
                   events: Iterable[Event] | None = None,
                   turn_columns: Mapping[tuple[str, int], Mapping[str, Any]] | None = None) -> dict[str, bytes]:
    """The events/turns/chunks tables of a run folder, from its events.jsonl, as Parquet files (bytes) for the
    run folder's writer (`voicelab.runs.folder.RunFolder.write_tables`) to put there.

    `truth_rows` are the WAV analyzer's rows; when None they are computed from calls/ if it holds any.
    `turn_columns` sets columns of the turns table by (call_id, turn): figures a run measures outside its events
    (`voicelab call`'s answers read back from the recording, its talk-over).
    """
    run = Path(run_dir)
    cfg_path = run / "config.json"
    config = _read_json(cfg_path) if cfg_path.is_file() else {}
    rid = _run_id(run, config)
    evs = list(events) if events is not None else _read_run_events(run)
    if truth_rows is None and (run / "calls").is_dir():
        try:
            truth_rows = analyze_run(run)
        except TruthError as exc:
            raise AnalysisError(str(exc)) from None
    turns = turns_rows(rid, evs, truth_rows)
    for row in turns:
        row.update((turn_columns or {}).get((row["call_id"], row["turn"]), {}))
    tables = {"events": events_rows(rid, evs), "turns": turns, "chunks": chunks_rows(rid, evs)}
    return {name: _parquet_bytes(_table(name, rows, run / f"{name}.parquet")) for name, rows in tables.items()}


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


# ---- reading ---------------------------------------------------------------------------------------------

def _frame(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas()


@dataclass
class RunData:
    """One run folder as frames. `summary` and `config` are the JSON objects (dicts); see `summary_frame`."""

    path: Path
    run_id: str
    config: dict[str, Any]
    summary: dict[str, Any]
    events: pd.DataFrame
    turns: pd.DataFrame
    chunks: pd.DataFrame
    source: str = "parquet"  # "parquet", or "events.jsonl" when the tables were derived on load
    summary_derived: bool = False  # summary.json was missing: computed from the events (no truth figures)

    @property
    def label(self) -> str:
        return config_label(self.config or self.summary)

    @property
    def summary_frame(self) -> pd.DataFrame:
        """The summary as one flat row (nested keys joined with '.'), with run_id, label and path."""
        row = flatten(self.summary)
        row.update({"run_id": self.run_id, "label": self.label, "path": str(self.path)})
        return pd.DataFrame([row])

    def payloads(self, kind: str) -> pd.DataFrame:
        """Rows of one event kind with their payload keys as columns (e.g. 'engine_snapshot')."""
        sub = self.events[self.events["kind"] == kind].reset_index(drop=True)
        if sub.empty:
            return sub.drop(columns=["payload"])
        expanded = pd.DataFrame([json.loads(p) for p in sub["payload"]])
        expanded = expanded.drop(columns=[c for c in expanded.columns if c in sub.columns])
        return pd.concat([sub.drop(columns=["payload"]), expanded], axis=1)

    def event_list(self) -> list[Event]:
        """The events back as `voicelab.measure.events.Event`s (for voicelab.measure.metrics)."""
        return [Event(r.call_id, int(r.turn), int(r.t_ns), r.kind, json.loads(r.payload))
                for r in self.events.itertuples(index=False)]


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def config_label(config: Mapping[str, Any]) -> str:
    """'engine / sampler / policy' plus the shaper settings that differ from the defaults (`ShaperParams`), for
    titles and legends: `diffusion / threshold / pinned`, `diffusion / threshold / pinned / max_words=20`. Only
    the title: the run's id and its config.json keep every setting."""
    parts = [str(config.get(k)) for k in ("engine", "sampler", "policy") if config.get(k) is not None]
    shaper = config.get("shaper")
    if isinstance(shaper, Mapping):
        defaults = {f.name: f.default for f in fields(ShaperParams)}
        changed = {k: v for k, v in shaper.items() if k not in defaults or v != defaults[k]}
        if changed:
            parts.append(",".join(f"{k}={v}" for k, v in sorted(changed.items())))
    return " / ".join(parts) if parts else "run"


def _resolve_run(path: str | Path) -> Path:
    p = Path(path)
    if p.is_file():
        p = p.parent
    if not p.is_dir():
        raise AnalysisError(f"{p}: no such run folder")
    if not (p / "events.jsonl").is_file() and not (p / "events.parquet").is_file():
        raise AnalysisError(f"{p}: not a run folder (no events.jsonl or events.parquet)")
    return p


def load_run(path: str | Path) -> RunData:
    """Read a run folder: Parquet tables when all three exist, otherwise derived from events.jsonl."""
    run = _resolve_run(path)
    config = _read_json(run / "config.json") if (run / "config.json").is_file() else {}
    rid = _run_id(run, config)
    frames: dict[str, pd.DataFrame] = {}
    source = "parquet"
    evs: list[Event] | None = None
    if all((run / f"{t}.parquet").is_file() for t in TABLES):
        for t in TABLES:
            try:
                frames[t] = _frame(pq.read_table(run / f"{t}.parquet"))
            except (OSError, pa.ArrowInvalid) as exc:
                raise AnalysisError(f"{run / f'{t}.parquet'}: cannot read: {exc}") from None
    else:
        source = "events.jsonl"
        evs = _read_run_events(run)
        truth_rows = None
        if (run / "calls").is_dir():
            try:
                truth_rows = analyze_run(run)
            except TruthError:
                truth_rows = None  # a crashed run may hold a half-written WAV: keep the event figures
        frames = {"events": _frame(_table("events", events_rows(rid, evs))),
                  "turns": _frame(_table("turns", turns_rows(rid, evs, truth_rows))),
                  "chunks": _frame(_table("chunks", chunks_rows(rid, evs)))}
    derived = False
    if (run / "summary.json").is_file():
        summary = _read_json(run / "summary.json")
    else:
        if evs is None:
            evs = _read_run_events(run) if (run / "events.jsonl").is_file() else []
        summary = summarize(evs, {**config, "run_id": rid})
        derived = True
    return RunData(path=run, run_id=rid, config=config, summary=summary, events=frames["events"],
                   turns=frames["turns"], chunks=frames["chunks"], source=source, summary_derived=derived)


@dataclass
class Runs:
    """Several run folders; each frame property concatenates that table over all runs (run_id column)."""

    root: Path
    runs: list[RunData] = field(default_factory=list)

    def _concat(self, attr: str) -> pd.DataFrame:
        frames = [getattr(r, attr).assign(label=r.label) for r in self.runs]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    @property
    def summaries(self) -> pd.DataFrame:
        frames = [r.summary_frame for r in self.runs]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    @property
    def turns(self) -> pd.DataFrame:
        return self._concat("turns")

    @property
    def events(self) -> pd.DataFrame:
        return self._concat("events")

    @property
    def chunks(self) -> pd.DataFrame:
        return self._concat("chunks")


def is_finished(run: Path) -> bool:
    """A sealed run folder: summary.json written and no INCOMPLETE marker (a run killed mid-write keeps it).
    The one check of the seal `voicelab.runs.folder.RunFolder.seal` makes, for the runs too (their sweep asks
    it); here because the analysis loads nothing of the runs."""
    return (run / "summary.json").is_file() and not (run / "INCOMPLETE").exists()


def find_runs(root: str | Path) -> list[Path]:
    """Finished run folders (those with summary.json) at or below root, sorted by path."""
    p = Path(root)
    if not p.is_dir():
        raise AnalysisError(f"{p}: no such folder")
    found = sorted({s.parent for s in p.rglob("summary.json")})
    return [f for f in found if ((f / "events.jsonl").is_file() or (f / "events.parquet").is_file())
            and is_finished(f)]


def load_runs(root: str | Path) -> Runs:
    """Every finished run at or below root (a run, a matrix folder, a sweep folder)."""
    return Runs(Path(root), [load_run(p) for p in find_runs(root)])
