"""Recorded call fixtures: format, loader, validator and caller ground truth (DESIGN.md §6).

A fixture is a folder ``audio_fixtures/NAME/`` holding ``fixture.json`` and mono WAV clips.
Two forms are accepted:

- reactive turns: ``{"name", "description", "turns": [{"audio", "text", "start": {"after",
  "delay_s"}, "expect"?, "speech"?}]}``; the caller reacts to the bot (see caller_schedule.py);
- a fixed-timeline recording: ``{"name", "description", "recording": "call.wav", "segments":
  [{"start_s", "end_s", "text", "expect"?}]}``. It is cut into one clip per segment (cuts half
  way between segments, so the clips played back to back give the recording again), each with
  ``after: call_start`` and its absolute start as ``delay_s``: the player needs no second mode.

Optional top-level ``sample_rate`` states the rate the clips are stored at (checked); clips
are resampled on load (soxr) to the rate asked of :func:`load_fixture`. A turn's speech
``[onset_s, offset_s]`` inside its clip is taken from ``speech`` when given, else found with
the onset rule of DESIGN.md §4 (voicelab/onset.py). Keys starting with ``_`` are comments.

Every problem is one line: ``FILE: FIELD: what is wrong``. :func:`check_fixture` lists them
all; :func:`load_fixture` raises :class:`FixtureError` with the first.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
import soxr

from voicelab.caller_schedule import (
    AFTER_KINDS,
    EXPECT_KINDS,
    CallerScheduler,
    Expect,
    StartRule,
    TurnPlan,
)
from voicelab.onset import speech_span

__all__ = [
    "AFTER_KINDS", "EXPECT_KINDS", "FIXTURES_ROOT", "FIXTURE_FILE", "CallerTurn", "Fixture",
    "FixtureError", "StartRule", "check_fixture", "default_names", "discover", "load_fixture", "select",
]

FIXTURE_FILE = "fixture.json"
FIXTURES_ROOT = Path(__file__).resolve().parents[1] / "audio_fixtures"
DEFAULT_LIST = "default.txt"
WAV_FORMATS = ("WAV", "WAVEX", "RF64")
# Speech bounds given by hand may overrun the clip by a rounding error, not more.
_EDGE_TOL_S = 0.005

_TOP_KEYS = {"name", "description", "sample_rate", "turns", "recording", "segments"}
_TURN_KEYS = {"audio", "text", "start", "expect", "speech"}
_START_KEYS = {"after", "delay_s"}
_SEGMENT_KEYS = {"start_s", "end_s", "text", "expect"}


class FixtureError(Exception):
    """A fixture that breaks the format; the message names the file and the field."""


@dataclass(eq=False)
class CallerTurn:
    index: int
    audio: np.ndarray  # float32 mono at sample_rate
    text: str
    start: StartRule
    expect: Expect | None
    speech_onset_s: float  # inside the clip
    speech_offset_s: float
    sample_rate: int = 16000
    source: str = ""  # clip file name, for messages and reports

    @property
    def duration_s(self) -> float:
        return self.audio.size / self.sample_rate

    def plan(self) -> TurnPlan:
        return TurnPlan(start=self.start, duration_s=self.duration_s, speech_onset_s=self.speech_onset_s,
                        speech_offset_s=self.speech_offset_s, expect=self.expect)


@dataclass(eq=False)
class Fixture:
    name: str
    description: str
    path: Path  # the fixture.json file
    sample_rate: int  # rate of every turn's audio
    turns: list[CallerTurn]
    recording: bool = False  # True for the fixed-timeline form

    def plans(self) -> list[TurnPlan]:
        return [t.plan() for t in self.turns]

    def scheduler(self, no_reply_timeout_s: float = 6.0) -> CallerScheduler:
        return CallerScheduler(self.plans(), no_reply_timeout_s=no_reply_timeout_s)

    @property
    def caller_audio_s(self) -> float:
        return sum(t.duration_s for t in self.turns)


# --- discovery -------------------------------------------------------------------------------

def _json_path(path: Path) -> Path:
    return path / FIXTURE_FILE if path.is_dir() else path


def discover(paths: Iterable[Path | str]) -> list[Path]:
    """fixture.json files named by paths: a fixture.json, a fixture folder, or a folder of them."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_file():
            found = [p]
        elif p.is_dir():
            found = [p / FIXTURE_FILE] if (p / FIXTURE_FILE).is_file() else sorted(p.rglob(FIXTURE_FILE))
            if not found:
                raise FixtureError(f"{p}: no {FIXTURE_FILE} in this folder or below")
        else:
            raise FixtureError(f"{p}: no such file or folder")
        out.extend(f for f in found if f not in out)
    return out


def default_names(root: Path = FIXTURES_ROOT) -> list[str]:
    """Fixture names listed in ROOT/default.txt (one a line, # comments)."""
    listing = root / DEFAULT_LIST
    try:
        lines = listing.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise FixtureError(f"{listing}: cannot read the default list ({e.strerror})") from e
    return [s for s in (ln.split("#", 1)[0].strip() for ln in lines) if s]


def select(specs: Sequence[str], root: Path = FIXTURES_ROOT) -> list[Path]:
    """fixture.json files for command-line words: ``default``, ``all``, a fixture name, or a path."""
    words: list[str] = []
    for spec in specs:
        words.extend(default_names(root) if spec == "default" else [spec])
    out: list[Path] = []
    for w in words:
        if w == "all":
            found = discover([root])
        elif (root / w / FIXTURE_FILE).is_file():
            found = [root / w / FIXTURE_FILE]
        elif Path(w).exists():
            found = discover([w])
        else:
            raise FixtureError(f"{w}: no fixture of that name in {root} and no such path")
        out.extend(f for f in found if f not in out)
    return out


# --- parsing ---------------------------------------------------------------------------------

class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, file: Path, where: str, what: str) -> None:
        self.items.append(f"{file}: {where}: {what}")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _unknown_keys(obj: dict[str, Any], allowed: set[str], file: Path, where: str, probs: _Problems) -> None:
    for k in sorted(obj):
        if k not in allowed and not k.startswith("_"):
            probs.add(file, f"{where}.{k}" if where else k,
                      f"unknown field (expected one of {', '.join(sorted(allowed))})")


def _text(obj: dict[str, Any], key: str, file: Path, where: str, probs: _Problems) -> str:
    v = obj.get(key)
    if not isinstance(v, str) or not v.strip():
        probs.add(file, f"{where}.{key}" if where else key, "missing or empty (a non-empty string is required)")
        return ""
    return v.strip()


def _expect(obj: dict[str, Any], file: Path, where: str, probs: _Problems) -> Expect | None:
    v = obj.get("expect")
    if v is None:
        return None
    if v not in EXPECT_KINDS:
        probs.add(file, f"{where}.expect", f"unknown value {v!r} (expected {' or '.join(EXPECT_KINDS)} or null)")
        return None
    return v  # type: ignore[no-any-return]


def _read_clip(wav: Path, where: str, target_sr: int, declared_sr: int | None,
               probs: _Problems) -> np.ndarray | None:
    """Mono float32 at target_sr, or None after recording why not."""
    if not wav.exists():
        probs.add(wav, where, "file not found")
        return None
    try:
        info = sf.info(str(wav))
        data, sr = sf.read(str(wav), dtype="float32", always_2d=True)
    except (RuntimeError, sf.LibsndfileError, OSError) as e:
        probs.add(wav, where, f"unreadable audio ({str(e).splitlines()[0] if str(e) else type(e).__name__})")
        return None
    if info.format not in WAV_FORMATS:
        probs.add(wav, where, f"not a WAV file (format {info.format})")
        return None
    if data.shape[1] != 1:
        kind = "stereo" if data.shape[1] == 2 else f"{data.shape[1]}-channel"
        probs.add(wav, where, f"{kind} audio ({data.shape[1]} channels); clips must be mono")
        return None
    if data.shape[0] == 0:
        probs.add(wav, where, "empty audio (0 samples)")
        return None
    if not np.isfinite(data).all():
        probs.add(wav, where, "audio holds NaN or infinite samples")
        return None
    if declared_sr is not None and sr != declared_sr:
        probs.add(wav, where, f"stored at {sr} Hz but fixture.json sample_rate is {declared_sr} "
                              "(fix the field or drop it)")
    mono = data[:, 0]
    if sr != target_sr:
        mono = soxr.resample(mono, sr, target_sr, quality="HQ")
    return np.ascontiguousarray(mono, dtype=np.float32)


def _clip_path(fixture_dir: Path, name: Any, file: Path, where: str, probs: _Problems) -> Path | None:
    if not isinstance(name, str) or not name.strip():
        probs.add(file, where, "missing or empty (the WAV file name is required)")
        return None
    rel = Path(name)
    if rel.is_absolute() or ".." in rel.parts:
        probs.add(file, where, f"{name!r} must be a file inside the fixture folder")
        return None
    return fixture_dir / rel


def _speech(turn: dict[str, Any], audio: np.ndarray, sr: int, wav: Path, file: Path, where: str,
            probs: _Problems) -> tuple[float, float] | None:
    found = speech_span(audio, sr)
    if found is None:
        probs.add(wav, f"{where}.audio", "no speech found (no 50 ms stretch above -40 dBFS)")
        return None
    given = turn.get("speech")
    if given is None:
        return found
    dur = audio.size / sr
    if (not isinstance(given, list) or len(given) != 2 or not all(_is_number(v) for v in given)):
        probs.add(file, f"{where}.speech", f"expected [onset_s, offset_s] (two numbers), got {given!r}")
        return None
    on, off = float(given[0]), float(given[1])
    if not (0.0 <= on < off <= dur + _EDGE_TOL_S):
        probs.add(file, f"{where}.speech", f"[{on:g}, {off:g}] must satisfy 0 <= onset < offset <= "
                                           f"clip length {dur:.3f} s")
        return None
    return on, min(off, dur)


def _parse_start(turn: dict[str, Any], file: Path, where: str, probs: _Problems) -> StartRule | None:
    start = turn.get("start")
    if not isinstance(start, dict):
        probs.add(file, f"{where}.start", "missing (expected {\"after\": ..., \"delay_s\": ...})")
        return None
    _unknown_keys(start, _START_KEYS, file, f"{where}.start", probs)
    after = start.get("after")
    ok = True
    if after not in AFTER_KINDS:
        probs.add(file, f"{where}.start.after", f"unknown value {after!r} (expected one of {', '.join(AFTER_KINDS)})")
        ok = False
    delay = start.get("delay_s", 0.0)
    if not _is_number(delay):
        probs.add(file, f"{where}.start.delay_s", f"expected a number of seconds, got {delay!r}")
        ok = False
    elif delay < 0:
        probs.add(file, f"{where}.start.delay_s", f"negative delay {delay:g} s (must be >= 0)")
        ok = False
    return StartRule(after=after, delay_s=float(delay)) if ok else None


def _parse_turns(doc: dict[str, Any], fdir: Path, file: Path, sr: int, declared_sr: int | None,
                 probs: _Problems) -> list[CallerTurn]:
    raw = doc.get("turns")
    if not isinstance(raw, list) or not raw:
        probs.add(file, "turns", "expected a non-empty list of turns")
        return []
    turns: list[CallerTurn] = []
    expects: list[Expect | None] = []
    starts: list[StartRule | None] = []
    durations: list[float | None] = []
    for i, t in enumerate(raw):
        where = f"turns[{i}]"
        if not isinstance(t, dict):
            probs.add(file, where, f"expected an object, got {type(t).__name__}")
            expects.append(None)
            starts.append(None)
            durations.append(None)
            continue
        _unknown_keys(t, _TURN_KEYS, file, where, probs)
        text = _text(t, "text", file, where, probs)
        expect = _expect(t, file, where, probs)
        rule = _parse_start(t, file, where, probs)
        expects.append(expect)
        starts.append(rule)
        if rule is not None:
            _check_reference(i, rule, expects, starts, durations, file, where, probs)
        wav = _clip_path(fdir, t.get("audio"), file, f"{where}.audio", probs)
        audio = None if wav is None else _read_clip(wav, f"{where}.audio", sr, declared_sr, probs)
        durations.append(None if audio is None else audio.size / sr)
        if audio is None or wav is None:
            continue
        span = _speech(t, audio, sr, wav, file, where, probs)
        if span is None or rule is None:
            continue
        turns.append(CallerTurn(index=i, audio=audio, text=text, start=rule, expect=expect,
                                speech_onset_s=span[0], speech_offset_s=span[1], sample_rate=sr,
                                source=str(t["audio"])))
    return turns


def _check_reference(i: int, rule: StartRule, expects: list[Expect | None], starts: list[StartRule | None],
                     durations: list[float | None], file: Path, where: str, probs: _Problems) -> None:
    """Start rules that name something that cannot happen."""
    if i == 0 and rule.after == "prev_turn_end":
        probs.add(file, f"{where}.start.after", "prev_turn_end needs a previous turn (this is the first)")
    if i > 0 and rule.after == "bot_audio_start" and expects[i - 1] == "no_interrupt":
        probs.add(file, f"{where}.start.after",
                  f"bot_audio_start refers to the bot's reply to turns[{i - 1}], which cannot exist: "
                  f"turns[{i - 1}] is a backchannel (expect no_interrupt) and gets no reply "
                  "(use bot_audio_end: the end of the speech it overlapped)")
    prev = starts[i - 1] if i > 0 else None
    prev_dur = durations[i - 1] if i > 0 else None
    if rule.after == "call_start" and prev is not None and prev.after == "call_start" and prev_dur is not None:
        prev_end = prev.delay_s + prev_dur
        if rule.delay_s < prev_end - 1e-6:
            probs.add(file, f"{where}.start.delay_s",
                      f"{rule.delay_s:g} s is before turns[{i - 1}] ends ({prev_end:.3f} s); "
                      "one caller's clips cannot overlap")


def _parse_recording(doc: dict[str, Any], fdir: Path, file: Path, sr: int, declared_sr: int | None,
                     probs: _Problems) -> list[CallerTurn]:
    wav = _clip_path(fdir, doc.get("recording"), file, "recording", probs)
    audio = None if wav is None else _read_clip(wav, "recording", sr, declared_sr, probs)
    raw = doc.get("segments")
    if not isinstance(raw, list) or not raw:
        probs.add(file, "segments", "expected a non-empty list of {start_s, end_s, text}")
        return []
    dur = None if audio is None else audio.size / sr
    segs: list[tuple[float, float, str, Expect | None]] = []
    prev_end = 0.0
    for i, s in enumerate(raw):
        where = f"segments[{i}]"
        if not isinstance(s, dict):
            probs.add(file, where, f"expected an object, got {type(s).__name__}")
            continue
        _unknown_keys(s, _SEGMENT_KEYS, file, where, probs)
        text = _text(s, "text", file, where, probs)
        expect = _expect(s, file, where, probs)
        a, b = s.get("start_s"), s.get("end_s")
        if not (_is_number(a) and _is_number(b)):
            probs.add(file, where, f"start_s and end_s must be numbers, got {a!r} and {b!r}")
            continue
        a, b = float(a), float(b)
        if not 0.0 <= a < b:
            probs.add(file, f"{where}.end_s", f"needs 0 <= start_s < end_s, got [{a:g}, {b:g}]")
            continue
        if a < prev_end:
            probs.add(file, f"{where}.start_s", f"{a:g} s overlaps the previous segment (ends {prev_end:g} s)")
            continue
        prev_end = b
        if dur is not None:
            if b > dur + _EDGE_TOL_S:
                probs.add(file, f"{where}.end_s", f"{b:g} s is past the end of the recording ({dur:.3f} s)")
                continue
            if audio is not None and speech_span(audio[int(a * sr):int(math.ceil(b * sr))], sr) is None:
                probs.add(wav or file, f"{where}", f"no speech found between {a:g} and {b:g} s")
                continue
        segs.append((a, min(b, dur or b), text, expect))
    if audio is None or len(segs) != len(raw):
        return []
    # Cut half way through each silence between segments: clips back to back = the recording.
    cuts = [0.0] + [(segs[k - 1][1] + segs[k][0]) / 2 for k in range(1, len(segs))]
    bounds = [round(c * sr) for c in cuts] + [audio.size]
    turns = []
    for k, (a, b, text, expect) in enumerate(segs):
        lo, hi = bounds[k], bounds[k + 1]
        t0 = lo / sr
        turns.append(CallerTurn(
            index=k, audio=audio[lo:hi].copy(), text=text, start=StartRule("call_start", t0), expect=expect,
            speech_onset_s=a - t0, speech_offset_s=b - t0, sample_rate=sr, source=str(doc["recording"]),
        ))
    return turns


def _parse(path: Path, sample_rate: int) -> tuple[Fixture | None, list[str]]:
    probs = _Problems()
    file = _json_path(path)
    try:
        raw = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [f"{file}: {FIXTURE_FILE}: file not found"]
    except (OSError, UnicodeDecodeError) as e:
        return None, [f"{file}: {FIXTURE_FILE}: unreadable ({e})"]
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as e:
        return None, [f"{file}: line {e.lineno} column {e.colno}: malformed JSON ({e.msg})"]
    if not isinstance(doc, dict):
        return None, [f"{file}: top level: expected a JSON object, got {type(doc).__name__}"]
    _unknown_keys(doc, _TOP_KEYS, file, "", probs)
    name = _text(doc, "name", file, "", probs)
    description = _text(doc, "description", file, "", probs)
    declared = doc.get("sample_rate")
    if declared is not None and not (isinstance(declared, int) and not isinstance(declared, bool)
                                     and 4000 <= declared <= 192000):
        probs.add(file, "sample_rate", f"expected a rate in Hz between 4000 and 192000, got {declared!r}")
        declared = None
    has_turns, has_rec = "turns" in doc, "recording" in doc
    if has_turns and has_rec:
        probs.add(file, "recording", "give either turns or recording + segments, not both")
        turns: list[CallerTurn] = []
    elif has_rec:
        turns = _parse_recording(doc, file.parent, file, sample_rate, declared, probs)
    elif "segments" in doc:
        probs.add(file, "recording", "segments given without the recording WAV")
        turns = []
    else:
        turns = _parse_turns(doc, file.parent, file, sample_rate, declared, probs)
    if probs.items:
        return None, probs.items
    return Fixture(name=name, description=description, path=file, sample_rate=sample_rate, turns=turns,
                   recording=has_rec), []


def check_fixture(path: Path | str) -> list[str]:
    """Every problem of one fixture (its folder or its fixture.json); empty when it is valid."""
    return _parse(Path(path), 16000)[1]


def load_fixture(path: Path | str, sample_rate: int = 16000) -> Fixture:
    """Load a fixture (its folder or its fixture.json), clips resampled to sample_rate."""
    fixture, problems = _parse(Path(path), sample_rate)
    if fixture is None:
        more = f" (+{len(problems) - 1} more: run `voicelab fixtures check {path}`)" if len(problems) > 1 else ""
        raise FixtureError(problems[0] + more)
    return fixture

