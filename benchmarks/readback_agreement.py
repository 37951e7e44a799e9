"""The same replies scored two ways: on the bot's text, as `voicelab run` scores them, and on the words the lab
reads back from the bot's audio after the phone line's codec (8 kHz G.711 µ-law), as `voicelab call` scores an
agent's replies. The replies are one in-process run's, so every difference is the scoring's, not the agent's.

For each call of the run folder: the bot channel of calls/<id>.wav through µ-law at 8 kHz, its reply spans per
caller turn (`voicelab.call.reply_spans`), read back by Whisper tiny.en and scored against the fixture's
expect_reply (`voicelab.call.readback`); then both sets of verdicts paired turn by turn
(`voicelab.analysis.agreement`, what `voicelab compare` prints for two runs).

    .venv/bin/python benchmarks/readback_agreement.py RUN_DIR [--json benchmarks/results/readback_agreement.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import soxr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from engines.tool_span import strip_spans  # noqa: E402
from voicelab.analysis import load_run  # noqa: E402
from voicelab.analysis.agreement import agreement, verdicts  # noqa: E402
from voicelab.call.readback import read_back, score_reply_words  # noqa: E402
from voicelab.call.reply_spans import reply_spans  # noqa: E402
from voicelab.fixtures.format import load_fixture  # noqa: E402
from voicelab.measure.events import read_events  # noqa: E402
from voicelab.measure.metrics import turn_table, unscore_cut_replies  # noqa: E402
from voicelab.measure.truth import read_call_truth, read_call_wav  # noqa: E402
from voicelab.pcm import from_int16, to_int16  # noqa: E402
from voicelab.pipeline.transport import mulaw  # noqa: E402
from voicelab.speech.text import spoken_form  # noqa: E402
from voicelab.speech.wer import word_errors  # noqa: E402

LINE_RATE = mulaw.LINE_RATE


def line_bot(bot: np.ndarray, sr: int) -> np.ndarray:
    """The bot channel as a carrier hears it: 8 kHz µ-law, int16 (the lab's own conversions)."""
    narrow = soxr.resample(from_int16(bot), sr, LINE_RATE) if sr != LINE_RATE else from_int16(bot)
    return mulaw.decode(mulaw.encode(to_int16(narrow)))


def line_rows(run_dir: Path, recognizer: Any) -> list[dict[str, Any]]:
    """Per turn, the row a line run would have written for this reply: read-back words and their scores."""
    rows = []
    for meta in sorted((run_dir / "calls").glob("*.json")):
        truth = read_call_truth(meta)
        _caller, bot, sr = read_call_wav(run_dir / "calls" / (truth.wav or f"{truth.call_id}.wav"))
        fx = load_fixture(Path(truth.fixture_path or ""))
        expects = {i: t.expect_reply for i, t in enumerate(fx.turns)}
        heard = line_bot(bot, sr)
        said = list(truth.utterances)
        back = {b.turn: b for b in read_back(recognizer, heard, LINE_RATE, reply_spans(heard, LINE_RATE, said),
                                             expects)}
        for u in said:
            b = back.get(u.turn)
            scores = {"correct": b.correct, "expectations": b.expectations, "text": b.text} if b is not None else \
                {"correct": None, "text": "", "expectations": score_reply_words("", expects.get(u.turn))
                 .get("expectations")}
            rows.append({"call_id": truth.call_id, "turn": u.turn, "expect": u.expect,
                         "answer_correct": scores["correct"], "expectations": scores["expectations"],
                         "answer_text": scores["text"]})
    return rows


def _pairs(rows: list[dict[str, Any]], heard: list[dict[str, Any]],
           ) -> list[tuple[tuple[str, int], str, dict[str, Any]]]:
    """(call, turn), the bot's text and the read-back row of every reply the caller heard whole: a text, no cut
    (the next turn did not stop the bot), not a backchannel."""
    cut = {(r["call_id"], r["turn"] - 1) for r in rows
           if r.get("expect") == "interrupt" and r.get("stop_latency_ms") is not None}
    back = {(r["call_id"], r["turn"]): r for r in heard}
    return [((r["call_id"], r["turn"]), str(r["answer_text"]), back[(r["call_id"], r["turn"])]) for r in rows
            if r.get("answer_text") and r.get("expect") != "no_interrupt"
            and (r["call_id"], r["turn"]) not in cut and (r["call_id"], r["turn"]) in back]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--recognizer", default="whisper", help="the read-back's recogniser: whisper (tiny.en) or "
                                                             "whisper-base")
    args = ap.parse_args()
    from voicelab.speech.recognizers import make_recognizer

    run = load_run(args.run)
    fixture_of = {str(c): str(json.loads((args.run / "calls" / f"{c}.json").read_text()).get("fixture", c))
                  for c in run.turns["call_id"].unique()}
    # the in-process rows as turn_table makes them today (a run folder's tables keep the rules of their day)
    rows = turn_table(read_events(args.run / "events.jsonl"))
    here = verdicts(rows, lambda c: fixture_of[c])
    # the same replies were cut by the same barge-ins: a cut reply is not scored on the line either
    stops = {(r["call_id"], r["turn"]): r.get("stop_latency_ms") for r in rows}
    heard = [{**r, "stop_latency_ms": stops.get((r["call_id"], r["turn"]))}
             for r in line_rows(args.run, make_recognizer(args.recognizer, cpu_threads=2))]
    line = verdicts(unscore_cut_replies(heard), lambda c: fixture_of[c])
    got = agreement(here, line)
    print(got.line())
    # how well the words themselves were read back: the replies heard whole (uncut, the bot's text known)
    errors = [word_errors(spoken_form(strip_spans(text, " ")), spoken_form(heard_row["answer_text"] or ""))
              for (call_id, turn), text, heard_row in _pairs(rows, heard)]
    wer = sum(e.substitutions + e.deletions + e.insertions for e in errors) / max(1, sum(e.reference_words
                                                                                        for e in errors))
    print(f"read-back word errors on {len(errors)} replies heard whole: {100 * wer:.1f} %")
    for d in got.disagreements:
        print(f"  {d.key[0]} turn {d.key[1]}: text {'passed' if d.a.passed else 'failed'} ({d.a.words!r}); "
              f"read back {'passed' if d.b.passed else 'failed'} ({d.b.words!r})")
    if args.json is not None:
        args.json.write_text(json.dumps({
            "run": run.run_id, "recognizer": args.recognizer, "readback_wer": round(wer, 4),
            "readback_wer_replies": len(errors), "paired": got.paired, "agree": got.agree, "share": got.share,
            "scored_in_process_only": got.only_a, "scored_on_the_line_only": got.only_b,
            "in_process_passed": sum(v.passed for v in here.values()),
            "read_back_passed": sum(v.passed for v in line.values()),
            "disagreements": [{"fixture": d.key[0], "turn": d.key[1], "text": d.a.words, "text_passed": d.a.passed,
                               "read_back": d.b.words, "read_back_passed": d.b.passed}
                              for d in got.disagreements]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
