"""eot-bench's data as bench cases: local parquet files in the published schema of `livekit/eot-bench-data`.

The dataset is published on the Hugging Face hub (huggingface.co/datasets/livekit/eot-bench-data, Apache-2.0:
real human-to-agent user turns in 14 languages, validation split); the lab does not download it. A user who
has a local copy of its parquet files benches them with `voicelab bench turns --mode eot --eot-bench PATH`.

The schema, as eot-bench's harness reads it (github.com/livekit/eot-bench):
- `id` (string), `language` (a code: "en", "de", ...);
- `audio`: a Hugging Face `Audio` value, either `{"bytes": <an encoded file>}` or
  `{"array": [...], "sampling_rate": N}`;
- `silence_spans`: a list of `{"start", "end"}` in seconds on the row's audio; the last one is the turn's end
  (`eot`), every earlier one a pause inside the turn (`hold`);
- optional `words` (with `end` times) and `messages` (the conversation so far): kept, not read (the eot mode
  scores audio only).

A row becomes one case: its holds are pauses from `start` to `end` (the speaker goes on at `end`), its last
span's `start` is the true end. A bad file (unreadable, a missing column, a span outside the audio or out of
order, undecodable audio) raises `EotDataError` with one line naming the file and the row. `write_rows`
writes a file of this schema (audio as FLAC bytes): the tests build one from the lab's own human set.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf
import soxr

from voicelab.turnbench.audio import SR, CaseAudio
from voicelab.turnbench.replay import Point
from voicelab.turnbench.turn_bench import CaseRef

REQUIRED = ("id", "language", "audio", "silence_spans")
SPAN_TOLERANCE_S = 0.01  # a span may end this far past the audio's last sample (rounding of the labels)
GROUP_PREFIX = "eot-bench-"


class EotDataError(Exception):
    """A file of the eot-bench schema that cannot be benched; the message names the file and the row."""


@dataclass(frozen=True)
class EotRow:
    """One row as a case: its id, language, 16 kHz audio and labelled points."""

    id: str
    language: str
    audio: np.ndarray
    points: list[Point]

    def case(self) -> CaseAudio:
        digest = hashlib.sha1(self.audio.tobytes() + repr(self.points).encode()).hexdigest()[:16]
        return CaseAudio(self.id, GROUP_PREFIX + self.language, self.audio, self.points,
                         {"language": self.language}, f"eb-{digest}")


def parquet_files(path: Path) -> list[Path]:
    """The parquet files at `path`: the file itself, or every `*.parquet` under a folder (sorted)."""
    if path.is_dir():
        files = sorted(path.rglob("*.parquet"))
        if not files:
            raise EotDataError(f"{path}: no .parquet files in this folder")
        return files
    if not path.is_file():
        raise EotDataError(f"{path}: no such file or folder")
    return [path]


def _audio(value: Any, where: str) -> np.ndarray:
    """A row's audio as float32 mono at `SR`, from encoded bytes or an array with its sampling rate."""
    if not isinstance(value, dict):
        raise EotDataError(f"{where}: audio is not a {{bytes}} or {{array, sampling_rate}} value")
    try:
        if value.get("bytes") is not None:
            x, sr = sf.read(io.BytesIO(value["bytes"]), dtype="float32", always_2d=True)
            x = x.mean(axis=1)
        elif value.get("array") is not None and value.get("sampling_rate"):
            x, sr = np.asarray(value["array"], dtype=np.float32).reshape(-1), int(value["sampling_rate"])
        else:
            raise EotDataError(f"{where}: audio has neither bytes nor an array with its sampling rate")
    except (RuntimeError, ValueError, TypeError, sf.LibsndfileError) as e:
        raise EotDataError(f"{where}: undecodable audio ({e})") from None
    if x.size == 0:
        raise EotDataError(f"{where}: empty audio")
    return x if sr == SR else soxr.resample(x, sr, SR).astype(np.float32)


def _points(spans: Any, duration_s: float, where: str) -> list[Point]:
    """The row's points from its silence spans: checked in order and inside the audio."""
    try:
        pairs = [(float(s["start"]), float(s["end"])) for s in spans]
    except (TypeError, KeyError, ValueError):
        raise EotDataError(f"{where}: silence_spans is not a list of {{start, end}}") from None
    if not pairs:
        raise EotDataError(f"{where}: no silence spans (the last one is the turn's end)")
    prev_end = 0.0
    for i, (a, b) in enumerate(pairs):
        if not (math.isfinite(a) and math.isfinite(b)) or a < 0 or b <= a or a < prev_end - 1e-9:
            raise EotDataError(f"{where}: silence span {i} ({a}, {b}) is empty, negative or out of order")
        if b > duration_s + SPAN_TOLERANCE_S:
            raise EotDataError(f"{where}: silence span {i} ({a:.3f}-{b:.3f} s) is outside the audio "
                               f"({duration_s:.3f} s)")
        prev_end = b
    return [*(Point("pause", a, b) for a, b in pairs[:-1]), Point("end", pairs[-1][0])]


def read_rows(path: Path, language: str | None = "en") -> list[EotRow]:
    """Every row of the parquet file(s) at `path` in `language` (None: every language), as cases."""
    out = []
    for f in parquet_files(path):
        try:
            table = pq.read_table(f)
        except (OSError, ValueError) as e:
            raise EotDataError(f"{f}: not a readable parquet file ({e})") from None
        missing = [c for c in REQUIRED if c not in table.column_names]
        if missing:
            raise EotDataError(f"{f}: missing column {', '.join(missing)} (the eot-bench schema needs "
                               f"{', '.join(REQUIRED)})")
        cols = table.select(list(REQUIRED)).to_pylist()
        for i, r in enumerate(cols):
            where = f"{f}: row {i} (id {r.get('id')!r})"
            if language is not None and r["language"] != language:
                continue
            audio = _audio(r["audio"], where)
            out.append(EotRow(str(r["id"]), str(r["language"]), audio, _points(r["silence_spans"], audio.size / SR, where)))
    return out


def write_rows(path: Path, cases: Sequence[CaseAudio], language: str = "en") -> None:
    """Write `cases` as a parquet file of the eot-bench schema: audio as FLAC bytes, a hold span per pause
    (to its resumption), the end's span to the audio's end; `words` and `messages` empty."""
    rows = []
    for c in cases:
        buf = io.BytesIO()
        sf.write(buf, c.audio, SR, format="FLAC", subtype="PCM_16")
        spans = [{"start": p.t_s, "end": p.resume_s} for p in c.points if p.kind == "pause" and p.resume_s]
        end = next(p for p in c.points if p.kind == "end")
        spans.append({"start": end.t_s, "end": c.audio.size / SR})
        rows.append({"id": c.id, "language": language, "audio": {"bytes": buf.getvalue(), "path": f"{c.id}.flac"},
                     "silence_spans": spans, "words": [], "messages": []})
    words = pa.list_(pa.struct([("word", pa.string()), ("start", pa.float64()), ("end", pa.float64())]))
    messages = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    schema = pa.schema([("id", pa.string()), ("language", pa.string()),
                        ("audio", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                        ("silence_spans", pa.list_(pa.struct([("start", pa.float64()), ("end", pa.float64())]))),
                        ("words", words), ("messages", messages)])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def eot_bench_refs(path: Path, language: str | None) -> list[CaseRef]:
    """`--eot-bench PATH`: the rows of local eot-bench-data parquet files in `language` (None: all) as the
    bench's cases."""
    rows = read_rows(path, language)
    if not rows:
        raise EotDataError(f"{path}: no rows in language {language!r} (--language)")
    out = []
    for r in rows:
        c = r.case()
        out.append(CaseRef(c.id, c.group, c.key, "turn", (lambda c=c: c), list(c.points), dict(c.meta)))
    return out
