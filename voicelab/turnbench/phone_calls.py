"""The bench's `human-calls` group: turns of real two-party phone calls, each party recorded on its own channel,
each turn a FLAC clip of its speaker's channel with its labelled pauses and end.

The calls are two role-played customer-service calls to a car dealership's service desk (about four minutes
each; a caller and an agent, real people, unscripted: "uh", "um", restarts, backchannels, talk-over), committed
as 8 kHz telephone audio with one WAV file per party by the public repository aws-samples/amazon-transcribe-
live-call-analytics (Apache-2.0, (c) Amazon.com, Inc. or its affiliates). The clips and `labels.json` under
`audio_fixtures/human/phone_calls/` are made once, by a maintenance command, from the source files extracted at
their repository paths into one folder:

    python -m voicelab.turnbench.phone_calls --write SRC_DIR   # writes the clips, labels.json and manifest rows

- `lca-chimevc-stack/asterisk-test-scripts/recordings/Auto_Repairs_{40,49}_UTC_{caller,agent}.wav` (commit
  `COMMIT`).

Labelled as the meeting turns are (`voicelab.turnbench.meetings`), with each party's own channel standing in
for the annotation: a party's speech is the onset rule's stretches of their channel (gate 20 dB under the
channel's speech level, `voicelab.turnbench.human_labels.speech_spans`), joined into segments across silences
shorter than `SEGMENT_JOIN_S`; turns come from those segments by the floor rule (`voicelab.turnbench.floor`:
a segment of the other party longer than 1 s takes the floor, a shorter one is a backchannel); points come from
the clip of the speaker's own channel, the other party's stretches marking the silences that are not pauses.
Both parties' turns are cases: each is a person on the phone whose turn ends when the other takes the floor.
The audio is resampled from 8 to 16 kHz (soxr), raised to a -3 dBFS peak, 10 ms fades; the bench plays
`LEAD_S` of silence, the clip and `TAIL_S` of silence, as for the meeting turns.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
import soxr

from voicelab.fixtures.human_set import HUMAN_ROOT, LICENCES, ManifestRow, writer_main
from voicelab.turnbench.audio import SR, CaseAudio
from voicelab.turnbench.floor import Segment, turns
from voicelab.turnbench.human_labels import label_turn, normalised, speech_spans
from voicelab.turnbench.meetings import LABELS_FILE, clip_window, faded, load_cases, write_labelled

CALLS_DIR = HUMAN_ROOT / "phone_calls"
GROUP = "human-calls"
REPO = "aws-samples/amazon-transcribe-live-call-analytics"
COMMIT = "b375717d375b2b286f7338435afadd13eeed6e5d"
SOURCE_DIR = "lca-chimevc-stack/asterisk-test-scripts/recordings"
CALLS = ("Auto_Repairs_40_UTC", "Auto_Repairs_49_UTC")
PARTIES = ("caller", "agent")
LICENCE = "Apache-2.0"
ATTRIBUTION = ("amazon-transcribe-live-call-analytics, (c) Amazon.com, Inc. or its affiliates, Apache-2.0; "
               "recording {call}, {party}")
# a party's stretches closer than this are one segment for the floor rule: the silences inside an utterance
# (stop closures, breaths, a short search for a word) are shorter; a segment is what an annotator would mark
SEGMENT_JOIN_S = 0.5


class PhoneCallsError(Exception):
    """A source file or the labels file is missing or unusable; the message names it."""


def read_channel(path: Path) -> np.ndarray:
    """One party's channel as float32 mono at `SR` (the source is 8 kHz telephone audio)."""
    if not path.is_file():
        raise PhoneCallsError(f"{path}: missing (extract the source files at their repository paths)")
    try:
        x, sr = sf.read(str(path), dtype="float32", always_2d=True)
    except (OSError, RuntimeError) as e:
        raise PhoneCallsError(f"{path}: unreadable audio ({e})") from None
    mono = x.mean(axis=1)
    return mono if sr == SR else soxr.resample(mono, sr, SR).astype(np.float32)


def party_segments(spans: list[tuple[float, float]], party: str) -> list[Segment]:
    """A party's sound stretches joined across silences shorter than `SEGMENT_JOIN_S`."""
    out: list[Segment] = []
    for a, b in sorted(spans):
        if out and a - out[-1].end < SEGMENT_JOIN_S:
            out[-1] = Segment(out[-1].start, max(out[-1].end, b), party)
        else:
            out.append(Segment(a, b, party))
    return out


def label_call(src: Path, call: str) -> list[dict[str, Any]]:
    """The call's usable turns, both parties': per turn its clip (float32) and its labels (on the clip's clock)."""
    audio = {p: read_channel(src / SOURCE_DIR / f"{call}_{p}.wav") for p in PARTIES}
    spans = {p: speech_spans(normalised(x)) for p, x in audio.items()}
    segs = sorted(s for p in PARTIES for s in party_segments(spans[p], p))
    region = (0.0, min(x.size for x in audio.values()) / SR)
    out = []
    for t in turns(segs, region):
        w0, w1 = clip_window(t, segs, region)
        clip = faded(normalised(audio[t.speaker][round(w0 * SR):round(w1 * SR)]))
        heard = speech_spans(clip)
        others = [(max(a, w0) - w0, min(b, w1) - w0) for p in PARTIES if p != t.speaker
                  for a, b in spans[p] if b > w0 and a < w1]
        onset, end, points = label_turn(heard, heard, others, (t.start - w0, t.end - w0))
        out.append({"id": f"{call}/{t.speaker}/{t.start:.2f}", "audio": f"{call}_{t.speaker}_{round(t.start * 100):05d}.flac",
                    "speaker": f"{call}:{t.speaker}", "next_speaker": f"{call}:{t.next_speaker}", "recording": call,
                    "source_path": f"{SOURCE_DIR}/{call}_{t.speaker}.wav", "source_commit": COMMIT,
                    "other_channel": f"{SOURCE_DIR}/{call}_{t.next_speaker}.wav",
                    "clip_start_s": round(w0, 4), "turn_start_s": round(t.start, 4), "turn_end_s": round(t.end, 4),
                    "speech_onset_s": round(onset, 4), "speech_end_s": round(end, 4),
                    "points": [{"kind": p.kind, "t_s": round(p.t_s, 4),
                                "resume_s": None if p.resume_s is None else round(p.resume_s, 4)} for p in points],
                    "_clip": clip})
    return out


def write(src: Path, out: Path = CALLS_DIR) -> tuple[dict[str, int], list[ManifestRow]]:
    """Write every clip and `labels.json` under `out`; the manifest rows of the clips."""
    def row(c: dict[str, Any]) -> ManifestRow:
        call, party = c["speaker"].split(":")
        return ManifestRow(
            f"{out.name}/{c['audio']}", out.name, f"lca:{c['speaker']}", REPO,
            f"{c['source_path']} {c['other_channel']}", COMMIT, LICENCE, ATTRIBUTION.format(call=call, party=party),
            f"one turn cut from {c['clip_start_s']:.2f} s of {c['source_path'].rsplit('/', 1)[-1]}, resampled "
            f"8 -> 16 kHz, raised to a -3 dBFS peak, 10 ms fades; labels in {LABELS_FILE}; FLAC")

    about = ("made by python -m voicelab.turnbench.phone_calls --write SRC_DIR; see docs/turn-bench.md. Times in "
             "seconds on each clip's clock (its first sample at 0), recording times as *_s of the source; "
             "amazon-transcribe-live-call-analytics, Apache-2.0 (" + LICENCES[LICENCE] + ")")
    return write_labelled(out, [c for call in CALLS for c in label_call(src, call)], row, about)


def load(root: Path = CALLS_DIR) -> list[CaseAudio]:
    """The group's turn cases as the bench plays them (the meeting turns' loader, on this folder)."""
    return load_cases(root, GROUP, PhoneCallsError)


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - a maintenance command
    return writer_main(__doc__ or "", write, CALLS_DIR, PhoneCallsError, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
