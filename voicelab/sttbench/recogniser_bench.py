"""The recognisers side by side on recorded speech: word error rate and time per pass (`voicelab bench stt`).

Every utterance is recognised whole, once per system, on the CPU; the WER is against its reference text through
`voicelab.speech.wer` (digits and spelled numbers compare equal). Utterances come in groups (the `suite` of a
row), by default every group there is:
- `synthetic`: the caller turns of the espeak-ng fixtures under `audio_fixtures/`;
- `real`: the caller turns of the human recordings among them (the fixtures of `audio_fixtures/real.txt`);
- `human`, `human-digits`: the human set's read speech and digit strings (`HUMAN_GROUPS`), folders of recordings
  with a `transcripts.tsv` (voicelab.speech.transcribed_folder), benched when they exist.
Named fixtures replace the groups; so do folders of the same format (`--data DIR`, suite: the folder's name).

Systems, each with the settings the pipeline uses:
- `whisper`: Whisper tiny.en (voicelab.speech.whisper, greedy, fitted window);
- `whisper-base`: Whisper base, multilingual, told the language is English (voicelab.speech.whisper_base), the
  same passes;
- `whisper+lm`, `whisper-base+lm`: the same re-ranking their 5 best readings by the callers' language model at
  the pipeline's default weight (`--stt-lm`, voicelab.speech.caller_lm);
- `moonshine`: Moonshine base (voicelab.speech.moonshine);
- `pocketsphinx`: the wheel's English model, fed 20 ms frames as the transport delivers them; `ms` is the
  `end_utt` pass left after streaming (what the pipeline waits for at the end of speech).
The rows of the system the pipeline runs by default (`PipelineConfig().stt` and `.stt_lm`) are marked
`default`, so a changed default shows in the bench without editing it. `wer_corpus_ci` is a 95 % bootstrap
interval of the corpus WER over the utterances (voicelab.measure.intervals).

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

from voicelab.fixtures.format import FIXTURES_ROOT, discover, list_names, load_fixture, select
from voicelab.fixtures.human_set import HUMAN_ROOT
from voicelab.measure.intervals import RESAMPLES, ratio_interval
from voicelab.pcm import SAMPLE_RATE
from voicelab.pipeline.config import PipelineConfig
from voicelab.speech.caller_lm import DEFAULT_LM_WEIGHT
from voicelab.speech.recognizers import make_recognizer
from voicelab.speech.text import recognizer_text
from voicelab.speech.transcribed_folder import TranscribedFolderError, load_audio, pair_recordings
from voicelab.speech.wer import word_errors

SYSTEMS = ("whisper", "whisper+lm", "whisper-base", "whisper-base+lm", "moonshine", "pocketsphinx")
LM_KINDS = ("whisper", "whisper-base")  # the recognisers the callers' language model re-ranks
BUNDLED_GROUPS = ("synthetic", "real")
# the human set's folders in the `--data` format, by group name
HUMAN_GROUPS = {"human": HUMAN_ROOT / "speech", "human-digits": HUMAN_ROOT / "digits"}
GROUPS = (*BUNDLED_GROUPS, *HUMAN_GROUPS)
ALL = "all"  # the summary's suite over every row

Pass = Callable[[np.ndarray], tuple[str, float]]  # audio -> (normalised text, ms the caller waits for)


class SttBenchError(ValueError):
    """A bad benchmark setting; the message names it."""


@dataclass(frozen=True)
class TranscribedClip:
    """One caller utterance the bench transcribes: its audio and the words it says."""

    suite: str  # a group (synthetic, real, human, ...) or a --data folder's suite name
    fixture: str  # the fixture's name, or the recording's file stem
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
    default: bool = False  # the pipeline's default recogniser (`default_system`)
    wer_corpus_ci: tuple[float, float] | None = None  # 95 % bootstrap interval (None: under two utterances)


def default_system(cfg: PipelineConfig | None = None) -> str | None:
    """The system the pipeline runs by default: its `stt`, with `+lm` when `stt_lm` re-ranks it (None: not one
    this bench runs, such as `transcript`)."""
    cfg = cfg or PipelineConfig()
    name = f"{cfg.stt}+lm" if cfg.stt_lm > 0 and cfg.stt in LM_KINDS else cfg.stt
    return name if name in SYSTEMS else None


def lm_weight(cfg: PipelineConfig | None = None) -> float:
    """The weight of the `+lm` systems: the pipeline's default (the callers' model's own when that is off)."""
    cfg = cfg or PipelineConfig()
    return cfg.stt_lm if cfg.stt_lm > 0 else DEFAULT_LM_WEIGHT


def suite_utterances(names: Sequence[str] | None = None, root: Path = FIXTURES_ROOT) -> list[TranscribedClip]:
    """The caller turns of the named fixtures (None: every fixture under `root` outside the human set, whose
    callers are benched as recordings), 16 kHz."""
    real = set(list_names("real", root)) if (root / "real.txt").is_file() else set()
    if names:
        paths = discover([root / n for n in names])
    else:
        paths = select(["all"], root)
    out: list[TranscribedClip] = []
    for path in paths:
        fx = load_fixture(path, sample_rate=SAMPLE_RATE)
        suite = "real" if fx.name in real else "synthetic"
        out.extend(TranscribedClip(suite, fx.name, t.index, t.text, t.audio) for t in fx.turns)
    return out


def folder_utterances(folder: Path, suite: str) -> list[TranscribedClip]:
    """A folder of recordings with `transcripts.tsv` (voicelab.speech.transcribed_folder), 16 kHz mono."""
    return [TranscribedClip(suite, r.stem, 0, r.text, load_audio(r.path, SAMPLE_RATE)) for r in pair_recordings(folder)]


def parse_groups(specs: Sequence[str]) -> list[str]:
    """`--group` values (each may be a comma list) -> the groups, checked; a human group needs its folder."""
    names = list(dict.fromkeys(g.strip() for spec in specs for g in spec.split(",") if g.strip()))
    bad = [g for g in names if g not in GROUPS]
    if not names or bad:
        raise SttBenchError(f"--group: '{','.join(specs)}' must name some of {', '.join(GROUPS)}")
    missing = [g for g in names if g in HUMAN_GROUPS and not HUMAN_GROUPS[g].is_dir()]
    if missing:
        raise SttBenchError(f"--group {missing[0]}: {HUMAN_GROUPS[missing[0]]} not found")
    return names


def available_groups() -> list[str]:
    """The groups benched by default: the bundled fixtures and each human folder that exists."""
    return [*BUNDLED_GROUPS, *(g for g, folder in HUMAN_GROUPS.items() if folder.is_dir())]


def bench_utterances(fixtures: Sequence[str] = (), data: Sequence[Path] = (), suite: str | None = None,
                     groups: Sequence[str] = ()) -> list[TranscribedClip]:
    """What `bench stt` recognises: named fixtures, `--data` folders (suite: `suite` or the folder's name) and the
    chosen groups; with none of them, every available group."""
    if suite is not None and (len(data) != 1 or not suite.strip() or suite == ALL):
        raise SttBenchError(f"--suite: '{suite}' names the rows of one --data folder (any name but '{ALL}')")
    if fixtures and groups:
        raise SttBenchError("--group: picks among the default groups; name fixtures or groups, not both")
    chosen = parse_groups(groups) if groups else ([] if fixtures or data else available_groups())
    out: list[TranscribedClip] = []
    if fixtures:
        out += suite_utterances(fixtures)
    bundled = [g for g in chosen if g in BUNDLED_GROUPS]
    if bundled:
        out += [u for u in suite_utterances() if u.suite in bundled]
    try:
        for g in chosen:
            if g in HUMAN_GROUPS:
                out += folder_utterances(HUMAN_GROUPS[g], g)
        for folder in data:
            name = suite or folder.resolve().name
            if name == ALL:
                raise SttBenchError(f"--data {folder}: a suite cannot be named '{ALL}' (give --suite NAME)")
            out += folder_utterances(folder, name)
    except TranscribedFolderError as e:
        raise SttBenchError(str(e)) from None
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
        raise SttBenchError(f"systems: '{system}' is not one of {', '.join(SYSTEMS)}")
    kind = system.removesuffix("+lm")
    rec = make_recognizer(kind, threads, lm_weight=lm_weight() if kind != system else 0.0)

    def run(audio: np.ndarray) -> tuple[str, float]:
        t = rec.transcribe(audio)
        return t.text, t.ms

    return run


def parse_systems(spec: str) -> list[str]:
    """`whisper,moonshine` -> the names, each checked."""
    names = [s.strip() for s in spec.split(",") if s.strip()]
    bad = [s for s in names if s not in SYSTEMS]
    if not names or bad:
        raise SttBenchError(f"systems: '{spec}' must name some of {', '.join(SYSTEMS)} (comma-separated)")
    return names


def run_bench(systems: Sequence[str], utterances: Sequence[TranscribedClip], threads: int = 2,
              progress: Callable[[str], None] | None = None) -> list[SttRow]:
    """Every utterance through every system, one system at a time (a warm-up pass first)."""
    if not utterances:
        raise SttBenchError("fixtures: no caller turns to recognise")
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


def summarise(rows: Sequence[SttRow], default: str | None = None,
              n_resamples: int = RESAMPLES) -> list[SttSummary]:
    """Per system, per suite (in the rows' order) and over all of them; `default` is the system marked as the
    pipeline's (None: `default_system()`)."""
    default = default or default_system()
    suites = [*dict.fromkeys(r.suite for r in rows), ALL]
    out: list[SttSummary] = []
    for system in dict.fromkeys(r.system for r in rows):
        for suite in suites:
            sel = [r for r in rows if r.system == system and suite in (ALL, r.suite)]
            if not sel:
                continue
            ms = [r.ms for r in sel]
            ci = ratio_interval([r.errors for r in sel], [r.reference_words for r in sel], n_resamples=n_resamples)
            out.append(SttSummary(system, suite, len(sel), round(float(np.mean([r.wer for r in sel])), 4),
                                  round(sum(r.errors for r in sel) / max(1, sum(r.reference_words for r in sel)), 4),
                                  round(float(np.percentile(ms, 50)), 1), round(float(np.percentile(ms, 95)), 1),
                                  system == default, None if ci is None else (round(ci[0], 4), round(ci[1], 4))))
    return out


def bench_document(rows: Sequence[SttRow], threads: int, command: str,
                   summary: Sequence[SttSummary] | None = None) -> dict[str, object]:
    """What `--out` writes: the command, the machine, the summary (made from `rows` when not given) and every
    row."""
    return {"command": command,
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "threads": threads,
                        "loadavg_after": [round(x, 2) for x in os.getloadavg()]},
            "default_system": default_system(),
            "summary": [asdict(s) for s in (summarise(rows) if summary is None else summary)],
            "rows": [asdict(r) for r in rows]}
