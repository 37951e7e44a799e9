"""Measurement truth (docs/metrics.md): FAR and barge-in stop latency re-derived from the recorded audio alone.

The analyzer trusts nothing the pipeline logged. It reads only a run's `calls/<call_id>.wav` (stereo, left =
caller as played in, right = bot as heard, sample 0 = call start) and `calls/<call_id>.json` (the fixture's
ground truth of each caller utterance on the call clock), and finds the bot's onsets and offsets on the right
channel with the onset rule (docs/metrics.md) (`voicelab.measure.onset`). `compare` then sets these figures beside the
event-derived ones (`voicelab.measure.metrics.turn_table`); `voicelab.measure.metrics.summarize(events, config, truth=rows)`
turns the rows into `truth.far_abs_diff_ms_p95` / `truth.stop_abs_diff_ms_p95`.

Per caller utterance (turn), with the ground truth speech start S and end E of that turn:
- reply onset: the onset of the first bot speech stretch (`onset.segments`, pauses under 0.3 s inside it)
  that starts at or after E and before the next utterance's speech end. If the bot is already audible at E
  (it talked over the end of the caller's speech) that stretch is the old reply, and the search starts after
  it; the row says `overlap: true`. Backchannels (expect "no_interrupt") get no reply and no FAR.
- far_ms = reply onset - E.
- stop_latency_ms (expect "interrupt" only): `onset.last_audible(bot, S)` - S, the bot's last audible sample
  of the sound playing at S; None when the bot was silent at S (nothing to stop), as in the event figures.
- caller_end_wav_ms: a cross-check of the ground truth itself, the last audible sample of the caller's clip
  on the left channel (None without clip bounds). It should sit within a few ms of the ground-truth end.

The format of `calls/<call_id>.json` (`call_truth_dict`; `voicelab.runs.folder` writes it):
    {"call_id": "c0", "fixture": "NAME", "fixture_path": "audio_fixtures/NAME/fixture.json",
     "sample_rate": 16000,
     "utterances": [{"turn": 0, "clip_start_s": 0.5, "clip_end_s": 2.1, "speech_start_s": 0.62,
                     "speech_end_s": 1.95, "expect": null, "text": "hi what time do you open"}]}
`speech_start_s` and `speech_end_s` are required (seconds on the call clock); the reader also accepts the key
"turns" for "utterances", an optional "wav" (the recording's file name in calls/), and ignores other keys.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from voicelab.measure import onset
from voicelab.measure.events import Event, read_events
from voicelab.measure.metrics import percentile, turn_table
from voicelab.pcm import SAMPLE_RATE

GOAL_MS = 20.0  # docs/metrics.md: events and WAV agree within this at p95
EXPECTS = (None, "interrupt", "no_interrupt")


class TruthError(ValueError):
    """A missing or malformed recording or ground-truth file; the message is one line naming the file."""


# ---- ground truth files ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Utterance:
    """Ground truth of one caller utterance, seconds on the call clock: a calls/<call_id>.json row, and what
    the line run's figures (`voicelab.call.reply_spans`) read. The player's own record is in ns
    (`voicelab.measure.calllog.PlayedUtterance`); the scheduler's
    (`voicelab.fixtures.schedule.ScheduledUtterance`) has no text."""

    turn: int
    speech_start_s: float
    speech_end_s: float
    expect: str | None = None
    clip_start_s: float | None = None
    clip_end_s: float | None = None
    text: str = ""


@dataclass(frozen=True)
class CallTruth:
    call_id: str
    utterances: tuple[Utterance, ...]
    fixture: str | None = None
    fixture_path: str | None = None
    sample_rate: int | None = None
    wav: str | None = None  # the recording's file name in calls/, when it is not <call_id>.wav


def call_truth_dict(call_id: str, utterances: Iterable[Any], fixture: str | None = None,
                    fixture_path: str | None = None, sample_rate: int | None = SAMPLE_RATE,
                    texts: Mapping[int, str] | Sequence[str] | None = None) -> dict[str, Any]:
    """The calls/<call_id>.json object.

    `utterances` are `Utterance`s or anything with the same attributes, e.g. the fixture player's
    `voicelab.fixtures.schedule.ScheduledUtterance` (which has no text: give it in `texts`, by turn).
    """
    rows = []
    for u in utterances:
        turn = int(u.turn)
        text = getattr(u, "text", "") or ""
        if texts is not None:
            if isinstance(texts, Mapping):
                text = texts.get(turn, text)
            elif 0 <= turn < len(texts):
                text = texts[turn]
        rows.append({
            "turn": turn,
            "clip_start_s": getattr(u, "clip_start_s", None),
            "clip_end_s": getattr(u, "clip_end_s", None),
            "speech_start_s": float(u.speech_start_s),
            "speech_end_s": float(u.speech_end_s),
            "expect": getattr(u, "expect", None),
            "text": text,
        })
    return {"call_id": call_id, "fixture": fixture, "fixture_path": fixture_path, "sample_rate": sample_rate,
            "utterances": rows}


def _num(p: Path, where: str, v: Any, required: bool) -> float | None:
    if v is None and not required:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise TruthError(f"{p}: field '{where}' must be a number of seconds, got {v!r}")
    return float(v)


def read_call_truth(path: str | Path) -> CallTruth:
    """Read calls/<call_id>.json; a bad file raises TruthError naming the file and the field."""
    p = Path(path)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TruthError(f"{p}: cannot read ground truth: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TruthError(f"{p}: ground truth is not valid JSON ({exc})") from None
    if not isinstance(d, dict):
        raise TruthError(f"{p}: ground truth is not a JSON object")
    items = d.get("utterances", d.get("turns"))
    if not isinstance(items, list):
        raise TruthError(f"{p}: field 'utterances' missing or not a list")
    out = []
    for i, u in enumerate(items):
        where = f"utterances[{i}]"
        if not isinstance(u, dict):
            raise TruthError(f"{p}: field '{where}' is not an object")
        turn = u.get("turn", i)
        if isinstance(turn, bool) or not isinstance(turn, int):
            raise TruthError(f"{p}: field '{where}.turn' must be a whole number")
        expect = u.get("expect")
        if expect not in EXPECTS:
            raise TruthError(f"{p}: field '{where}.expect' must be null, 'interrupt' or 'no_interrupt'")
        start = _num(p, f"{where}.speech_start_s", u.get("speech_start_s", u.get("speech_start")), True)
        end = _num(p, f"{where}.speech_end_s", u.get("speech_end_s", u.get("speech_end")), True)
        assert start is not None and end is not None
        if end < start:
            raise TruthError(f"{p}: field '{where}.speech_end_s' is before speech_start_s")
        out.append(Utterance(
            turn=turn, speech_start_s=start, speech_end_s=end, expect=expect,
            clip_start_s=_num(p, f"{where}.clip_start_s", u.get("clip_start_s"), False),
            clip_end_s=_num(p, f"{where}.clip_end_s", u.get("clip_end_s"), False),
            text=str(u.get("text") or ""),
        ))
    out.sort(key=lambda u: u.turn)
    call_id = d.get("call_id", p.stem)
    if not isinstance(call_id, str) or not call_id:
        raise TruthError(f"{p}: field 'call_id' must be a non-empty string")
    sr = d.get("sample_rate")
    wav = d.get("wav")
    return CallTruth(call_id=call_id, utterances=tuple(out), fixture=d.get("fixture"),
                     fixture_path=d.get("fixture_path"), sample_rate=sr if isinstance(sr, int) else None,
                     wav=wav if isinstance(wav, str) and wav else None)


def read_call_wav(path: str | Path) -> tuple[np.ndarray, np.ndarray, int]:
    """(caller, bot, sample_rate) from a recorded stereo call WAV, as int16 arrays."""
    p = Path(path)
    try:
        data, sr = sf.read(str(p), dtype="int16", always_2d=True)
    except (OSError, RuntimeError, sf.LibsndfileError) as exc:
        raise TruthError(f"{p}: cannot read the call recording: {exc}") from None
    if data.shape[1] != 2:
        raise TruthError(f"{p}: the call recording must be stereo (left caller, right bot), "
                         f"it has {data.shape[1]} channel(s)")
    return data[:, 0].copy(), data[:, 1].copy(), int(sr)


# ---- the analyzer ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TruthRow:
    """The figures of one caller utterance as the recording shows them (ms on the call clock)."""

    call_id: str
    turn: int
    expect: str | None
    speech_start_ms: float
    speech_end_ms: float
    bot_onset_ms: float | None  # acoustic onset of the reply
    far_ms: float | None
    bot_stop_ms: float | None  # last audible bot sample after a barge-in
    stop_latency_ms: float | None
    caller_end_wav_ms: float | None  # left channel: last audible sample of the caller's clip
    overlap: bool = False  # the bot was already audible at the end of the caller's speech

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def analyze_call(wav_path: str | Path, truth: CallTruth, min_gap_s: float = onset.DEFAULT_MIN_GAP_S,
                 rule: onset.OnsetRule = onset.RULE) -> list[TruthRow]:
    """One `TruthRow` per caller utterance of a call, from its WAV and ground truth only."""
    caller, bot, sr = read_call_wav(wav_path)
    segs = onset.segments(bot, sr, min_gap_s, rule)
    utts = list(truth.utterances)
    rows = []
    for i, u in enumerate(utts):
        next_end = utts[i + 1].speech_end_s if i + 1 < len(utts) else math.inf
        reply_on: float | None = None
        overlap = False
        if u.expect != "no_interrupt":
            search_from = u.speech_end_s
            for on, off in segs:
                if on < u.speech_end_s <= off:  # still the old sound: the reply starts after it
                    overlap = True
                    search_from = off + 1e-9
            reply_on = next((on for on, _ in segs if search_from <= on < next_end), None)
        stop_at: float | None = None
        if u.expect == "interrupt":
            stop_at = onset.last_audible(bot, sr, u.speech_start_s, min_gap_s, rule)
            if stop_at is not None and reply_on is not None and stop_at > reply_on:
                stop_at = None  # not a sound being stopped: the reply itself
        caller_end = None
        if u.clip_start_s is not None and u.clip_end_s is not None:
            a = max(0, int(round(u.clip_start_s * sr)))
            b = min(caller.size, int(round((u.clip_end_s + 0.05) * sr)))
            span = onset.speech_span(caller[a:b], sr, min_gap_s, rule) if b > a else None
            caller_end = None if span is None else a / sr + span[1]
        rows.append(TruthRow(
            call_id=truth.call_id, turn=u.turn, expect=u.expect,
            speech_start_ms=round(u.speech_start_s * 1000, 1), speech_end_ms=round(u.speech_end_s * 1000, 1),
            bot_onset_ms=_r(None if reply_on is None else reply_on * 1000),
            far_ms=_r(None if reply_on is None else (reply_on - u.speech_end_s) * 1000),
            bot_stop_ms=_r(None if stop_at is None else stop_at * 1000),
            stop_latency_ms=_r(None if stop_at is None else (stop_at - u.speech_start_s) * 1000),
            caller_end_wav_ms=_r(None if caller_end is None else caller_end * 1000),
            overlap=overlap,
        ))
    return rows


def analyze_run(run_dir: str | Path) -> list[dict[str, Any]]:
    """Truth rows (dicts, `TruthRow` fields) for every call of a run folder: calls/*.json + calls/*.wav.

    Reads nothing else of the run. An empty list when the run recorded no calls.
    """
    calls = Path(run_dir) / "calls"
    rows: list[dict[str, Any]] = []
    if not calls.is_dir():
        return rows
    for jp in sorted(calls.glob("*.json")):
        truth = read_call_truth(jp)
        wav = calls / (truth.wav or f"{jp.stem}.wav")
        if not wav.is_file():
            raise TruthError(f"{wav}: recording missing for ground truth {jp.name}")
        rows += [r.to_dict() for r in analyze_call(wav, truth)]
    return rows


# ---- events vs recording ---------------------------------------------------------------------------------

@dataclass
class TruthCheck:
    """Event-log figures beside the recording's, per turn, and the p95 of their absolute differences."""

    rows: list[dict[str, Any]] = field(default_factory=list)  # call_id, turn, <figure>_events/_wav/_diff
    far_abs_diff_ms_p95: float | None = None
    stop_abs_diff_ms_p95: float | None = None
    unmatched: list[str] = field(default_factory=list)  # "call/turn figure: events X, WAV Y" (one side None)
    goal_ms: float = GOAL_MS

    @property
    def ok(self) -> bool | None:
        """True when both p95s are within the goal and no turn has a figure on one side only; None: no data."""
        figures = [x for x in (self.far_abs_diff_ms_p95, self.stop_abs_diff_ms_p95) if x is not None]
        if not figures and not self.unmatched:
            return None
        return not self.unmatched and all(x <= self.goal_ms for x in figures)

    def line(self) -> str:
        return verdict_line(self.far_abs_diff_ms_p95, self.stop_abs_diff_ms_p95, self.goal_ms, self.unmatched)


FIGURES = ("far_ms", "stop_latency_ms")


def compare(events: Iterable[Event] | str | Path, truth_rows: Iterable[Mapping[str, Any]],
            goal_ms: float = GOAL_MS) -> TruthCheck:
    """Join event figures (turn_table; `events` may be a run folder or an events.jsonl) with truth rows."""
    if isinstance(events, str | Path):
        p = Path(events)
        events = read_events(p / "events.jsonl" if p.is_dir() else p)
    ours = {(r["call_id"], r["turn"]): r for r in turn_table(events)}
    check = TruthCheck(goal_ms=goal_ms)
    diffs: dict[str, list[float]] = {f: [] for f in FIGURES}
    for t in truth_rows:
        key = (t["call_id"], t["turn"])
        mine = ours.get(key, {})
        row: dict[str, Any] = {"call_id": key[0], "turn": key[1], "expect": t.get("expect")}
        for f in FIGURES:
            ev, wv = mine.get(f), t.get(f)
            row[f"{f}_events"], row[f"{f}_wav"] = ev, wv
            row[f"{f}_diff"] = None
            if ev is not None and wv is not None:
                row[f"{f}_diff"] = round(ev - wv, 1)
                diffs[f].append(abs(ev - wv))
            elif (ev is None) != (wv is None):
                check.unmatched.append(f"{key[0]}/{key[1]} {f}: events {ev}, WAV {wv}")
        check.rows.append(row)
    p95 = {f: percentile(v, 95) for f, v in diffs.items()}
    check.far_abs_diff_ms_p95 = _r(p95["far_ms"])
    check.stop_abs_diff_ms_p95 = _r(p95["stop_latency_ms"])
    return check


def verdict_line(far_p95: float | None, stop_p95: float | None, goal_ms: float = GOAL_MS,
                 unmatched: Sequence[str] = ()) -> str:
    """One plain sentence on whether the event figures agree with the recording (for the run table)."""
    if far_p95 is None and stop_p95 is None and not unmatched:
        return "measurement truth: not checked (no recorded turns to compare)"
    parts = []
    for name, v in (("FAR", far_p95), ("stop latency", stop_p95)):
        parts.append(f"{name} {v:.1f} ms" if v is not None else f"{name} n/a")
    what = "events vs recording |diff| p95: " + ", ".join(parts)
    bad = [name for name, v in (("FAR", far_p95), ("stop latency", stop_p95)) if v is not None and v > goal_ms]
    if bad or unmatched:
        why = []
        if bad:
            why.append(f"{' and '.join(bad)} over the {goal_ms:g} ms goal")
        if unmatched:
            why.append(f"{len(unmatched)} figure(s) found on one side only (first: {unmatched[0]})")
        return f"measurement truth NOT MET: {what}; " + "; ".join(why)
    return f"measurement truth OK: {what} (goal <= {goal_ms:g} ms)"


def summary_verdict(summary: Mapping[str, Any], goal_ms: float = GOAL_MS) -> str:
    """`verdict_line` from a summary.json's truth figures."""
    t = summary.get("truth") or {}
    return verdict_line(t.get("far_abs_diff_ms_p95"), t.get("stop_abs_diff_ms_p95"), goal_ms)
