"""Who holds the floor: a conversation's speaker segments (RTTM rows) grouped into turns. Plain Python.

The labelling of LiveKit's eot-bench, read on speaker segments: a turn is one speaker's speech until another
speaker takes the floor; the silence before that is the turn's end, every silence inside it is a pause (the
pauses themselves come from the audio: `voicelab.turnbench.human_labels`). The rules:

- **Taking the floor.** Two consecutive segments of one speaker belong to one turn unless another speaker's
  segment of more than `BACKCHANNEL_MAX_S` (1 s) overlaps the gap between them. A shorter one ("mm-hmm",
  "yeah", a laugh) is a backchannel: the first speaker resumes and their turn goes on through it.
- **Backchannels are not turns.** A turn made only of segments of at most `BACKCHANNEL_MAX_S`, each inside the
  span of another speaker's turn, is dropped: it answers nothing and nobody waits for its end.
- **Cut by the region's edge.** A turn that no other speaker's floor-taking segment follows before the region
  ends is dropped: whether the speaker went on after the region is unknown. A turn already under way at the
  region's start is kept (its clip starts at the region's start): eot-bench labels a turn's pauses and the
  silence before the next speaker takes the floor, neither of which needs the turn's first word; dropping them
  lost two of the AMI excerpts' turn ends.
- **Overlapped ends.** A turn whose end another speaker talks over (is speaking `OVERLAP_TOLERANCE_S` before
  it) is dropped: the listener hears someone else already talking, which is not a moment at which anyone
  waits for the turn to end; the annotations' own boundaries are not finer than that tolerance.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BACKCHANNEL_MAX_S = 1.0
EDGE_S = 0.05
OVERLAP_TOLERANCE_S = 0.1


class RttmError(ValueError):
    """A line of an RTTM file that is not a speaker segment."""


@dataclass(frozen=True, order=True)
class Segment:
    """One stretch of one speaker's speech, seconds on the recording's clock."""

    start: float
    end: float
    speaker: str

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Turn:
    """A speaker's turn: their segments from the first to the last, until another speaker takes the floor."""

    speaker: str
    segments: tuple[Segment, ...]
    next_speaker: str  # who took the floor after it

    @property
    def start(self) -> float:
        return self.segments[0].start

    @property
    def end(self) -> float:
        return self.segments[-1].end


def parse_rttm(lines: Iterable[str], recording: str | None = None) -> dict[str, list[Segment]]:
    """Speaker segments per recording from RTTM lines (`SPEAKER uri channel start duration ... speaker ...`);
    `recording` keeps that one only. Blank lines and `;` comments are skipped."""
    out: dict[str, list[Segment]] = {}
    for n, line in enumerate(lines, 1):
        f = line.split()
        if not f or f[0].startswith(";"):
            continue
        if f[0] != "SPEAKER" or len(f) < 8:
            raise RttmError(f"line {n}: expected 'SPEAKER uri channel start duration <NA> <NA> speaker ...'")
        try:
            start, dur = float(f[3]), float(f[4])
        except ValueError:
            raise RttmError(f"line {n}: start {f[3]!r} or duration {f[4]!r} is not a number") from None
        if dur <= 0 or start < 0:
            raise RttmError(f"line {n}: a segment needs a start >= 0 and a positive duration")
        if recording is None or f[1] == recording:
            out.setdefault(f[1], []).append(Segment(start, start + dur, f[7]))
    return {k: sorted(v) for k, v in out.items()}


def merge_own(segments: Sequence[Segment]) -> list[Segment]:
    """Each speaker's overlapping or touching segments joined into one (annotations sometimes split a word)."""
    out: list[Segment] = []
    for spk in sorted({s.speaker for s in segments}):
        for s in sorted(x for x in segments if x.speaker == spk):
            if out and out[-1].speaker == spk and s.start <= out[-1].end:
                out[-1] = Segment(out[-1].start, max(out[-1].end, s.end), spk)
            else:
                out.append(s)
    return sorted(out)


def _takes_floor(o: Segment, after: float, before: float) -> bool:
    """Another speaker's segment that overlaps the gap (after, before) and is longer than a backchannel."""
    return o.duration > BACKCHANNEL_MAX_S and o.start < before and o.end > after


def _raw_turns(segs: Sequence[Segment]) -> list[Turn]:
    """Every speaker's segments grouped into turns (before any is dropped); next_speaker "" where none follows."""
    turns: list[Turn] = []
    for spk in sorted({s.speaker for s in segs}):
        own = [s for s in segs if s.speaker == spk]
        others = [s for s in segs if s.speaker != spk]
        group = [own[0]]
        for s in own[1:]:
            if any(_takes_floor(o, group[-1].end, s.start) for o in others):
                turns.append(Turn(spk, tuple(group), ""))
                group = [s]
            else:
                group.append(s)
        turns.append(Turn(spk, tuple(group), ""))
    out = []
    for t in turns:
        # the floor passes to the first other speaker whose floor-taking segment reaches past this turn's end
        nxt = min((o for o in segs if o.speaker != t.speaker and o.duration > BACKCHANNEL_MAX_S
                   and o.end > t.end and o.start > t.start), default=None)
        out.append(Turn(t.speaker, t.segments, nxt.speaker if nxt else ""))
    return sorted(out, key=lambda t: (t.start, t.speaker))


def is_backchannel(turn: Turn, turns: Sequence[Turn]) -> bool:
    """Only short segments, each inside another speaker's turn."""
    return all(s.duration <= BACKCHANNEL_MAX_S and any(
        o.speaker != turn.speaker and o.start <= s.start and s.end <= o.end for o in turns) for s in turn.segments)


def backchannel_segments(segments: Sequence[Segment], region: tuple[float, float]) -> list[Segment]:
    """The segments the turns pass over as backchannels (each speaker's own segments joined first): every
    segment of a would-be turn that `is_backchannel` drops, away from the region's edges, in order."""
    segs = merge_own([s for s in segments if s.end > region[0] and s.start < region[1]])
    every = _raw_turns(segs)
    return sorted(s for t in every if is_backchannel(t, every) for s in t.segments
                  if s.start >= region[0] + EDGE_S and s.end <= region[1] - EDGE_S)


def turns(segments: Sequence[Segment], region: tuple[float, float]) -> list[Turn]:
    """The conversation's turns that the bench can use (the module doc's rules), in order of their starts."""
    segs = merge_own([s for s in segments if s.end > region[0] and s.start < region[1]])
    if not segs:
        return []
    every = _raw_turns(segs)
    out = []
    for t in every:
        if is_backchannel(t, every) or not t.next_speaker:
            continue
        nxt = min(o.start for o in segs if o.speaker == t.next_speaker and o.end > t.end and o.start > t.start)
        if nxt >= region[1] - EDGE_S or t.end >= region[1] - EDGE_S:
            continue
        cut = t.end - OVERLAP_TOLERANCE_S
        if nxt < cut or any(o.speaker != t.speaker and o.start < cut < o.end for o in segs):
            continue
        out.append(t)
    return out


def floor_taker_start(turn: Turn, segments: Sequence[Segment]) -> float:
    """When the next speaker's speech that took the floor begins (the turn's end has to come before it)."""
    return min(s.start for s in merge_own(segments)
               if s.speaker == turn.next_speaker and s.end > turn.end and s.start > turn.start)
