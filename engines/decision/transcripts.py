"""Callers' turns from public dialogue transcripts, as one compact derived file for the decision model.

Reads the raw files of two public sources (engines/decision/data/SOURCES.md names their repositories,
commits and licences) and keeps only what the caller says:

- Taskmaster (`--taskmaster DIR`, a copy of google-research-datasets/Taskmaster): the user turns of
  TM-4-2024/data/*.json (coffee ordering) and of the dialogue contexts in TM-3-2020/reward/*.json (movie
  tickets); written self-dialogues.
- Harper Valley (`--harper-valley DIR`, transcript JSON files of cricketclub/gridspace-stanford-harper-valley,
  one per call): the caller's segments of real role-played bank calls, spoken and transcribed by hand
  (`human_transcript`). Consecutive caller segments with no agent segment between them are one turn; the
  boundaries between them are pauses where the caller went on (kept as `pauses`).

Each row of the derived file is one caller turn (tab-separated, UTF-8):

    source  dialog  text  stops  context

`text` is `engines.local.input_norm.normalize`d; `stops` lists the word counts (space-separated) at which the
raw text ended a sentence (. ? !) inside the turn, or, for spoken sources, paused between segments; `context`
is the other side's line just before (normalised, its last 24 words). Identical turns of one source are kept once.

    python -m engines.decision.transcripts --taskmaster /tmp/raw/Taskmaster \
        --harper-valley /tmp/raw/harper_valley --out engines/decision/data/conversation.tsv
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from engines.local.input_norm import normalize

CONTEXT_WORDS = 24
SOURCES = ("taskmaster4", "taskmaster3", "harper_valley")
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
_TAG = re.compile(r"\[[^\]]*\]|<[^>]*>")  # "[noise]", "[laughter]", "<unk>" in Harper Valley transcripts


@dataclass(frozen=True)
class TranscriptTurn:
    """One caller turn: normalised words, where the raw text ended a sentence or paused, the line before."""

    source: str
    dialog: str
    text: str
    stops: tuple[int, ...] = ()  # word counts < len(words) where a sentence ended or the caller paused
    context: str = ""


def sentence_stops(pieces: Iterable[str]) -> tuple[str, tuple[int, ...]]:
    """Normalise pieces of one turn (sentences, or spoken segments) and say where each piece ended."""
    words: list[str] = []
    stops: list[int] = []
    for piece in pieces:
        w = normalize(piece).split()
        if not w:
            continue
        if words:
            stops.append(len(words))
        words += w
    return " ".join(words), tuple(stops)


def written_turn(source: str, dialog: str, raw: str, context: str = "") -> TranscriptTurn | None:
    """A written turn: sentence-final punctuation followed by a space marks a stop."""
    text, stops = sentence_stops(_SENTENCE_END.split(raw.strip()))
    if not text:
        return None
    return TranscriptTurn(source, dialog, text, stops, _tail(context))


def _tail(line: str) -> str:
    return " ".join(normalize(line).split()[-CONTEXT_WORDS:])


def taskmaster4(path: Path) -> Iterator[TranscriptTurn]:
    """User turns of one TM-4-2024 data file (a list of conversations with `utterances`)."""
    for conv in _json(path):
        before = ""
        for u in conv.get("utterances", []):
            if u.get("speaker") == "user":
                t = written_turn("taskmaster4", conv["conversation_id"], u.get("text", ""), before)
                if t:
                    yield t
            else:
                before = u.get("text", "")


def taskmaster3(path: Path) -> Iterator[TranscriptTurn]:
    """User turns of the dialogue contexts of one TM-3-2020 reward file (each context once per conversation)."""
    longest: dict[str, list[dict]] = {}
    for row in _json(path):
        ctx = json.loads(row["context"])
        if len(ctx) > len(longest.get(row["conversation_id"], [])):
            longest[row["conversation_id"]] = ctx
    for dialog, ctx in longest.items():
        before = ""
        for m in ctx:
            if m.get("role") == "user" and "text" in m:
                t = written_turn("taskmaster3", dialog, m["text"], before)
                if t:
                    yield t
            elif m.get("role") == "agent" and "text" in m:
                before = m["text"]


def harper_valley(path: Path) -> Iterator[TranscriptTurn]:
    """Caller turns of one Harper Valley call: consecutive caller segments, the pauses between them as stops.

    Segments are read in their `index` order (the agent channel's `start_ms` is offset from the caller's);
    segments that are only tags ("[noise]", "<unk>") are skipped, tags inside a segment dropped, and a turn whose
    last word the transcriber could not make out ("you <unk>") is left out: its ending is unknown."""
    segs = sorted(_json(path), key=lambda s: s.get("index", 0))
    dialog = path.stem
    before, pieces = "", []

    def flush() -> Iterator[TranscriptTurn]:
        text, stops = sentence_stops(_TAG.sub(" ", p) for p in pieces)
        if text and _last_token(pieces[-1]) != "<unk>":
            yield TranscriptTurn("harper_valley", dialog, text, stops, _tail(before))

    for s in segs:
        raw = s.get("human_transcript", "")
        if not _TAG.sub(" ", raw).strip():
            continue
        if s.get("speaker_role") == "caller":
            pieces.append(raw)
        else:
            yield from flush()
            pieces, before = [], _TAG.sub(" ", raw)
    yield from flush()


def _last_token(raw: str) -> str:
    """The last word or "<unk>" of a transcript, bracketed noise tags ("[noise]") ignored."""
    tokens = re.sub(r"\[[^\]]*\]", " ", raw).split()
    return tokens[-1] if tokens else ""


def _json(path: Path) -> list:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable JSON file ({e})") from e
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list")
    return data


def collect(taskmaster: Path | None, harper: Path | None) -> list[TranscriptTurn]:
    """Every caller turn of the sources given, each distinct (source, text) once, in a stable order."""
    turns: list[TranscriptTurn] = []
    if taskmaster is not None:
        tm4 = sorted((taskmaster / "TM-4-2024" / "data").glob("*.json"))
        tm3 = sorted((taskmaster / "TM-3-2020" / "reward").glob("*.json"))
        if not tm4 and not tm3:
            raise ValueError(f"--taskmaster {taskmaster}: no TM-4-2024/data/*.json nor TM-3-2020/reward/*.json")
        for p in tm4:
            turns += taskmaster4(p)
        for p in tm3:
            turns += taskmaster3(p)
    if harper is not None:
        calls = sorted(harper.glob("*.json"))
        if not calls:
            raise ValueError(f"--harper-valley {harper}: no *.json transcripts")
        for p in calls:
            turns += harper_valley(p)
    seen: set[tuple[str, str]] = set()
    out = []
    for t in turns:
        if (t.source, t.text) not in seen:
            seen.add((t.source, t.text))
            out.append(t)
    return out


def write(turns: Iterable[TranscriptTurn], out: Path) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with out.open("w", encoding="utf-8") as f:
        for t in turns:
            f.write("\t".join((t.source, t.dialog, t.text, " ".join(map(str, t.stops)), t.context)) + "\n")
            n += 1
    return n


def read(path: Path) -> list[TranscriptTurn]:
    """The derived file back as caller turns."""
    turns = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        cols = line.split("\t")
        if len(cols) != 5 or cols[0] not in SOURCES:
            raise ValueError(f"{path}:{i}: expected 5 tab-separated columns, the first one of {SOURCES}")
        turns.append(TranscriptTurn(cols[0], cols[1], cols[2], tuple(int(x) for x in cols[3].split()), cols[4]))
    return turns


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Derive the callers' turns file from raw dialogue transcripts.")
    ap.add_argument("--taskmaster", type=Path, help="a copy of google-research-datasets/Taskmaster")
    ap.add_argument("--harper-valley", type=Path, help="a folder of Harper Valley transcript/*.json files")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    for opt, p in (("--taskmaster", a.taskmaster), ("--harper-valley", a.harper_valley)):
        if p is not None and not p.is_dir():
            sys.exit(f"error: {opt} {p}: no such folder")
    if a.taskmaster is None and a.harper_valley is None:
        sys.exit("error: give --taskmaster and/or --harper-valley")
    try:
        turns = collect(a.taskmaster, a.harper_valley)
    except ValueError as e:
        sys.exit(f"error: {e}")
    n = write(turns, a.out)
    by = {s: sum(t.source == s for t in turns) for s in SOURCES}
    print(json.dumps({"out": str(a.out), "turns": n, "by_source": by}))


if __name__ == "__main__":
    main()
