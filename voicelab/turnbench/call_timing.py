"""Turn ends on real human-to-agent calls, from their timing and words alone. Pure Python and numpy.

The Harper Valley bank calls (`audio_fixtures/human/calls/harper_valley/`, one TSV per call; Gridspace and
Stanford, Apache-2.0) are role-played calls between two people, a bank agent and a caller, transcribed by hand,
with each segment's start and each word's offset and duration on one clock. Their audio is not in the
repository (the corpus is larger than what can be brought here), so this group benches what the words and the
silences can do: silence only, and rules that read the decision model's verdict on the caller's words. It is
the lab's large group of people talking to an agent (eot-bench's setting: github.com/livekit/eot-bench), beside
the meeting turns, which have audio but are few.

Labelling, as eot-bench labels its human calls:
- A *caller turn* is the caller's words until the agent speaks: consecutive caller segments stay one turn unless
  an agent segment with words starts between them (the agent took the floor, even with a short "okay").
- Every silence of at least `min_pause_ms` between two words of one turn is a *pause* (the caller went on).
  The words' times are the corpus's alignment (30 ms steps), tags (`[noise]`, `<unk>`) are not words.
- The silence after a turn's last word is its *end*, kept only when the agent starts after that word (an agent
  who talks over the caller's last word leaves the end unknown, as does the call's last turn, after which
  nobody speaks).
- The words at a point are the hand transcript's words up to it: whole segments before it, and inside a segment
  the first k words where the hand transcript and the alignment's transcript have the same number of words (the
  alignment's own words otherwise; the share is counted).

Judging a point as the turn bench does (`voicelab.turnbench.curve`): a rule gives a required silence R (ms after
the last word); a pause is *cut off* when R is shorter than it, and at an end the *dead air* is R. No VAD runs
here: R is read as silence after the speech's end, so the VAD's own lag is not in it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voicelab.rules.turn_fusion import logit
from voicelab.turnbench import curve as cv

ROOT = Path(__file__).resolve().parents[2]
CALLS_DIR = ROOT / "audio_fixtures" / "human" / "calls" / "harper_valley"
MIN_PAUSE_MS = 100.0  # eot-bench labels every silence from 100 ms
RESUMED_MIN_MS = 200.0  # a pause the pipeline's VAD registers (its stop_secs), so the rule can remember it
END_TOLERANCE_MS = 100.0  # an agent starting this close before the last word's end talked over it
_TAG = re.compile(r"^[\[<].*[\]>]$")


class CallFileError(ValueError):
    """A call file is malformed; the message names the file and the line."""


@dataclass(frozen=True)
class CallSegment:
    index: int
    role: str  # "agent" or "caller"
    offset_ms: int
    duration_ms: int
    word_offsets_ms: tuple[int, ...]
    word_durations_ms: tuple[int, ...]
    aligned: str  # the words the offsets belong to (the corpus's recogniser)
    text: str  # the hand transcript


@dataclass(frozen=True)
class TimedPoint:
    """One labelled point: a pause inside a caller turn or the turn's end."""

    call: str
    turn: int
    kind: str  # "pause" or "end"
    words: str  # what the caller has said in this turn so far
    silence_ms: float  # the pause's length; at an end, until the agent spoke
    resumed_ms: float  # the longest pause (>= RESUMED_MIN_MS) the caller already went on after in this turn
    hand_words: bool  # the words are the hand transcript's (False: the alignment's, in a segment that differs)
    context: str = ""  # the agent's last segment before the turn began (what the caller answers)


def _ints(field: str, path: Path, n: int) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in field.split(",")) if field else ()
    except ValueError as e:
        raise CallFileError(f"{path}:{n}: not a list of integers: {field!r}") from e


def read_call(path: Path) -> list[CallSegment]:
    """The segments of one call file (8 tab-separated columns a line; see the folder's README)."""
    segs: list[CallSegment] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        cols = line.split("\t")
        if len(cols) != 8:
            raise CallFileError(f"{path}:{n}: expected 8 tab-separated columns, got {len(cols)}")
        idx, role, off, dur, wo, wd, aligned, text = cols
        if role not in ("agent", "caller"):
            raise CallFileError(f"{path}:{n}: role must be agent or caller, got {role!r}")
        try:
            seg = CallSegment(int(idx), role, int(off), int(dur), _ints(wo, path, n), _ints(wd, path, n), aligned, text)
        except ValueError as e:
            raise CallFileError(f"{path}:{n}: {e}") from e
        if len(seg.word_offsets_ms) != len(seg.word_durations_ms) or len(seg.word_offsets_ms) != len(aligned.split()):
            raise CallFileError(f"{path}:{n}: word offsets, durations and aligned words differ in number")
        segs.append(seg)
    return sorted(segs, key=lambda s: (s.offset_ms, s.index))


def _words(text: str) -> list[str]:
    return [w for w in text.split() if not _TAG.match(w)]


def _timed_words(seg: CallSegment) -> list[tuple[float, float, str]]:
    """(start ms, end ms, word) of the segment's words on the call's clock, tags left out; the words are the hand
    transcript's where it has as many words as the alignment."""
    aligned = seg.aligned.split()
    hand = seg.text.split()
    if not hand:
        return []  # the transcriber heard no words (the alignment's recogniser may still have output some)
    use_hand = len(hand) == len(aligned)
    out = []
    for o, d, a, h in zip(seg.word_offsets_ms, seg.word_durations_ms, aligned, hand if use_hand else aligned,
                          strict=True):
        if _TAG.match(a) or _TAG.match(h):
            continue
        out.append((seg.offset_ms + o, seg.offset_ms + o + d, h))
    return out


def points_of_call(call: str, segs: Sequence[CallSegment], min_pause_ms: float = MIN_PAUSE_MS) -> list[TimedPoint]:
    """The labelled points of one call (module doc)."""
    agents = sorted((s for s in segs if s.role == "agent" and _words(s.text)), key=lambda s: s.offset_ms)
    agent_starts = [s.offset_ms for s in agents]
    timed = {id(s): _timed_words(s) for s in segs if s.role == "caller"}
    callers = [s for s in segs if s.role == "caller" and timed[id(s)]]
    turns: list[list[CallSegment]] = []
    for s in callers:
        if turns:
            last_end = timed[id(turns[-1][-1])][-1][1]
            if not any(last_end - END_TOLERANCE_MS <= a < s.offset_ms for a in agent_starts):
                turns[-1].append(s)
                continue
        turns.append([s])
    pts: list[TimedPoint] = []
    for ti, turn in enumerate(turns):
        before = [a for a in agents if a.offset_ms < turn[0].offset_ms]
        ctx = " ".join(_words(before[-1].text)) if before else ""
        words: list[tuple[float, float, str, bool]] = []
        for s in turn:
            ok = len(s.text.split()) == len(s.aligned.split())  # `_timed_words` took the hand transcript's words
            words += [(a, b, w, ok) for a, b, w in timed[id(s)]]
        resumed = 0.0
        for i in range(len(words) - 1):
            gap = words[i + 1][0] - words[i][1]
            if gap >= min_pause_ms:
                said = " ".join(w for _, _, w, _ in words[: i + 1])
                pts.append(TimedPoint(call, ti, "pause", said, gap, resumed, words[i][3], ctx))
            if gap >= RESUMED_MIN_MS:
                resumed = max(resumed, gap)
        end = words[-1][1]
        nxt = next((a for a in agent_starts if a >= end - END_TOLERANCE_MS), None)
        if nxt is None or nxt < end:
            continue  # the call's last turn, or the agent talked over the last word: the end is unknown
        pts.append(TimedPoint(call, ti, "end", " ".join(w for _, _, w, _ in words), float(nxt - end), resumed,
                              words[-1][3], ctx))
    return pts


def load_points(folder: Path = CALLS_DIR, min_pause_ms: float = MIN_PAUSE_MS,
                calls: slice = slice(None)) -> list[TimedPoint]:
    """The points of the folder's calls (`calls`: which of them, in name order)."""
    files = sorted(folder.glob("*.tsv"))[calls]
    if not files:
        raise CallFileError(f"{folder}: no call files (*.tsv)")
    return [p for f in files for p in points_of_call(f.stem, read_call(f), min_pause_ms)]


# --- strategies: a required silence (ms) per point, for every setting of a knob ------------------------------

Rule = Callable[[float, TimedPoint], float]  # (setting, point) -> required silence in ms


@dataclass(frozen=True)
class Judged:
    """One strategy's sweep over the points: the inputs of `voicelab.turnbench.curve.curve`."""

    name: str
    knob: str
    values: list[float]
    cut: np.ndarray  # (K, pauses)
    dead_ms: np.ndarray  # (K, ends)

    def curve(self) -> cv.Curve:
        return cv.curve(self.values, self.cut, self.dead_ms)


def judge(name: str, knob: str, values: Sequence[float], rule: Rule, points: Sequence[TimedPoint]) -> Judged:
    pauses = [p for p in points if p.kind == "pause"]
    ends = [p for p in points if p.kind == "end"]
    cut = np.array([[rule(v, p) < p.silence_ms for p in pauses] for v in values], dtype=bool)
    dead = np.array([[rule(v, p) for p in ends] for v in values], dtype=float)
    return Judged(name, knob, list(values), cut.reshape(len(values), len(pauses)), dead.reshape(len(values), len(ends)))


def geom(lo: float, hi: float, n: int) -> list[float]:
    return [float(x) for x in np.geomspace(lo, hi, n)]


def hazard_rows(points: Sequence[TimedPoint], text_p: Sequence[float], step_ms: float = 100.0,
                start_ms: float = 200.0, max_ms: float = 3000.0) -> tuple[np.ndarray, np.ndarray]:
    """Discrete-time hazard examples (as `voicelab.turnbench.fusion_fit`): one per point and per `step_ms` of
    silence from `start_ms` while the caller is still silent; x = (logit(text P), ln(silence s)), y = end."""
    xs: list[tuple[float, float]] = []
    ys: list[int] = []
    for p, tp in zip(points, text_p, strict=True):
        lt = logit(tp)
        s = start_ms
        while s <= max_ms and (p.kind == "end" or s < p.silence_ms):
            xs.append((lt, math.log(s / 1000.0)))
            ys.append(int(p.kind == "end"))
            s += step_ms
    return np.asarray(xs, dtype=float).reshape(-1, 2), np.asarray(ys, dtype=float)




def export_examples(points: Sequence[TimedPoint], path: Path) -> int:
    """Write the points as labelled `turn_complete` examples for the decision model's trainer
    (`engines.decision.conversation.read_points`): call, end (1) or pause (0), the words, the agent's line."""
    rows = [f"{p.call}\t{int(p.kind == 'end')}\t{p.words}\t{p.context}" for p in points]
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Export the calls' labelled points as decision-model examples.")
    ap.add_argument("--calls", type=Path, default=CALLS_DIR)
    ap.add_argument("--skip-first", type=int, default=0, help="leave out the first N calls in name order")
    ap.add_argument("--export", type=Path, required=True)
    a = ap.parse_args(argv)
    pts = load_points(a.calls, calls=slice(a.skip_first, None))
    n = export_examples(pts, a.export)
    print(f"{n} points of {len({p.call for p in pts})} calls -> {a.export}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
