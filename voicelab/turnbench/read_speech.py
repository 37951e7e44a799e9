"""The bench's `human-read` group: LibriSpeech utterances of the human set (`audio_fixtures/human/speech/`, with
transcripts, and `audio_fixtures/human/read/`, without), each one turn. numpy and the onset rule; no pipecat, no torch.

Read speech is not conversation, so it is a group of its own, never mixed into `human`: each utterance is one
turn whose end is its last speech offset, and each of its silences of at least `MIN_PAUSE_S` (0.1 s) between
stretches of speech is a mid-turn pause (`voicelab.turnbench.human_labels.speech_spans`: the onset rule, the
gate 20 dB under the utterance's speech level). An utterance is raised to a -3 dBFS peak, as every bench case,
and followed by `TAIL_S` of silence. The labels come from the audio alone each time the bench runs (no labels
file); the cache key is the content hash of the played audio.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from voicelab.fixtures.human_set import HUMAN_ROOT
from voicelab.turnbench.audio import SR, TAIL_S, CaseAudio, read_mono
from voicelab.turnbench.human_labels import MIN_PAUSE_S, normalised, speech_spans
from voicelab.turnbench.replay import Point

SPEECH_DIR = HUMAN_ROOT / "speech"
READ_DIRS = (SPEECH_DIR, HUMAN_ROOT / "read")  # the read speech, with and without reference transcripts


class ReadSpeechError(Exception):
    """An utterance that cannot be read or holds no speech; the message names the file."""


def utterance_points(spans: list[tuple[float, float]]) -> list[Point]:
    """One turn's points from its speech stretches (ordered, apart by >= `MIN_PAUSE_S`): a pause in every gap,
    the end at the last stretch's offset."""
    if not spans:
        return []
    pauses = [Point("pause", b, a2) for (_, b), (a2, _) in zip(spans, spans[1:], strict=False)
              if a2 - b >= MIN_PAUSE_S - 1e-9]
    return [*pauses, Point("end", spans[-1][1])]


def utterance_case(path: Path, root: Path, group: str = "human-read") -> CaseAudio:
    clip = normalised(read_mono(path, ReadSpeechError))
    points = utterance_points(speech_spans(clip))
    if not points:
        raise ReadSpeechError(f"{path}: no speech by the onset rule")
    audio = np.concatenate([clip, np.zeros(round(TAIL_S * SR), np.float32)])
    digest = hashlib.sha1(audio.tobytes()).hexdigest()[:16]
    rel = path.relative_to(root).with_suffix("").as_posix()
    return CaseAudio(rel, group, audio, points, {"speaker": path.parent.name}, f"hr-{digest}")


def utterances(root: Path = SPEECH_DIR) -> list[Path]:
    """Every FLAC utterance under the read-speech folder, sorted (none when the folder is absent)."""
    return sorted(root.rglob("*.flac")) if root.is_dir() else []


def load_cases(roots: tuple[Path, ...] = READ_DIRS, group: str = "human-read") -> list[CaseAudio]:
    return [utterance_case(p, root, group) for root in roots for p in utterances(root)]
