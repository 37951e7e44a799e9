"""The bench's `human` group: turns of real meeting speech (the AMI Meeting Corpus excerpts that the public
repository pyannote/pyannote-audio carries), each a FLAC clip with its labelled pauses and end.

The clips and `labels.json` under `audio_fixtures/human/meetings/` are made once, by a maintenance command, from
the source files extracted at their repository paths into one folder:

    python -m voicelab.turnbench.meetings --write SRC_DIR   # writes the clips, labels.json and manifest rows

- `tests/data/{trñ00,trn01..09,dev00,dev01,tst00,tst01}.wav` with `debug.{train,development,test}.{rttm,uem}`
  (commit `DEBUG_COMMIT`): 30 s far-field mixtures, speaker turns annotated over 0-30 s;
- `tutorials/assets/seriously/mixture.{wav,rttm}` and `sources/source{0..3}.wav` (commit `TUTORIAL_COMMIT`):
  a 60 s mixture with the four speakers' own headset channels, which mark each speaker's own speech (a
  channel is matched to a speaker by how its loudness follows that speaker's annotated segments).

Turns come from the annotations (`voicelab.turnbench.floor`), points from the audio
(`voicelab.turnbench.human_labels`). A clip is the mixture from just before the turn's annotated start (not
before another speaker's preceding segment ends) to just after its end (not past the next speaker's start),
raised to a -3 dBFS peak, with 10 ms fades; the bench plays `LEAD_S` of silence, the clip, and `TAIL_S` of
silence after it, as it does for the generated turns.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from voicelab.fixtures.human_set import HUMAN_ROOT, LICENCES, ManifestRow, writer_main
from voicelab.turnbench.audio import SR, TAIL_S, CaseAudio, read_mono
from voicelab.turnbench.floor import OVERLAP_TOLERANCE_S, Segment, Turn, parse_rttm, turns
from voicelab.turnbench.human_labels import SLACK_S, label_turn, normalised, speech_spans
from voicelab.turnbench.replay import Point

MEETINGS_DIR = HUMAN_ROOT / "meetings"
LABELS_FILE = "labels.json"
LEAD_S = 0.5
FADE_S = 0.01
REPO = "pyannote/pyannote-audio"
DEBUG_COMMIT = "b749285c5cdd4636b2edc7f766f1352c8dde9369"
TUTORIAL_COMMIT = "84d5e40461cf95ddc14ac1753859d7bb65a3e9a6"
DEBUG_DIR = "tests/data"
TUTORIAL_DIR = "tutorials/assets/seriously"
LICENCE = "CC-BY-4.0"
ATTRIBUTION = ("AMI Meeting Corpus, (c) University of Edinburgh / AMI Consortium, Carletta et al. 2005, "
               "CC BY 4.0; speaker {spk}")


class MeetingsError(Exception):
    """A source file or the labels file is missing or unusable; the message names it."""


@dataclass(frozen=True)
class MeetingRecording:
    """A meeting recording of the source folder: its speaker segments and the region they cover (seconds)."""

    uri: str
    wav: Path
    segments: list[Segment]
    region: tuple[float, float]
    source_path: str  # the mixture's path in the repository
    commit: str
    channels: dict[str, Path] | None = None  # speaker -> their own headset channel


def _ascii(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


def _wav_for(folder: Path, uri: str) -> Path:
    """The recording's file: `uri.wav`, or the one whose name without accents is (the repository's `trñ00.wav`
    is annotated as `trn00`)."""
    direct = folder / f"{uri}.wav"
    if direct.is_file():
        return direct
    for p in sorted(folder.glob("*.wav")):
        if _ascii(p.stem) == uri:
            return p
    raise MeetingsError(f"{direct}: no audio for recording {uri!r}")


def _read_text(path: Path) -> list[str]:
    if not path.is_file():
        raise MeetingsError(f"{path}: missing (extract the source files at their repository paths)")
    return path.read_text(encoding="utf-8").splitlines()


def read_uem(path: Path) -> dict[str, tuple[float, float]]:
    """Annotated regions per recording (`uri channel start end`)."""
    out = {}
    for n, line in enumerate(_read_text(path), 1):
        f = line.split()
        if not f:
            continue
        try:
            out[f[0]] = (float(f[2]), float(f[3]))
        except (IndexError, ValueError):
            raise MeetingsError(f"{path}:{n}: expected 'uri channel start end'") from None
    return out


def _envelope_db(x: np.ndarray, hop: int = 160) -> np.ndarray:
    w = x[:x.size // hop * hop].reshape(-1, hop).astype(np.float64)
    return 20.0 * np.log10(w.std(axis=1) + 1e-9)


def match_channels(segments: list[Segment], channels: list[Path]) -> dict[str, Path]:
    """Each annotated speaker's own channel: the one-to-one assignment whose channels' loudness follows the
    speakers' annotated speech best (summed correlation over 10 ms frames)."""
    env = [_envelope_db(read_mono(p, MeetingsError)) for p in channels]
    speakers = sorted({s.speaker for s in segments})
    if len(speakers) > len(channels):
        raise MeetingsError(f"{channels[0].parent}: {len(speakers)} speakers but {len(channels)} channels")
    t = np.arange(min(e.size for e in env)) * 0.01
    score = np.zeros((len(speakers), len(channels)))
    for i, spk in enumerate(speakers):
        act = np.zeros(t.size)
        for s in segments:
            if s.speaker == spk:
                act[(t >= s.start) & (t < s.end)] = 1.0
        for j, e in enumerate(env):
            score[i, j] = np.corrcoef(act, e[:t.size])[0, 1] if act.std() > 0 else 0.0
    best = max(itertools.permutations(range(len(channels)), len(speakers)),
               key=lambda perm: sum(score[i, j] for i, j in enumerate(perm)))
    return {spk: channels[j] for spk, j in zip(speakers, best, strict=True)}


def recordings(src: Path) -> list[MeetingRecording]:
    """Every recording of the source folder with its annotations and region."""
    out = []
    data = src / DEBUG_DIR
    for split in ("train", "development", "test"):
        regions = read_uem(data / f"debug.{split}.uem")
        segs = parse_rttm(_read_text(data / f"debug.{split}.rttm"))
        for uri in sorted(regions):
            wav = _wav_for(data, uri)
            out.append(MeetingRecording(uri, wav, segs.get(uri, []), regions[uri], f"{DEBUG_DIR}/{wav.name}",
                                        DEBUG_COMMIT))
    tut = src / TUTORIAL_DIR
    segs = parse_rttm(_read_text(tut / "mixture.rttm")).get("mixture", [])
    wav = tut / "mixture.wav"
    if not wav.is_file():
        raise MeetingsError(f"{wav}: missing")
    channels = match_channels(segs, [tut / "sources" / f"source{i}.wav" for i in range(4)])
    out.append(MeetingRecording("mixture", wav, segs, (0.0, sf.info(str(wav)).duration),
                                f"{TUTORIAL_DIR}/mixture.wav", TUTORIAL_COMMIT, channels))
    return out


def clip_window(turn: Turn, segments: list[Segment], region: tuple[float, float]) -> tuple[float, float]:
    """The stretch of the recording a turn's clip holds: `SLACK_S` around the annotated turn, never reaching
    into another speaker's segment that ends before it or starts after it."""
    before = [s.end for s in segments if s.speaker != turn.speaker and s.end <= turn.start]
    after = [s.start for s in segments if s.speaker != turn.speaker and s.start >= turn.end - OVERLAP_TOLERANCE_S]
    w0 = max([region[0], turn.start - SLACK_S, *before])
    w1 = max(turn.end, min([region[1], turn.end + SLACK_S, *after]))
    return w0, w1


def faded(x: np.ndarray) -> np.ndarray:
    """`FADE_S` raised-cosine fades at both ends of a cut."""
    n = min(round(FADE_S * SR), x.size // 2)
    if n:
        ramp = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, n))
        x = x.copy()
        x[:n] *= ramp
        x[-n:] *= ramp[::-1]
    return x


def _spans(x: np.ndarray, t0: float, t1: float) -> list[tuple[float, float]]:
    """Sound stretches of a whole channel (its gate from its own speech level) inside [t0, t1], on t0's clock."""
    return [(max(a, t0) - t0, min(b, t1) - t0) for a, b in speech_spans(normalised(x)) if b > t0 and a < t1]


def label_recording(rec: MeetingRecording) -> list[dict[str, Any]]:
    """The recording's usable turns: per turn its clip (float32) and its labels (on the clip's clock)."""
    mix = read_mono(rec.wav, MeetingsError)
    channels = {spk: read_mono(p, MeetingsError) for spk, p in (rec.channels or {}).items()}
    whole = {spk: speech_spans(normalised(x)) for spk, x in channels.items()}
    out = []
    for t in turns(rec.segments, rec.region):
        w0, w1 = clip_window(t, rec.segments, rec.region)
        clip = faded(normalised(mix[round(w0 * SR):round(w1 * SR)]))
        heard = speech_spans(clip)
        others = [(s.start - w0, s.end - w0) for s in rec.segments if s.speaker != t.speaker]
        if channels:
            own = [(max(a, w0) - w0, min(b, w1) - w0) for a, b in whole[t.speaker] if b > w0 and a < w1]
            others += [(max(a, w0) - w0, min(b, w1) - w0) for spk, sp in whole.items() if spk != t.speaker
                       for a, b in sp if b > w0 and a < w1]
        else:
            own = heard
        onset, end, points = label_turn(heard, own, others, (t.start - w0, t.end - w0))
        spk = _ascii(t.speaker)
        out.append({"id": f"{rec.uri}/{spk}/{t.start:.2f}", "audio": f"{rec.uri}_{spk}_{round(t.start * 100):04d}.flac",
                    "speaker": t.speaker, "next_speaker": t.next_speaker, "recording": rec.uri,
                    "source_path": rec.source_path, "source_commit": rec.commit,
                    "channel": None if not channels else f"{TUTORIAL_DIR}/sources/{rec.channels[t.speaker].name}",  # type: ignore[index]
                    "clip_start_s": round(w0, 4), "turn_start_s": round(t.start, 4), "turn_end_s": round(t.end, 4),
                    "speech_onset_s": round(onset, 4), "speech_end_s": round(end, 4),
                    "points": [{"kind": p.kind, "t_s": round(p.t_s, 4),
                                "resume_s": None if p.resume_s is None else round(p.resume_s, 4)} for p in points],
                    "_clip": clip})
    return out


def counts(cases: list[dict[str, Any]]) -> dict[str, int]:
    pts = [p for c in cases for p in c["points"]]
    return {"turns": len(cases), "pauses": sum(p["kind"] == "pause" for p in pts),
            "ends": sum(p["kind"] == "end" for p in pts), "speakers": len({c["speaker"] for c in cases})}


def write_labelled(out: Path, cases: list[dict[str, Any]], row: Callable[[dict[str, Any]], ManifestRow],
                   about: str) -> tuple[dict[str, int], list[ManifestRow]]:
    """Write each case's clip (`_clip`, taken out of the case) as FLAC and `labels.json` (`about` its note) under
    `out`; the counts and each clip's manifest row (`row` of the case). Shared by the groups in this format."""
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for c in cases:
        sf.write(str(out / c["audio"]), c.pop("_clip"), SR, subtype="PCM_16", format="FLAC")
        rows.append(row(c))
    doc = {"_about": about, "counts": counts(cases), "cases": cases}
    (out / LABELS_FILE).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return doc["counts"], rows


def write(src: Path, out: Path = MEETINGS_DIR) -> tuple[dict[str, int], list[ManifestRow]]:
    """Write every clip and `labels.json` under `out`; the manifest rows of the clips."""
    def row(c: dict[str, Any]) -> ManifestRow:
        sources = c["source_path"] + (f" {c['channel']}" if c["channel"] else "")
        return ManifestRow(
            f"{out.name}/{c['audio']}", out.name, f"ami:{c['speaker']}", REPO, sources, c["source_commit"], LICENCE,
            ATTRIBUTION.format(spk=c["speaker"]),
            f"one turn cut from {c['clip_start_s']:.2f} s of {c['source_path'].rsplit('/', 1)[-1]}, "
            f"raised to a -3 dBFS peak, 10 ms fades; labels in {LABELS_FILE}; FLAC")

    about = ("made by python -m voicelab.turnbench.meetings --write SRC_DIR; see docs/turn-bench.md. Times in "
             "seconds on each clip's clock (its first sample at 0), recording times as *_s of the source; AMI "
             "Meeting Corpus, CC BY 4.0 (" + LICENCES[LICENCE] + ")")
    return write_labelled(out, [c for rec in recordings(src) for c in label_recording(rec)], row, about)


def load_cases(root: Path = MEETINGS_DIR, group: str = "human",
               error: type[Exception] = MeetingsError) -> list[CaseAudio]:
    """The group's turn cases as the bench plays them: `LEAD_S` of silence, the clip, `TAIL_S` of silence (any
    folder of clips with a labels file in this format; `error` is raised, naming the file)."""
    path = root / LABELS_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        entries = doc["cases"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise error(f"{path}: unreadable labels ({e})") from None
    out = []
    for c in entries:
        try:
            x = read_mono(root / c["audio"], error)
            points = [Point(p["kind"], float(p["t_s"]) + LEAD_S,
                            None if p.get("resume_s") is None else float(p["resume_s"]) + LEAD_S)
                      for p in c["points"]]
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            raise error(f"{path}: case {c.get('id', '?')!r}: {e}") from None
        audio = np.concatenate([np.zeros(round(LEAD_S * SR), np.float32), x, np.zeros(round(TAIL_S * SR), np.float32)])
        digest = hashlib.sha1(audio.tobytes()).hexdigest()[:16]
        out.append(CaseAudio(c["id"], group, audio, points,
                             {"speaker": c["speaker"], "recording": c["recording"]}, f"hm-{digest}"))
    return out


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - a maintenance command
    return writer_main(__doc__ or "", write, MEETINGS_DIR, MeetingsError, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
