"""Round trip of `voicelab fixtures import`: a run's recorded calls back into fixtures, checked against the fixtures
that made them.

For each run folder given (e.g. `voicelab run` of the default list and of the backchannel list), only the stereo
WAVs (`calls/*.wav`) are copied into an empty folder and imported, as a user would import recordings from
elsewhere. Each imported fixture is then set against its source fixture (the call id `NN-NAME` names it) and
against the run's own ground truth (`calls/<id>.json`, which the importer never reads):

- caller turns: the same number; speech onsets and offsets (clip start in the recording plus the loader's
  speech edges) against the ground truth, max error in ms;
- `expect` marks (interrupt / no_interrupt) and start-rule kinds (`after`): the same;
- delays: imported `delay_s` against the source fixture's, and against the delay as played (the player may
  start a clip late under load: the run's clip start minus its scheduled start is added to the source delay);
  goal: within 150 ms of the source;
- machine-read text: mean WER against the source text (machine-read turns; sounds like "[cough]" left out), and the
  same recogniser (Whisper tiny.en, greedy, no language model: `bench stt`'s `whisper`) on the source clips;
  goal: within 5 points;
- with `--replay`: the imported fixtures played by `voicelab run` (the default configuration); its FAR p50
  interval must overlap the source run's.

    .venv/bin/voicelab run default --clip-grid-ms 0 --out runs/default      # clips at their exact sample: the
    .venv/bin/voicelab run backchannels --clip-grid-ms 0 --out runs/bc      # delays played are the fixture's
    .venv/bin/python benchmarks/import_roundtrip.py runs/default/RUN runs/bc/RUN --replay
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from voicelab.fixtures.format import FIXTURES_ROOT, load_fixture  # noqa: E402
from voicelab.fixtures.importer import ImportOptions, import_sources  # noqa: E402
from voicelab.speech.recognizers import make_recognizer  # noqa: E402
from voicelab.speech.wer import word_errors  # noqa: E402

DELAY_GOAL_MS = 150.0
WER_GOAL_POINTS = 5.0


def _source_name(call_id: str) -> str:
    return call_id.split("-", 1)[1] if "-" in call_id and call_id.split("-", 1)[0].isdigit() else call_id


def compare_call(imported: Path, run: Path, call_id: str, asr: Any) -> dict[str, Any]:
    fx = load_fixture(imported)
    src = load_fixture(FIXTURES_ROOT / _source_name(call_id))
    truth = json.loads((run / "calls" / f"{call_id}.json").read_text(encoding="utf-8"))
    utts, sched = truth["utterances"], {s["turn"]: s["start_s"] for s in truth.get("scheduled", [])}
    clips = fx.imported["clips_s"] if fx.imported else []
    row: dict[str, Any] = {
        "call": call_id, "fixture": src.name, "turns_source": len(src.turns), "turns_imported": len(fx.turns),
        "expect_source": [t.expect for t in src.turns], "expect_imported": [t.expect for t in fx.turns],
        "after_source": [t.start.after for t in src.turns], "after_imported": [t.start.after for t in fx.turns],
        "delay_source": [t.start.delay_s for t in src.turns], "delay_imported": [t.start.delay_s for t in fx.turns],
        "guesses": [g for _, g in fx.guesses],
    }
    row["delay_played"] = [round(t.start.delay_s + (u["clip_start_s"] - sched.get(u["turn"], u["clip_start_s"])), 3)
                           for t, u in zip(src.turns, utts, strict=False)]
    same = len(fx.turns) == len(src.turns)
    row["same_turns"] = same
    row["same_expect"] = same and row["expect_source"] == row["expect_imported"]
    row["same_after"] = same and row["after_source"] == row["after_imported"]
    if same:
        row["delay_err_ms"] = max(abs(a - b) * 1000 for a, b in zip(row["delay_source"], row["delay_imported"],
                                                                      strict=True))
        row["delay_err_played_ms"] = max(abs(a - b) * 1000 for a, b in zip(row["delay_played"],
                                                                             row["delay_imported"], strict=True))
        # the same delay measured to the speech onset (delay + the speech's place in the clip): what a replay
        # reproduces, whatever padding the clip was cut with
        row["onset_delay_err_ms"] = max(abs((a.start.delay_s + a.speech_onset_s) - (b.start.delay_s + b.speech_onset_s))
                                        * 1000 for a, b in zip(src.turns, fx.turns, strict=True))
        row["onset_delay_err_played_ms"] = max(
            abs((p + a.speech_onset_s) - (b.start.delay_s + b.speech_onset_s)) * 1000
            for p, a, b in zip(row["delay_played"], src.turns, fx.turns, strict=True))
        edges = [(c[0] + t.speech_onset_s, c[0] + t.speech_offset_s) for c, t in zip(clips, fx.turns, strict=True)]
        row["boundary_err_ms"] = max(max(abs(a - u["speech_start_s"]), abs(b - u["speech_end_s"])) * 1000
                                     for (a, b), u in zip(edges, utts, strict=True))
        # machine-read turns only: a sound's "[noise]" placeholder is not a reading (nor is a "[cough]" reference)
        pairs = [(s, t) for s, t in zip(src.turns, fx.turns, strict=True)
                 if not s.text.startswith("[") and t.text_source == "asr"]
        row["wer_imported"] = [word_errors(s.text, t.text).rate for s, t in pairs]
        row["wer_bench"] = [word_errors(s.text, asr.transcribe(s.audio).text).rate for s, _ in pairs]
        row["text"] = [[s.text, t.text] for s, t in pairs]
    return row


def replay_far(fixtures: Path, out: Path) -> dict[str, Any]:
    cmd = [str(ROOT / ".venv/bin/voicelab"), "run", str(fixtures), "--out", str(out)]
    t0 = time.time()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    run = max(p for p in out.iterdir() if (p / "summary.json").is_file())
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return {"run": str(run), "far_ms": summary["far_ms"], "seconds": round(time.time() - t0)}


def roundtrip(run: Path, work: Path, replay: bool, asr: Any) -> dict[str, Any]:
    wavs = work / "wavs"
    wavs.mkdir(parents=True)
    for w in sorted((run / "calls").glob("*.wav")):
        shutil.copy(w, wavs / w.name)  # only the recordings: the importer sees no ground truth
    t0 = time.time()
    written = import_sources([wavs], work / "fixtures", ImportOptions())
    seconds = time.time() - t0
    rows = [compare_call(f, run, f.name, asr) for f in written]
    ok = [r for r in rows if r["same_turns"]]
    wer_i = [w for r in ok for w in r["wer_imported"]]
    wer_b = [w for r in ok for w in r["wer_bench"]]
    source = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    out: dict[str, Any] = {
        "run": str(run), "calls": len(rows), "import_seconds": round(seconds, 1),
        "same_turns": sum(r["same_turns"] for r in rows), "same_expect": sum(r["same_expect"] for r in rows),
        "same_after": sum(r["same_after"] for r in rows),
        "delay_within_goal": sum(r.get("delay_err_ms", 1e9) <= DELAY_GOAL_MS for r in rows),
        "delay_turns_within_goal": sum(abs(a - b) * 1000 <= DELAY_GOAL_MS for r in ok
                                       for a, b in zip(r["delay_source"], r["delay_imported"], strict=True)),
        "delay_turns": sum(len(r["delay_source"]) for r in ok),
        "delay_err_ms_max": max((r["delay_err_ms"] for r in ok), default=None),
        "delay_err_played_ms_max": max((r["delay_err_played_ms"] for r in ok), default=None),
        "onset_delay_err_ms_max": max((r["onset_delay_err_ms"] for r in ok), default=None),
        "onset_delay_err_played_ms_max": max((r["onset_delay_err_played_ms"] for r in ok), default=None),
        "boundary_err_ms_max": max((r["boundary_err_ms"] for r in ok), default=None),
        "wer_imported_mean": round(float(np.mean(wer_i)), 4) if wer_i else None,
        "wer_bench_mean": round(float(np.mean(wer_b)), 4) if wer_b else None,
        "source_far_ms": source["far_ms"], "rows": rows,
    }
    if wer_i:
        out["wer_gap_points"] = round(100 * (out["wer_imported_mean"] - out["wer_bench_mean"]), 1)
    if replay:
        out["replay"] = replay_far(work / "fixtures", work / "replay")
        a, b = source["far_ms"].get("p50_ci"), out["replay"]["far_ms"].get("p50_ci")
        out["far_p50_intervals_overlap"] = bool(a and b and a[0] <= b[1] and b[0] <= a[1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, nargs="+", help="sealed run folders of `voicelab run`")
    ap.add_argument("--replay", action="store_true", help="also play the imported fixtures (real time)")
    ap.add_argument("--out", type=Path, default=None, help="write the JSON result here")
    a = ap.parse_args()
    asr = make_recognizer("whisper", cpu_threads=2, beam_size=1, lm_weight=0.0)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, run in enumerate(a.runs):
            results.append(roundtrip(run, Path(tmp) / str(i), a.replay, asr))
    doc = {"command": " ".join(["benchmarks/import_roundtrip.py", *sys.argv[1:]]),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
           "goals": {"delay_ms": DELAY_GOAL_MS, "wer_points": WER_GOAL_POINTS}, "runs": results}
    for r in results:
        print(f"{r['run']}: {r['calls']} calls, same turns {r['same_turns']}, same expect {r['same_expect']}, "
              f"same rule kinds {r['same_after']}, delays within {DELAY_GOAL_MS:g} ms: {r['delay_within_goal']} calls, "
              f"{r['delay_turns_within_goal']} of {r['delay_turns']} turns "
              f"(max {r['delay_err_ms_max']} ms; {r['delay_err_played_ms_max']} ms against the delay as played; to the "
              f"speech onset {r['onset_delay_err_ms_max']} / {r['onset_delay_err_played_ms_max']} ms), "
              f"boundaries max {r['boundary_err_ms_max']} ms, WER imported {r['wer_imported_mean']} vs bench "
              f"{r['wer_bench_mean']} ({r.get('wer_gap_points')} points)"
              + (f", replay FAR p50 {r['replay']['far_ms'].get('p50')} {r['replay']['far_ms'].get('p50_ci')} vs "
                 f"{r['source_far_ms'].get('p50')} {r['source_far_ms'].get('p50_ci')}: overlap "
                 f"{r['far_p50_intervals_overlap']}" if "replay" in r else ""))
    if a.out:
        a.out.write_text(json.dumps(doc, indent=2, default=float) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
