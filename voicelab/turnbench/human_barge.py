"""The bench's human barge-in cases: real people's backchannels (which must not stop the bot) and short spoken
commands (which must), each a FLAC clip with its kind, words where known, and the sound's onset and offset.

The clips and `labels.json` under `audio_fixtures/human/barge/` are made once, by a maintenance command, from
the source files extracted at their repository paths into one folder:

    python -m voicelab.turnbench.human_barge --write SRC_DIR   # writes the clips, labels.json and manifest rows

- **Backchannels** (AMI Meeting Corpus, via pyannote/pyannote-audio; the files `voicelab.turnbench.meetings`
  reads): a segment of at most 1 s inside another speaker's turn (`voicelab.turnbench.floor`). In the 60 s
  tutorial excerpt each one is cut from its speaker's own headset channel; its words come from the channel's
  words file (`text/mixture.{A..D}.words_joined.txt`, channel `source{i}` the i-th letter) where the file's
  sentences and the speaker's segments pair one to one and each sentence fits its segment (at most
  `MAX_WORDS_PER_S` words a second, plus one); otherwise it is labelled by kind alone. In the far-field
  mixtures (`tests/data/*.wav`) a backchannel is kept only where it is alone: no other speaker's segment
  comes within `ALONE_MARGIN_S` of it.
- **Interruptions** (Speech Commands v0.02, CC BY 4.0, via the sample `yes_no_go_stop.wav` of Arm's
  ML embedded evaluation kit, whose `files.md` lists the corpus file of each second): the seconds holding
  "no" and "stop" (`COMMANDS`).

A clip runs `PAD_S` either side of the sound's annotated span (never into its speaker's other speech, nor, in
a mixture, anyone else's), raised to a -3 dBFS peak, with 10 ms fades; the onset and offset are the first and
last sound by the onset rule (gate 20 dB under the clip's speech level, `voicelab.turnbench.human_labels`).
The bench plays the clip and `BARGE_TAIL_S` of silence, as it plays a fixture's backchannel.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from voicelab.fixtures.human_set import HUMAN_ROOT, LICENCES, ManifestRow, writer_main
from voicelab.turnbench.audio import BARGE_TAIL_S, SR, CaseAudio, read_mono
from voicelab.turnbench.floor import Segment, backchannel_segments
from voicelab.turnbench.human_labels import LabelError, label_turn, normalised, speech_spans
from voicelab.turnbench.meetings import (
    ATTRIBUTION,
    LICENCE,
    REPO,
    TUTORIAL_DIR,
    MeetingRecording,
    MeetingsError,
    faded,
    recordings,
)
from voicelab.turnbench.replay import Point

BARGE_DIR = HUMAN_ROOT / "barge"
LABELS_FILE = "labels.json"
PAD_S = 0.2
ALONE_MARGIN_S = 0.1
MAX_WORDS_PER_S = 5.0
WORDS_FILE = "text/mixture.{letter}.words_joined.txt"
COMMANDS_REPO = "alifsemi/alif_ml-embedded-evaluation-kit"
COMMANDS_COMMIT = "b1b93fc01d915da47a4f6ea8475c193aef56e871"
COMMANDS_PATH = "resources/kws_asr/samples/yes_no_go_stop.wav"
# (word, its second in the sample, the corpus speaker, the corpus file), as the sample's files.md lists them
COMMANDS = (("no", 1, "0a2b400e", "no/0a2b400e_nohash_0.wav"), ("stop", 3, "0a196374", "stop/0a196374_nohash_0.wav"))
COMMANDS_ATTRIBUTION = ("Speech Commands v0.02, Pete Warden / Google, 2018 (arXiv:1804.03209), CC BY 4.0; "
                        "file {file} via Arm ML embedded evaluation kit; speaker {spk}")

Span = tuple[float, float]


class BargeSetError(Exception):
    """A source file or the labels file is missing or unusable; the message names it."""


@dataclass(frozen=True)
class Cut:
    """One sound to cut: where in which source, what it is."""

    id: str
    kind: str  # backchannel or interruption
    text: str | None  # the words, where known
    speaker: str
    window: Span  # the clip, seconds of the source
    sound: Span  # the sound's annotated span, seconds of the source
    source_path: str  # in the source repository
    repo: str
    commit: str
    attribution: str


def sentences(text: str) -> list[str]:
    """A words file's sentences: split after '.', '?' or '!', empty ones dropped."""
    return [s.strip() for s in re.split(r"(?<=[.?!])\s+|^\s*[.?!]\s*", text) if s.strip(" .?!")]


def words_of(own: list[Segment], text: str) -> dict[Segment, str]:
    """Each of a speaker's segments (in order) with its sentence of the words file, where the two pair one to
    one and every sentence fits its segment; else nothing (the words cannot be placed)."""
    units = sentences(text)
    if len(units) != len(own):
        return {}
    if any(len(u.split()) > MAX_WORDS_PER_S * s.duration + 1 for u, s in zip(units, own, strict=True)):
        return {}
    return dict(zip(own, units, strict=True))


def alone(seg: Segment, segments: list[Segment], margin: float = ALONE_MARGIN_S) -> bool:
    """No other speaker's segment comes within `margin` of this one."""
    return not any(o.speaker != seg.speaker and o.start < seg.end + margin and o.end > seg.start - margin
                   for o in segments)


def cut_window(seg: Segment, keep_out: list[Segment], bounds: Span, pad: float = PAD_S) -> Span:
    """`pad` either side of the segment, not reaching into any of `keep_out` (other segments) nor out of
    `bounds`."""
    before = [o.end for o in keep_out if o != seg and o.end <= seg.start]
    after = [o.start for o in keep_out if o != seg and o.start >= seg.end]
    return max([bounds[0], seg.start - pad, *before]), min([bounds[1], seg.end + pad, *after])


def sound_span(clip: np.ndarray, annotated: Span) -> Span:
    """The first and last sound of the clip's speaker around `annotated` (the clip's clock), by the onset rule
    on the clip (already at its -3 dBFS peak); a LabelError if there is none."""
    spans = speech_spans(clip)
    onset, offset, _ = label_turn(spans, spans, [], annotated)
    return onset, offset


def recording_cuts(rec: MeetingRecording, words_dir: Path | None = None) -> list[Cut]:
    """The backchannels of one recording: from each speaker's own channel where it has them (with words from
    `words_dir` where they can be placed), else from the mixture where the backchannel is alone."""
    bcs = backchannel_segments(rec.segments, rec.region)
    out = []
    for seg in bcs:
        own = sorted(s for s in rec.segments if s.speaker == seg.speaker)
        if rec.channels:
            src = rec.channels[seg.speaker]
            text = None
            if words_dir is not None:
                letter = "ABCD"[int(src.stem.removeprefix("source"))]
                path = words_dir / WORDS_FILE.format(letter=letter)
                if path.is_file():
                    text = words_of(own, path.read_text(encoding="utf-8")).get(seg)
            window = cut_window(seg, own, rec.region)
            source_path = f"{TUTORIAL_DIR}/sources/{src.name}"
        elif alone(seg, rec.segments):
            text, window, source_path = None, cut_window(seg, rec.segments, rec.region), rec.source_path
        else:
            continue
        out.append(Cut(f"{rec.uri}/{seg.speaker}/{seg.start:.2f}", "backchannel", text and text.lower().rstrip(".?!"),
                       seg.speaker, window, (seg.start, seg.end), source_path, REPO, rec.commit,
                       ATTRIBUTION.format(spk=seg.speaker)))
    return out


def command_cuts() -> list[Cut]:
    """The spoken commands: each its second of the Speech Commands sample."""
    return [Cut(f"speechcommands/{spk}/{word}", "interruption", word, spk, (float(k), float(k + 1)),
                (float(k), float(k + 1)), COMMANDS_PATH, COMMANDS_REPO, COMMANDS_COMMIT,
                COMMANDS_ATTRIBUTION.format(file=file, spk=spk)) for word, k, spk, file in COMMANDS]


def render(cut: Cut, source: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
    """The clip of one cut and its labels entry (times on the clip's clock)."""
    w0, w1 = cut.window
    clip = faded(normalised(source[round(w0 * SR):round(w1 * SR)]))
    onset, offset = sound_span(clip, (cut.sound[0] - w0, cut.sound[1] - w0))
    name = re.sub(r"[^A-Za-z0-9]+", "_", cut.id.replace("/", "_")).strip("_") + ".flac"
    return clip, {"id": cut.id, "file": name, "kind": cut.kind, "text": cut.text, "speaker": cut.speaker,
                  "onset_s": round(onset, 4), "offset_s": round(offset, 4),
                  "source": f"{cut.repo}:{cut.source_path}", "source_commit": cut.commit,
                  "cut": [round(w0, 4), round(w1, 4)]}


def _speaker_id(cut: Cut) -> str:
    return f"speechcommands:{cut.speaker}" if cut.repo == COMMANDS_REPO else f"ami:{cut.speaker}"


def write(src: Path, out: Path = BARGE_DIR) -> tuple[dict[str, int], list[ManifestRow]]:
    """Write every clip and `labels.json` under `out`; the manifest rows of the clips."""
    try:
        recs = recordings(src)
    except MeetingsError as e:
        raise BargeSetError(str(e)) from None
    cuts = [(c, rec.channels[c.speaker] if rec.channels else rec.wav) for rec in recs
            for c in recording_cuts(rec, src / TUTORIAL_DIR)]
    cmd = src / COMMANDS_PATH
    if not cmd.is_file():
        raise BargeSetError(f"{cmd}: missing (extract the source files at their repository paths)")
    cuts += [(c, cmd) for c in command_cuts()]
    out.mkdir(parents=True, exist_ok=True)
    cache: dict[Path, np.ndarray] = {}
    entries, rows, skipped = [], [], []
    for c, path in cuts:
        try:
            if path not in cache:  # a source holds several cuts: read it once
                cache[path] = read_mono(path, BargeSetError)
            clip, entry = render(c, cache[path])
        except LabelError:
            skipped.append(c.id)
            continue
        sf.write(str(out / entry["file"]), clip, SR, subtype="PCM_16", format="FLAC")
        entries.append(entry)
        rows.append(ManifestRow(
            f"{out.name}/{entry['file']}", out.name, _speaker_id(c), c.repo, c.source_path, c.commit, LICENCE,
            c.attribution, f"{c.kind} cut from {c.window[0]:.2f}-{c.window[1]:.2f} s of "
            f"{c.source_path.rsplit('/', 1)[-1]}, raised to a -3 dBFS peak, 10 ms fades; labels in {LABELS_FILE}; "
            "FLAC"))
    n = {"backchannels": sum(e["kind"] == "backchannel" for e in entries),
         "interruptions": sum(e["kind"] == "interruption" for e in entries),
         "speakers": len({e["speaker"] for e in entries}), "skipped": len(skipped)}
    doc = {"_about": "made by python -m voicelab.turnbench.human_barge --write SRC_DIR; see docs/turn-bench.md. "
                     "onset_s/offset_s on each clip's clock (its first sample at 0), cut: the clip's span of the "
                     "source in seconds; AMI Meeting Corpus and Speech Commands, CC BY 4.0 ("
                     + LICENCES[LICENCE] + ")",
           "counts": n, "skipped": skipped, "cases": entries}
    (out / LABELS_FILE).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return n, rows


def load_cases(root: Path = BARGE_DIR, group: str = "human") -> list[CaseAudio]:
    """The barge-in cases as the bench plays them: the clip and `BARGE_TAIL_S` of silence; the point is the
    sound's offset, its onset in meta (words unknown: text "")."""
    path = root / LABELS_FILE
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["cases"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BargeSetError(f"{path}: unreadable labels ({e})") from None
    out = []
    for c in entries:
        try:
            if c["kind"] not in ("backchannel", "interruption"):
                raise ValueError(f"kind {c['kind']!r} is not backchannel or interruption")
            x = read_mono(root / c["file"], BargeSetError)
            onset, offset = float(c["onset_s"]), float(c["offset_s"])
        except (KeyError, TypeError, ValueError) as e:
            raise BargeSetError(f"{path}: case {c.get('id', '?') if isinstance(c, dict) else '?'!r}: {e}") from None
        audio = np.concatenate([x, np.zeros(round(BARGE_TAIL_S * SR), np.float32)])
        digest = hashlib.sha1(audio.tobytes()).hexdigest()[:16]
        out.append(CaseAudio(c["id"], group, audio, [Point("end", offset)],
                             {"kind": c["kind"], "text": c.get("text") or "", "onset_s": onset, "reading": None,
                              "speaker": c.get("speaker")}, f"hb-{digest}"))
    return out


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - a maintenance command
    return writer_main(__doc__ or "", write, BARGE_DIR, BargeSetError, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
