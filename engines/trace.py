"""Trace record and replay: any engine's snapshot stream saved as JSON lines with timing, and a
`replay` engine that plays it back with its original timing (deterministic pipeline tests,
traces captured on a GPU replayed on a laptop).

File layout, one JSON object per line:
    {"type": "header", "engine": ..., "sampler": ..., "version": 1}
    {"type": "generation", "messages": [...]}
    {"type": "snapshot", "dt_ns": <since the generation started>, ...Snapshot fields}
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engines.errors import CheckpointError
from engines.snapshot import Snapshot


class TraceError(CheckpointError):
    """A trace file is missing or malformed."""


@dataclass
class RecordedGeneration:
    messages: list[dict[str, str]]
    snapshots: list[tuple[int, Snapshot]] = field(default_factory=list)  # (dt_ns, snapshot)


class TraceWriter:
    def __init__(self, path: Path, engine: str, sampler: str) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f = path.open("w")
        self._write({"type": "header", "engine": engine, "sampler": sampler, "version": 1})
        self._t0 = 0

    def _write(self, obj: dict[str, Any]) -> None:
        self._f.write(json.dumps(obj) + "\n")
        self._f.flush()

    def start(self, messages: Sequence[dict[str, str]], t0_ns: int) -> None:
        self._t0 = t0_ns
        self._write({"type": "generation", "messages": list(messages)})

    def snapshot(self, snap: Snapshot) -> None:
        self._write({"type": "snapshot", "dt_ns": snap.t_ns - self._t0, **snap.to_dict()})

    def close(self) -> None:
        self._f.close()


def read_trace(path: Path) -> tuple[dict[str, Any], list[RecordedGeneration]]:
    if not path.is_file():
        raise TraceError(f"{path}: trace file not found")
    header: dict[str, Any] | None = None
    gens: list[RecordedGeneration] = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise TraceError(f"{path}: not UTF-8 text (byte {e.start})") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            kind = obj["type"]
            if kind == "header":
                header = obj
            elif kind == "generation":
                gens.append(RecordedGeneration(list(obj["messages"])))
            elif kind == "snapshot":
                if not gens:
                    raise ValueError("snapshot before any generation")
                _check_snapshot(obj)
                gens[-1].snapshots.append((int(obj["dt_ns"]), Snapshot.from_dict(obj)))
            else:
                raise ValueError(f"unknown type {kind!r}")
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise TraceError(f"{path}:{n}: malformed trace line ({e})") from None
    if header is None:
        raise TraceError(f"{path}: no header line")
    return header, gens


_SNAPSHOT_LISTS = {"tokens": int, "masked": bool, "confidence": (int, float), "guesses": int, "pieces": str}


def _check_snapshot(obj: dict[str, Any]) -> None:
    """A snapshot line's fields have the types and lengths a Snapshot needs (ValueError naming the field)."""
    for key in ("dt_ns", "step", "block_size", "blocks_done", "pinned", "forwards"):
        if not isinstance(obj.get(key), int) or isinstance(obj.get(key), bool) or obj[key] < 0:
            raise ValueError(f"field '{key}' must be a whole number >= 0, got {obj.get(key)!r}")
    if not isinstance(obj.get("done"), bool):
        raise ValueError(f"field 'done' must be true or false, got {obj.get('done')!r}")
    if obj.get("eos") is not None and not isinstance(obj["eos"], int):
        raise ValueError(f"field 'eos' must be a position or null, got {obj['eos']!r}")
    n = None
    for key, typ in _SNAPSHOT_LISTS.items():
        v = obj.get(key)
        if not isinstance(v, list) or not all(isinstance(x, typ) for x in v):
            raise ValueError(f"field '{key}' must be a list of {getattr(typ, '__name__', 'number')}s, got {v!r:.40}")
        if n is not None and len(v) != n:
            raise ValueError(f"field '{key}' has {len(v)} positions, 'tokens' has {n}")
        n = len(v) if n is None else n


class ReplayGeneration:
    """Plays one recorded generation; pin() is noted but cannot change a recording."""

    def __init__(self, rec: RecordedGeneration, speed: float = 1.0) -> None:
        self.rec = rec
        self.speed = speed
        self.pinned = 0
        self._cancelled = False
        self.last: Snapshot | None = None

    def pin(self, n: int) -> None:
        self.pinned = max(self.pinned, n)

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def _restamp(self, snap: Snapshot, t0: int, dt: int) -> Snapshot:
        return replace(snap, t_ns=t0 + int(dt / self.speed), pinned=max(snap.pinned, self.pinned))

    def __iter__(self) -> Iterator[Snapshot]:
        t0 = time.monotonic_ns()
        for dt, snap in self.rec.snapshots:
            if self._cancelled:
                return
            wait = t0 + dt / self.speed - time.monotonic_ns()
            if wait > 0:
                time.sleep(wait / 1e9)
            self.last = self._restamp(snap, t0, dt)
            yield self.last

    async def __aiter__(self) -> AsyncIterator[Snapshot]:
        t0 = time.monotonic_ns()
        for dt, snap in self.rec.snapshots:
            wait = t0 + dt / self.speed - time.monotonic_ns()
            if wait > 0:
                await asyncio.sleep(wait / 1e9)
            if self._cancelled:
                return
            self.last = self._restamp(snap, t0, dt)
            yield self.last


class ReplayEngine:
    """Answers each chat with the recorded generation whose last user message matches, else the
    next unused one in order."""

    kind = "replay"

    def __init__(self, path: Path, speed: float = 1.0) -> None:
        self.path = path
        header, self.generations = read_trace(path)
        self.name = f"replay:{header.get('engine', '?')}"
        self.sampler = str(header.get("sampler", "?"))
        self.speed = speed
        self._next = 0

    def describe(self) -> dict:
        return {"engine": self.name, "sampler": self.sampler, "trace": str(self.path),
                "generations": len(self.generations)}

    def generate(self, messages: Sequence[dict[str, str]], **_: object) -> ReplayGeneration:
        if not self.generations:
            raise TraceError(f"{self.path}: trace holds no generation")
        last_user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), None)
        for g in self.generations:
            lu = next((m["content"] for m in reversed(g.messages) if m.get("role") == "user"), None)
            if last_user is not None and lu == last_user:
                return ReplayGeneration(g, self.speed)
        g = self.generations[self._next % len(self.generations)]
        self._next += 1
        return ReplayGeneration(g, self.speed)

    def warm_up(self) -> None:
        pass  # a recording has no first-use cost

    def close(self) -> None:
        pass


def record(engine: Any, chats: Sequence[Sequence[dict[str, str]]], path: Path) -> None:
    """Run each chat through an engine and save the snapshot streams."""
    w = TraceWriter(path, engine.name, engine.sampler)
    try:
        for msgs in chats:
            gen = engine.generate(msgs)
            w.start(msgs, time.monotonic_ns())
            for snap in gen:
                w.snapshot(snap)
    finally:
        w.close()
