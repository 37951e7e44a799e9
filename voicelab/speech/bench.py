"""The recognisers side by side on the suite's caller turns: word error rate and time per pass (`voicelab bench stt`).

Every caller turn of the chosen fixtures (all of `audio_fixtures/` by default) is recognised whole, once per
system, on the CPU; the WER is against the fixture's `text` through `voicelab.speech.wer` (digits and spelled
numbers compare equal). Turns are split by who speaks them: `real` for the human recordings (the fixtures of
`audio_fixtures/real.txt`), `synthetic` for the espeak-ng callers. Systems, each with the settings the pipeline
uses:
- `whisper`: Whisper tiny.en (voicelab.speech.whisper, greedy, fitted window);
- `whisper+lm`: the same re-ranking its 5 best readings by the callers' language model at the pipeline's
  default weight (`--stt-lm`, voicelab.speech.caller_lm);
- `moonshine`: Moonshine base (voicelab.speech.moonshine);
- `pocketsphinx`: the wheel's English model, fed 20 ms frames as the transport delivers them; `ms` is the
  `end_utt` pass left after streaming (what the pipeline waits for at the end of speech).

The whole clip is passed, not the VAD's segment with a pre-roll as in a run, so the figures rank recognisers;
a run's `stt_wer` is the figure for a configuration. Times depend on the machine's load: run it alone.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from pocketsphinx import Decoder

from voicelab.fixtures.format import FIXTURES_ROOT, discover, list_names, load_fixture
from voicelab.speech.caller_lm import DEFAULT_LM_WEIGHT
from voicelab.speech.recognizers import make_recognizer
from voicelab.speech.text import recognizer_text
from voicelab.speech.wer import word_errors
from voicelab.speech.whisper import SAMPLE_RATE

SYSTEMS = ("whisper", "whisper+lm", "moonshine", "pocketsphinx")
SUITES = ("synthetic", "real", "all")

Pass = Callable[[np.ndarray], tuple[str, float]]  # audio -> (normalised text, ms the caller waits for)


class BenchError(ValueError):
    """A bad benchmark setting; the message names it."""


@dataclass(frozen=True)
class Utterance:
    suite: str  # "synthetic" or "real"
    fixture: str
    turn: int
    text: str
    audio: np.ndarray


@dataclass(frozen=True)
class SttRow:
    system: str
    suite: str
    fixture: str
    turn: int
    audio_s: float
    reference: str
    hypothesis: str
    wer: float
    errors: int
    reference_words: int
    ms: float


@dataclass(frozen=True)
class SttSummary:
    system: str
    suite: str
    n: int
    wer_mean: float
    wer_corpus: float  # all errors over all reference words: long utterances weigh more
    ms_p50: float
    ms_p95: float


def suite_utterances(names: Sequence[str] | None = None, root: Path = FIXTURES_ROOT) -> list[Utterance]:
    """The caller turns of the named fixtures (None: every fixture under `root`), 16 kHz."""
    real = set(list_names("real", root)) if (root / "real.txt").is_file() else set()
    paths = discover([root / n for n in names]) if names else discover([root])
    out: list[Utterance] = []
    for path in paths:
        fx = load_fixture(path, sample_rate=SAMPLE_RATE)
        suite = "real" if fx.name in real else "synthetic"
        out.extend(Utterance(suite, fx.name, t.index, t.text, t.audio) for t in fx.turns)
    return out


def pocketsphinx_pass() -> Pass:
    dec = Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")
    step = 2 * SAMPLE_RATE // 50  # 20 ms of 16-bit samples, as the transport delivers them

    def run(audio: np.ndarray) -> tuple[str, float]:
        pcm = (np.clip(audio, -1, 1) * 32767).astype(np.int16).tobytes()
        dec.start_utt()
        for i in range(0, len(pcm), step):
            dec.process_raw(pcm[i:i + step], False, False)
        t0 = time.perf_counter()
        dec.end_utt()
        ms = (time.perf_counter() - t0) * 1000
        hyp = dec.hyp()
        return recognizer_text(hyp.hypstr if hyp is not None else ""), ms

    return run


def system_pass(system: str, threads: int = 2) -> Pass:
    """One loaded recogniser as a function of one utterance."""
    if system == "pocketsphinx":
        return pocketsphinx_pass()
    if system not in SYSTEMS:
        raise BenchError(f"systems: '{system}' is not one of {', '.join(SYSTEMS)}")
    rec = (make_recognizer("whisper", threads, lm_weight=DEFAULT_LM_WEIGHT) if system == "whisper+lm"
           else make_recognizer(system, threads))

    def run(audio: np.ndarray) -> tuple[str, float]:
        t = rec.transcribe(audio)
        return t.text, t.ms

    return run


def parse_systems(spec: str) -> list[str]:
    """`whisper,moonshine` -> the names, each checked."""
    names = [s.strip() for s in spec.split(",") if s.strip()]
    bad = [s for s in names if s not in SYSTEMS]
    if not names or bad:
        raise BenchError(f"systems: '{spec}' must name some of {', '.join(SYSTEMS)} (comma-separated)")
    return names


def run_bench(systems: Sequence[str], utterances: Sequence[Utterance], threads: int = 2,
              progress: Callable[[str], None] | None = None) -> list[SttRow]:
    """Every utterance through every system, one system at a time (a warm-up pass first)."""
    if not utterances:
        raise BenchError("fixtures: no caller turns to recognise")
    rows: list[SttRow] = []
    for system in systems:
        run = system_pass(system, threads)
        run(utterances[0].audio)  # first-call allocations are not a per-utterance cost
        for u in utterances:
            hyp, ms = run(u.audio)
            e = word_errors(u.text, hyp)
            rows.append(SttRow(system, u.suite, u.fixture, u.turn, round(u.audio.size / SAMPLE_RATE, 3), u.text,
                               hyp, round(e.rate, 4), e.errors, e.reference_words, round(ms, 2)))
        if progress is not None:
            progress(system)
    return rows


def summarise(rows: Sequence[SttRow]) -> list[SttSummary]:
    out: list[SttSummary] = []
    for system in dict.fromkeys(r.system for r in rows):
        for suite in SUITES:
            sel = [r for r in rows if r.system == system and suite in ("all", r.suite)]
            if not sel:
                continue
            ms = [r.ms for r in sel]
            out.append(SttSummary(system, suite, len(sel), round(float(np.mean([r.wer for r in sel])), 4),
                                  round(sum(r.errors for r in sel) / max(1, sum(r.reference_words for r in sel)), 4),
                                  round(float(np.percentile(ms, 50)), 1), round(float(np.percentile(ms, 95)), 1)))
    return out


def bench_document(rows: Sequence[SttRow], threads: int, command: str) -> dict[str, object]:
    """What `--out` writes: the command, the machine, the summary and every row."""
    return {"command": command,
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "threads": threads,
                        "loadavg_after": [round(x, 2) for x in os.getloadavg()]},
            "summary": [asdict(s) for s in summarise(rows)],
            "rows": [asdict(r) for r in rows]}
