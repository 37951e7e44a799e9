"""Does Whisper need the silence after the speech? WER when each caller turn is cut at its true end plus T ms.

The early final (`--stt-early-final`, voicelab/speech/streaming.py) transcribes the audio up to Silero's first
silent frame instead of up to the VAD's confirmed stop ~120 ms later. That frame usually comes after the end of
speech, but it can fall inside a soft last sound (a final "s" under crowd noise: "americans" read "america"),
which is why T may be negative: a cut before the annotated offset.
This cuts every caller turn of the default and real lists 0.7 s before its annotated speech onset (the
pipeline's pre-roll) and T ms after its annotated speech offset, transcribes it with the pipeline's
recogniser (Whisper tiny.en, greedy, fitted window) and prints the mean per-turn WER for each T.

    .venv/bin/python benchmarks/stt_tail_cut.py            # writes benchmarks/results/stt_tail_cut.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from voicelab.fixtures.format import load_fixture, select  # noqa: E402
from voicelab.pcm import SAMPLE_RATE  # noqa: E402
from voicelab.speech.wer import comparable_words, word_errors  # noqa: E402
from voicelab.speech.whisper import WhisperRecognizer  # noqa: E402

PREROLL_S = 0.7  # the Whisper service's pre-roll before the speech


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tails-ms", type=float, nargs="*", default=[-100, -60, -30, 0, 30, 60, 100, 150, 250])
    ap.add_argument("--lists", nargs="*", default=["default", "real"])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "stt_tail_cut.json")
    a = ap.parse_args()
    rec = WhisperRecognizer(cpu_threads=2)
    rows: list[dict[str, object]] = []
    for name in a.lists:
        for path in select([name]):
            fx = load_fixture(path, sample_rate=SAMPLE_RATE)
            for t in fx.turns:
                start = max(0, int((t.speech_onset_s - PREROLL_S) * SAMPLE_RATE))
                for tail in a.tails_ms:
                    audio = t.audio[start:max(start + 1, int((t.speech_offset_s + tail / 1000) * SAMPLE_RATE))]
                    hyp = rec.transcribe(audio).text
                    rows.append({"list": name, "fixture": fx.name, "turn": t.index, "tail_ms": tail,
                                 "reference": t.text, "hypothesis": hyp, "wer": word_errors(t.text, hyp).rate})
    summary = {str(tail): round(100 * float(np.mean([r["wer"] for r in rows if r["tail_ms"] == tail])), 1)
               for tail in a.tails_ms}
    # the last word decides a cut-off (engines/decision/corpus.py): how often is it read right?
    def last_ok(r: dict[str, object]) -> bool:
        ref, hyp = comparable_words(str(r["reference"])), comparable_words(str(r["hypothesis"]))
        return bool(ref and hyp and ref[-1] == hyp[-1])

    last = {str(tail): round(100 * float(np.mean([last_ok(r) for r in rows if r["tail_ms"] == tail])), 1)
            for tail in a.tails_ms}
    for tail, wer in summary.items():
        print(f"cut {tail:>6} ms after the speech's end: mean WER {wer} %, last word right {last[tail]} %")
    doc = {"command": "benchmarks/stt_tail_cut.py " + " ".join(sys.argv[1:]), "lists": a.lists,
           "turns": len(rows) // len(a.tails_ms), "mean_wer_percent_by_tail_ms": summary,
           "last_word_right_percent_by_tail_ms": last, "rows": rows}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
