"""A folder of recordings with their reference transcripts: what `voicelab bench stt --data DIR` reads.

The format (the human set's `audio_fixtures/human/speech/` is one):
- audio files anywhere under DIR, any format soundfile reads by these suffixes (`AUDIO_SUFFIXES`), any sample
  rate (resampled to 16 kHz with soxr), mono or not (channels averaged);
- `DIR/transcripts.tsv`: one line per recording, its file stem, a tab, the reference text; blank lines and lines
  starting with `#` are skipped.

Every stem listed must have exactly one audio file and every audio file a line: a recording without a reference
(or the other way round) would silently drop out of the figures. Each problem is a `TranscribedFolderError`
naming the file (and the line). Plain Python with numpy, soundfile and soxr.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from voicelab.pcm import SAMPLE_RATE

TRANSCRIPTS_FILE = "transcripts.tsv"
AUDIO_SUFFIXES = (".wav", ".flac", ".ogg")
LINE_FORMAT = "file stem<TAB>reference text"


class TranscribedFolderError(ValueError):
    """The folder cannot be read as recordings with transcripts; the message names the file (and line)."""


@dataclass(frozen=True)
class TranscribedRecording:
    """One audio file of the folder and its reference text."""

    stem: str
    path: Path
    text: str  # the reference, as written in the transcripts file


def read_transcripts(path: Path) -> dict[str, tuple[int, str]]:
    """{stem: (line number, text)} of a transcripts file; a bad or repeated line is an error naming it."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise TranscribedFolderError(f"{path}: not found (one line per recording: {LINE_FORMAT})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise TranscribedFolderError(f"{path}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    out: dict[str, tuple[int, str]] = {}
    for n, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        stem, tab, text = line.partition("\t")
        stem, text = stem.strip(), text.strip()
        if not tab or not stem or not text or "\t" in text:
            raise TranscribedFolderError(f"{path}:{n}: expected '{LINE_FORMAT}'")
        if stem in out:
            raise TranscribedFolderError(f"{path}:{n}: {stem} is listed twice (first on line {out[stem][0]})")
        out[stem] = (n, text)
    if not out:
        raise TranscribedFolderError(f"{path}: lists no recordings ({LINE_FORMAT})")
    return out


def audio_files(folder: Path) -> list[Path]:
    """The audio files under `folder` (hidden ones left out), sorted."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in AUDIO_SUFFIXES
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def pair_recordings(folder: Path) -> list[TranscribedRecording]:
    """Each transcript line with its one audio file, in the file's order; any mismatch is an error."""
    if not folder.is_dir():
        raise TranscribedFolderError(f"{folder}: not a folder (--data takes a folder of recordings and "
                                     f"{TRANSCRIPTS_FILE})")
    tsv = folder / TRANSCRIPTS_FILE
    lines = read_transcripts(tsv)
    by_stem: dict[str, list[Path]] = {}
    for p in audio_files(folder):
        if p.stem not in lines:
            raise TranscribedFolderError(f"{p}: no line for {p.stem} in {tsv}")
        by_stem.setdefault(p.stem, []).append(p)
    out: list[TranscribedRecording] = []
    for stem, (n, text) in lines.items():
        found = by_stem.get(stem, [])
        if len(found) != 1:
            what = "no audio file" if not found else f"{len(found)} audio files ({', '.join(map(str, found))})"
            raise TranscribedFolderError(f"{tsv}:{n}: {stem} has {what}; one {'/'.join(AUDIO_SUFFIXES)} file "
                                         f"under {folder} is expected")
        out.append(TranscribedRecording(stem, found[0], text))
    return out


def load_audio(path: Path, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Mono float32 samples at `sample_rate`; an unreadable or empty file is an error naming it."""
    try:
        audio, rate = sf.read(str(path), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, OSError, ValueError) as e:
        reason = (str(e).splitlines() or ["unknown format"])[0]
        raise TranscribedFolderError(f"{path}: cannot read the audio ({reason})") from None
    if audio.shape[0] == 0:
        raise TranscribedFolderError(f"{path}: holds no samples")
    mono = audio.mean(axis=1)  # channels of one recording: their average is the voice
    if rate != sample_rate:
        mono = soxr.resample(mono, rate, sample_rate)
    return np.ascontiguousarray(mono, dtype=np.float32)
