"""Choose the weight of the callers' language model (`--stt-lm W`) on audio the suite never plays.

The tuning set: caller requests drawn from the corpus generator with a seed no engine or fixture uses
(`engines.shop.corpus.generate(600, 20261201)`, the last caller turn of each chat, garbled `clarify` requests left
out), spoken by four espeak-ng voices that no fixture uses, each over one of four lines (clean, a small room, a
heavy-noise line, a noisy 8 kHz telephone line), built with the fixture builder's own effects. Whisper tiny.en
gives each clip its 5 best readings (a beam of 5) and its greedy one; every weight W re-ranks the 5 by
`whisper + W * lm` (voicelab.speech.caller_lm), and the mean WER per weight is written with every clip's readings.
The bundled fixtures are not used here: they are the check, not the tuning set.

    .venv/bin/python benchmarks/stt_lm_tune.py     # writes benchmarks/results/stt_lm_tune.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import soxr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from engines.shop.corpus import generate  # noqa: E402
from voicelab.fixtures import build as B  # noqa: E402
from voicelab.fixtures import suite as S  # noqa: E402
from voicelab.fixtures.spec import Line, Spec, Voice  # noqa: E402
from voicelab.pcm import SAMPLE_RATE  # noqa: E402
from voicelab.speech.caller_lm import CallerLM  # noqa: E402
from voicelab.speech.text import recognizer_text  # noqa: E402
from voicelab.speech.wer import word_errors  # noqa: E402
from voicelab.speech.whisper import WhisperRecognizer  # noqa: E402

VOICES = (Voice("espeak", "en-us+m2", wpm=165), Voice("espeak", "en-gb+f3", wpm=170),
          Voice("espeak", "en-us+m4", wpm=185), Voice("espeak", "en-gb-x-rp+f2", wpm=155))
LINES = (("clean", {}), ("room", {"room": S.SMALL_ROOM, "noise": S.LIGHT}), ("noisy", {"noise": S.HEAVY}),
         ("phone", {"noise": S.NOISY_PHONE, "telephone": True}))
WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.2)


def tuning_texts(n: int, seed: int = 20261201) -> list[str]:
    seen: dict[str, None] = {}
    for ex in generate(600, seed):
        if ex.intent != "clarify":
            seen.setdefault(recognizer_text(ex.messages[-1]["content"]), None)
    return list(seen)[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=96, help="clips (texts), spread over the voices and lines")
    ap.add_argument("--nbest", type=int, default=5, help="beam size and readings per clip")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "stt_lm_tune.json")
    args = ap.parse_args()
    rec = WhisperRecognizer(cpu_threads=2)
    lm = CallerLM.from_corpus()
    clips = []
    with tempfile.TemporaryDirectory() as tmp:
        synth = B._Synth(Path(tmp))
        for i, text in enumerate(tuning_texts(args.n)):
            voice = VOICES[i % len(VOICES)]
            line_name, line = LINES[(i // len(VOICES)) % len(LINES)]
            spec = Spec(f"tune{i}", "tuning clip", voice, (), **line)  # type: ignore[arg-type]
            x = B._utterance(synth, voice, Line(text, after="start", delay_s=0.0))
            y, sr = B._finish(spec, x, 0)
            audio = soxr.resample(y, sr, SAMPLE_RATE).astype(np.float32) if sr != SAMPLE_RATE else y.astype(np.float32)
            (greedy,), _ = rec.readings(audio, 1)
            five, _ = rec.readings(audio, args.nbest, args.nbest)
            clips.append({"text": text, "voice": voice.espeak_voice, "line": line_name,
                          "greedy": recognizer_text(greedy.text),
                          "readings": [{"text": recognizer_text(r.text), "logprob": round(r.logprob, 4),
                                        "lm": round(lm.logprob(recognizer_text(r.text).split()), 4)} for r in five]})
            print(i, line_name, text, "|", clips[-1]["greedy"], flush=True)
    grid = {}
    for w in WEIGHTS:
        wers = []
        for c in clips:
            best = max(c["readings"], key=lambda r: r["logprob"] + w * r["lm"])
            wers.append(word_errors(c["text"], best["text"]).rate)
        grid[str(w)] = round(float(np.mean(wers)), 4)
    greedy_wer = round(float(np.mean([word_errors(c["text"], c["greedy"]).rate for c in clips])), 4)
    best_w = min(WEIGHTS, key=lambda w: (grid[str(w)], w))
    doc = {"command": "benchmarks/stt_lm_tune.py " + " ".join(sys.argv[1:]), "clips": len(clips), "nbest": args.nbest,
           "greedy_wer": greedy_wer, "beam5_wer_by_weight": grid, "chosen_weight": best_w, "rows": clips}
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print("greedy", greedy_wer, "by weight", grid, "chosen", best_w)


if __name__ == "__main__":
    main()
