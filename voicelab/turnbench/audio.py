"""Audio of the bench's cases: generated cases synthesised with espeak-ng and put on their line, and the caller
turns of recorded fixtures, each with its labelled points. numpy, soxr and espeak-ng; no pipecat, no torch.

True speech ends and onsets come from the clean audio (before any line effect), with the onset rule of
docs/metrics.md (`voicelab.measure.onset`): the moment a listener could last hear the caller.

A fixture turn's clip gives one end (its speech offset, as the fixture loader finds it) and a pause at every
silence of at least `MIN_PAUSE_S` (0.2 s, the corpus's shortest pause) between its stretches of speech
(`pause_gate_dbfs`: the gate raised above a noisy recording's background). A turn
the fixture marks `no_interrupt` (a backchannel or a noise over the bot) is a barge-in case instead.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
import soxr

from voicelab.fixtures import effects
from voicelab.fixtures.format import load_fixture
from voicelab.fixtures.spec import PEAK, Noise, Room  # PEAK: caller speech peak, as the bundled fixtures
from voicelab.measure.onset import OnsetRule, segments
from voicelab.pcm import SAMPLE_RATE as SR  # the name the bench's modules import
from voicelab.turnbench.cases import BargeCase, TurnCase
from voicelab.turnbench.replay import Point

ESPEAK_SR = 22050
LEAD_S = 0.5  # silence before the speech
TAIL_S = 4.5  # after the end of a turn: room for the slowest setting of every strategy (3 s + the VAD's lag)
BARGE_TAIL_S = 1.5
TEL_SR = 8000
MIN_PAUSE_S = 0.2


def read_mono(path: Path, error: type[Exception]) -> np.ndarray:
    """A recording as float32 mono at `SR`; `error`, naming the file, when it is unreadable or at another rate."""
    try:
        x, sr = sf.read(str(path), dtype="float32", always_2d=True)
    except (OSError, RuntimeError) as e:
        raise error(f"{path}: unreadable audio ({e})") from None
    if sr != SR:
        raise error(f"{path}: {sr} Hz, expected {SR}")
    return x.mean(axis=1)


class AudioError(Exception):
    """A case cannot be synthesised here (espeak-ng missing or failing)."""


@dataclass
class CaseAudio:
    """A case's audio (16 kHz float32, on its line) with its labelled points."""

    id: str
    group: str  # generated, bundled, real, user
    audio: np.ndarray
    points: list[Point]
    meta: dict[str, Any] = field(default_factory=dict)
    key: str = ""  # content hash: the cache key of its scores

    @property
    def duration_s(self) -> float:
        return self.audio.size / SR


def speak(text: str, voice: str, wpm: int, pitch: int) -> np.ndarray:
    """espeak-ng's reading at 16 kHz, leading and trailing silence trimmed (every option pinned)."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise AudioError("espeak-ng not found: run scripts/setup.sh (apt-get install espeak-ng)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "say.wav"
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": tmp, "LC_ALL": "C.UTF-8",
               "PULSE_SERVER": "unix:/nonexistent"}
        cmd = [exe, "-v", voice, "-s", str(wpm), "-p", str(pitch), "-a", "100", "-g", "0", "-k", "0", "-b", "1",
               "-w", str(out), text]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, stdin=subprocess.DEVNULL)
        if res.returncode != 0 or not out.exists():
            raise AudioError(f"espeak-ng failed on {text!r} ({voice}): {res.stderr.strip()}")
        x, sr = sf.read(str(out), dtype="float64")
    x = soxr.resample(np.asarray(x), sr, SR, quality="HQ")
    loud = np.flatnonzero(np.abs(x) > 1e-3)
    if loud.size == 0:
        raise AudioError(f"espeak-ng produced silence for {text!r} ({voice})")
    return x[loud[0]:loud[-1] + 1]


def _seed(*parts: object) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def on_line(x: np.ndarray, line: str, salt: str) -> np.ndarray:
    """x (16 kHz) heard through `line`: clean, phone (8 kHz band, mu-law, line noise), noisy or reverb.

    The designs are the bundled suite's: the noisy line's hiss -50 dBFS and hum -51 dBFS, the phone line's
    -54 / -58 dBFS (both kept under the -40 dBFS onset gate), a small room (RT60 0.4 s) or a hall (0.9 s)."""
    if line == "clean":
        return x
    if line == "noisy":
        return x + effects.line_noise(x.size, SR, Noise(hiss_dbfs=-50.0, hum_dbfs=-51.0), _seed(salt, "noise"))
    if line == "reverb":
        hall = _seed(salt, "room") % 2 == 1
        room = Room(rt60_s=0.9, wet=0.7, predelay_s=0.025) if hall else Room(rt60_s=0.4, wet=0.35)
        return effects.reverb(x, SR, room, _seed(salt, "room"))[:x.size]
    if line == "phone":
        noisy = x + effects.line_noise(x.size, SR, Noise(hiss_dbfs=-54.0, hum_dbfs=-58.0), _seed(salt, "noise"))
        return soxr.resample(effects.telephone(noisy, SR), TEL_SR, SR, quality="HQ")[:x.size]  # the pipeline's 16 kHz
    raise AudioError(f"unknown line {line!r}")


def _span(x: np.ndarray) -> tuple[float, float]:
    segs = segments(x, SR, min_gap_s=MIN_PAUSE_S)
    if not segs:
        raise AudioError("no speech by the onset rule")
    return segs[0][0], segs[-1][1]


def pause_gate_dbfs(clip: np.ndarray) -> float:
    """The onset rule's gate for finding pauses in a clip: -40 dBFS, raised to 20 dB under the clip's speech
    level (the 90th percentile of its 10 ms RMS) where that is higher, so that a recording's background (the
    JFK recording's crowd, about -40 dBFS) does not fill its pauses."""
    x = np.asarray(clip, dtype=np.float64)
    n = 160
    w = x[:x.size // n * n].reshape(-1, n)
    if w.size == 0:
        return -40.0
    rms = np.sqrt(((w - w.mean(axis=1, keepdims=True)) ** 2).mean(axis=1)) + 1e-9
    return max(-40.0, 20.0 * float(np.log10(np.percentile(rms, 90))) - 20.0)


RENDER_VERSION = 1  # bump when the rendering changes: cached scores of generated cases are keyed by their spec


def spec_key(case: TurnCase | BargeCase) -> str:
    """A generated case's cache key: its spec and the renderer's version (rendering is deterministic)."""
    return f"{case.id}-" + hashlib.sha1(repr((RENDER_VERSION, case)).encode()).hexdigest()[:12]


def render_turn(case: TurnCase) -> CaseAudio:
    """A generated turn: prefix, pause, rest; one pause point and one end point."""
    tail = "." if case.kind == "complete" else ("," if case.comma else "")
    a = speak(case.prefix + tail, case.voice, case.wpm, case.pitch)
    b = speak(case.rest, case.voice, case.wpm, case.pitch)
    gain = PEAK / max(np.max(np.abs(a)), np.max(np.abs(b)))
    a, b = a * gain, b * gain
    lead, gap = round(LEAD_S * SR), round(case.pause_s * SR)
    clean = np.concatenate([np.zeros(lead), a, np.zeros(gap), b, np.zeros(round(TAIL_S * SR))])
    a_on, a_off = _span(a)
    b_on, b_off = _span(b)
    t_b = (lead + a.size + gap) / SR
    points = [Point("pause", lead / SR + a_off, t_b + b_on), Point("end", t_b + b_off)]
    audio = on_line(clean, case.line, case.id).astype(np.float32)
    return CaseAudio(case.id, "generated", audio, points,
                     {"kind": case.kind, "line": case.line, "voice": case.voice, "pause_s": case.pause_s,
                      "text": case.text, "prefix": case.prefix},
                     spec_key(case))


def render_barge(case: BargeCase) -> CaseAudio:
    """A generated barge-in sound: one utterance over the bot (its point: the true end; onset in meta)."""
    x = speak(case.text, case.voice, case.wpm, case.pitch)
    x = x * (PEAK / np.max(np.abs(x)))
    lead = round(0.3 * SR)
    clean = np.concatenate([np.zeros(lead), x, np.zeros(round(BARGE_TAIL_S * SR))])
    on, off = _span(x)
    audio = on_line(clean, case.line, case.id).astype(np.float32)
    return CaseAudio(case.id, "generated", audio, [Point("end", lead / SR + off)],
                     {"kind": case.kind, "text": case.text, "line": case.line, "voice": case.voice,
                      "onset_s": lead / SR + on, "reading": case.reading},
                     spec_key(case))


def fixture_cases(paths: list[Path], group_of: dict[str, str] | None = None,
                  default_group: str = "bundled") -> tuple[list[CaseAudio], list[CaseAudio]]:
    """(turn cases, barge-in cases) from fixtures: every caller turn whose speech may end a turn, with its
    pauses, and every `no_interrupt` turn as a backchannel (or noise) over the bot and every `interrupt` turn as
    an interruption (a barge-in case as well as a turn)."""
    turns: list[CaseAudio] = []
    barge: list[CaseAudio] = []
    for path in paths:
        fx = load_fixture(path, sample_rate=SR)
        group = (group_of or {}).get(fx.name, default_group)
        for t in fx.turns:
            clip = np.asarray(t.audio, dtype=np.float32)
            digest = hashlib.sha1(clip.tobytes()).hexdigest()[:16]
            cid = f"{fx.name}/t{t.index}"
            if t.expect == "no_interrupt":
                audio = np.concatenate([clip, np.zeros(round(BARGE_TAIL_S * SR), np.float32)])
                sound = t.text.startswith("[")
                barge.append(CaseAudio(cid, group, audio, [Point("end", t.speech_offset_s)],
                                       {"kind": "noise" if sound else "backchannel", "text": t.text,
                                        "onset_s": t.speech_onset_s, "reading": None}, f"fxb-{digest}"))
                continue
            if t.expect == "interrupt":  # also a barge-in case: an interruption, which must stop the bot
                barge.append(CaseAudio(cid, group, np.concatenate([clip, np.zeros(round(BARGE_TAIL_S * SR),
                                                                                   np.float32)]),
                                       [Point("end", t.speech_offset_s)],
                                       {"kind": "interruption", "text": t.text, "onset_s": t.speech_onset_s,
                                        "reading": None}, f"fxb-{digest}"))
            audio = np.concatenate([clip, np.zeros(round(TAIL_S * SR), np.float32)])
            rule = OnsetRule(gate_dbfs=pause_gate_dbfs(clip))
            segs = [(a, b) for a, b in segments(clip, SR, min_gap_s=MIN_PAUSE_S, rule=rule)
                    if b > t.speech_onset_s - 1e-3 and a < t.speech_offset_s + 1e-3]
            points = [Point("pause", b, a2) for (_, b), (a2, _) in zip(segs, segs[1:], strict=False)
                      if b < t.speech_offset_s - 1e-3]
            points.append(Point("end", t.speech_offset_s))
            turns.append(CaseAudio(cid, group, audio, points, {"text": t.text, "fixture": fx.name,
                                                               "expect": t.expect}, f"fx-{digest}"))
    return turns, barge
