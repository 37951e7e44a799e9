"""The run folder (docs/metrics.md): its layout, and the only code that writes it.

    RUN/config.json        everything needed to repeat the run (package versions, host, command); at the end,
                           `machine_load`: the machine while the run lasted (`voicelab.measure.machine_load`)
    RUN/events.jsonl       the event rows, appended as they happen (a crash keeps what happened)
    RUN/calls/ID.wav       the recorded call, stereo (left caller, right bot) on the call clock
    RUN/calls/ID.json      the call's ground truth and what it left (context, tool calls, schedule)
    RUN/turns.csv          the per-turn table; RUN/{events,turns,chunks}.parquet the analysis tables (made by
                           `voicelab.analysis.tables.parquet_tables`, written here)
    RUN/summary.json       the figures: written LAST, it seals the folder
    RUN/INCOMPLETE         present from creation until the seal: a killed run says so

Every file but events.jsonl is written to a temporary name and renamed, so no reader ever sees half a
file; a folder is finished exactly when `voicelab.analysis.tables.is_finished` says so (summary.json there,
INCOMPLETE gone: the one check of the seal, for the runs and the analysis alike). A folder of several
configurations (a matrix, a sweep) holds one sealed run folder per configuration and `matrix.json`, the list
of their summaries.
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from voicelab.measure.events import Event, EventWriter, write_events

INCOMPLETE = "INCOMPLETE"
SUMMARY = "summary.json"
CONFIG = "config.json"
EVENTS = "events.jsonl"
CALLS = "calls"
MATRIX = "matrix.json"
PACKAGES = ("torch", "pipecat-ai", "piper-tts", "numpy", "voicelab", "pocketsphinx", "onnxruntime",
            "faster-whisper")


class RunFolderError(OSError):
    """A run folder that cannot be created or written; the message names the path."""


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def host() -> dict[str, Any]:
    """The machine a run's absolute figures belong to (they move 1.5x between two 2-core machines)."""
    return {"cpu_count": os.cpu_count(), "platform": platform.platform(), "machine": platform.machine(),
            "cpu_model": _cpu_model()}


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def source() -> dict[str, Any]:
    """The commit of the code that made a run (None outside a git checkout) and whether it had local edits."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    if head.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip()) if dirty.returncode == 0 else None}


@contextmanager
def _atomic(path: Path, mode: str = "w") -> Iterator[Any]:
    """Open a temporary sibling of `path`; on success rename it over `path` (readers never see half a file)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with tmp.open(mode, **({"encoding": "utf-8", "newline": ""} if "b" not in mode else {})) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json(path: Path, obj: Any) -> Path:
    """JSON to `path`, atomically."""
    text = json.dumps(obj, indent=2, default=str) + "\n"
    with _atomic(path) as f:
        f.write(text)
    return path


def write_bytes(path: Path, data: bytes) -> Path:
    with _atomic(path, "wb") as f:
        f.write(data)
    return path


def write_tables(run: Path, tables: Mapping[str, bytes]) -> dict[str, Path]:
    """RUN/<name>.parquet for each table (`voicelab.analysis.tables.parquet_tables` makes them), atomically."""
    return {name: write_bytes(Path(run) / f"{name}.parquet", data) for name, data in tables.items()}


def write_wav(path: Path, audio: np.ndarray, sample_rate: int) -> Path:
    """16-bit PCM WAV (mono or stereo frames x channels), atomically."""
    buf = io.BytesIO()
    sf.write(buf, audio, sample_rate, format="WAV", subtype="PCM_16")
    return write_bytes(path, buf.getvalue())


class RunFolder:
    """One run folder being written. `create` marks it incomplete; `seal` writes summary.json and unmarks it."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @classmethod
    def create(cls, path: Path) -> RunFolder:
        path = Path(path)
        try:
            (path / CALLS).mkdir(parents=True, exist_ok=True)
            (path / INCOMPLETE).write_text("this run has not finished (or was killed); no figure here is final\n",
                                           encoding="utf-8")
        except OSError as e:
            raise RunFolderError(f"{path}: cannot create the run folder: {e.strerror or e}") from None
        return cls(path)

    @property
    def run_id(self) -> str:
        return self.path.name

    def write_config(self, config: Mapping[str, Any], command: Sequence[str] = ()) -> dict[str, Any]:
        """config.json: the configuration plus what repeats it (versions, host, command line)."""
        out = {"run_id": self.run_id, **dict(config), "command": list(command), "versions": versions(),
               "host": host(), "source": source(),
               "started_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
        write_json(self.path / CONFIG, out)
        return out

    def add_to_config(self, fields: Mapping[str, Any]) -> None:
        """config.json with `fields` added (what is known only once the run is over), atomically."""
        path = self.path / CONFIG
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise RunFolderError(f"{path}: cannot read the run's config: {e}") from None
        write_json(path, {**config, **dict(fields)})

    def events_writer(self) -> EventWriter:
        """events.jsonl, appended row by row as the call happens."""
        return EventWriter(self.path / EVENTS)

    def write_events(self, events: Sequence[Event]) -> None:
        """events.jsonl at once (runs whose events were made elsewhere, e.g. synthetic ones)."""
        tmp = self.path / f".{EVENTS}.tmp"
        write_events(tmp, events)
        os.replace(tmp, self.path / EVENTS)

    def write_call(self, call_id: str, stereo: np.ndarray, sample_rate: int, meta: Mapping[str, Any]) -> Path:
        """calls/ID.wav and calls/ID.json (ground truth `utterances`, plus whatever the call left)."""
        wav = write_wav(self.path / CALLS / f"{call_id}.wav", stereo, sample_rate)
        write_json(self.path / CALLS / f"{call_id}.json",
                   {"call_id": call_id, "sample_rate": sample_rate, "wav": wav.name, **dict(meta)})
        return wav

    def write_turns_csv(self, rows: Sequence[Mapping[str, Any]]) -> None:
        with _atomic(self.path / "turns.csv") as f:
            if rows:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)

    def write_tables(self, tables: Mapping[str, bytes]) -> dict[str, Path]:
        """The Parquet tables ({events,turns,chunks}.parquet), from `voicelab.analysis.tables.parquet_tables`."""
        return write_tables(self.path, tables)

    def write_notes(self, notes: Sequence[str]) -> None:
        if notes:
            with _atomic(self.path / "notes.txt") as f:
                f.write("\n".join(notes) + "\n")

    def seal(self, summary: Mapping[str, Any]) -> Path:
        """summary.json last: from here on the folder is finished."""
        path = write_json(self.path / SUMMARY, dict(summary))
        (self.path / INCOMPLETE).unlink(missing_ok=True)
        return path


def write_matrix(root: Path, summaries: Sequence[Mapping[str, Any]]) -> Path:
    """matrix.json: the summaries of a folder of configurations (a matrix or a sweep)."""
    return write_json(Path(root) / MATRIX, [dict(s) for s in summaries])
