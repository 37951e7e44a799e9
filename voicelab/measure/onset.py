"""Acoustic onset and offset of speech in a mono clip (the onset rule of docs/metrics.md).

The rule is pipecat's TTFA onset detector (``pipecat.audio.utils.detect_speech_onset``):
RMS of a 10 ms window (mean removed, so a DC offset carries no energy), centred on every
1 ms hop, compared with a -40 dBFS gate; the **onset** is the centre of the first window of a
run of active windows lasting at least 50 ms. This module reimplements it in pure numpy (no
pipecat import) and adds the other side: the **last audible sample** of a stretch is the
centre of its last active window. For a loud sound both marks fall up to half a window
(5 ms) outside the true edges: the window hears the sound before its centre reaches it.

One :class:`OnsetRule` drives every function, so the fixture loader (caller truth), the
output recorder and the truth analyzer measure the same way. Times are seconds from the
first sample of ``samples``. Input is mono float in [-1, 1] or int16 PCM.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OnsetRule:
    window_ms: float = 10.0
    hop_ms: float = 1.0
    gate_dbfs: float = -40.0
    min_voiced_ms: float = 50.0


RULE = OnsetRule()
# Silences shorter than this inside speech (between words, stop closures) do not split it.
DEFAULT_MIN_GAP_S = 0.3


def _as_float(samples: np.ndarray) -> np.ndarray:
    a = np.asarray(samples)
    if a.ndim != 1:
        raise ValueError(f"expected mono samples (1-D array), got shape {a.shape}")
    if a.dtype == np.int16:
        return a.astype(np.float64) / 32768.0
    return a.astype(np.float64, copy=False)


def _hop(sample_rate: int, rule: OnsetRule) -> int:
    return max(1, round(sample_rate * rule.hop_ms / 1000))


def active_windows(samples: np.ndarray, sample_rate: int, rule: OnsetRule = RULE) -> np.ndarray:
    """Boolean per hop position k (window centred on sample k*hop): RMS above the gate."""
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    x = _as_float(samples)
    frame = max(1, round(sample_rate * rule.window_ms / 1000))
    hop = _hop(sample_rate, rule)
    if x.size < frame:
        return np.zeros(0, dtype=bool)
    pad = frame // 2
    padded = np.pad(x, pad, mode="edge")  # as pipecat: a constant start is not read as a step
    # Running sums give every window's mean and mean square in O(n).
    s1 = np.concatenate(([0.0], np.cumsum(padded)))
    s2 = np.concatenate(([0.0], np.cumsum(padded * padded)))
    starts = np.arange(0, padded.size - frame + 1, hop)
    mean = (s1[starts + frame] - s1[starts]) / frame
    msq = (s2[starts + frame] - s2[starts]) / frame
    var = np.maximum(msq - mean * mean, 0.0)
    gate = 10.0 ** (rule.gate_dbfs / 20.0)
    return var > gate * gate


def _runs(active: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of True as (first, last) indices, inclusive."""
    if active.size == 0:
        return []
    edges = np.diff(np.concatenate(([0], active.astype(np.int8), [0])))
    firsts = np.flatnonzero(edges == 1)
    lasts = np.flatnonzero(edges == -1) - 1
    return list(zip(firsts.tolist(), lasts.tolist(), strict=True))


def _stretches(
    active: np.ndarray, hop_s: float, min_gap_s: float
) -> list[list[tuple[int, int]]]:
    """Active runs grouped into stretches: runs closer than min_gap_s join one stretch."""
    groups: list[list[tuple[int, int]]] = []
    for run in _runs(active):
        if groups and (run[0] - groups[-1][-1][1]) * hop_s < min_gap_s:
            groups[-1].append(run)
        else:
            groups.append([run])
    return groups


def segments(
    samples: np.ndarray,
    sample_rate: int,
    min_gap_s: float = DEFAULT_MIN_GAP_S,
    rule: OnsetRule = RULE,
) -> list[tuple[float, float]]:
    """Speech stretches as (onset_s, offset_s).

    Audible runs closer than ``min_gap_s`` form one stretch; a stretch counts as speech only if
    it holds a run of at least ``min_voiced_ms`` (clicks and blips do not). Its onset is the
    onset rule applied inside it (the start of that first long run); its offset is the last
    audible sample of the stretch, short trailing runs included (a final consonant is audible).
    """
    hop = _hop(sample_rate, rule)
    hop_s = hop / sample_rate
    min_windows = max(1, round(rule.min_voiced_ms / rule.hop_ms))
    out: list[tuple[float, float]] = []
    for group in _stretches(active_windows(samples, sample_rate, rule), hop_s, min_gap_s):
        long_runs = [r for r in group if r[1] - r[0] + 1 >= min_windows]
        if long_runs:
            out.append((long_runs[0][0] * hop_s, group[-1][1] * hop_s))
    return out


def onsets(
    samples: np.ndarray,
    sample_rate: int,
    min_gap_s: float = DEFAULT_MIN_GAP_S,
    rule: OnsetRule = RULE,
) -> list[float]:
    """Acoustic onset of every speech stretch (see :func:`segments`), in seconds.

    The first one equals pipecat's ``detect_speech_onset`` on the same audio.
    """
    return [on for on, _ in segments(samples, sample_rate, min_gap_s, rule)]


def first_onset(
    samples: np.ndarray, sample_rate: int, after_s: float = 0.0, rule: OnsetRule = RULE
) -> float | None:
    """First onset at or after ``after_s`` (e.g. the bot's reply after the caller stopped)."""
    hop = _hop(sample_rate, rule)
    first = max(0, int(np.ceil(after_s * sample_rate / hop - 1e-9)))
    active = active_windows(samples, sample_rate, rule)[first:]
    min_windows = max(1, round(rule.min_voiced_ms / rule.hop_ms))
    for a, b in _runs(active):
        if b - a + 1 >= min_windows:
            return (first + a) * hop / sample_rate
    return None


def speech_span(
    samples: np.ndarray,
    sample_rate: int,
    min_gap_s: float = DEFAULT_MIN_GAP_S,
    rule: OnsetRule = RULE,
) -> tuple[float, float] | None:
    """(onset of the first speech stretch, last audible sample of the last), or None if no speech.

    A caller clip is one utterance, so its pauses are inside the span.
    """
    segs = segments(samples, sample_rate, min_gap_s, rule)
    if not segs:
        return None
    return segs[0][0], segs[-1][1]


def last_audible(
    samples: np.ndarray,
    sample_rate: int,
    after_s: float,
    min_gap_s: float = DEFAULT_MIN_GAP_S,
    rule: OnsetRule = RULE,
) -> float | None:
    """Last audible sample of the sound playing at ``after_s`` (the bot's stop after a barge-in).

    Walks forward from ``after_s`` through audible windows until the first silence of at least
    ``min_gap_s``, and returns the time of the last audible window before that silence. Any
    audible window counts here, however short: a bot cut off mid-syllable is still heard.
    Returns None when the audio is already silent at ``after_s`` and stays so for ``min_gap_s``.
    """
    hop = _hop(sample_rate, rule)
    hop_s = hop / sample_rate
    for group in _stretches(active_windows(samples, sample_rate, rule), hop_s, min_gap_s):
        start, end = group[0][0] * hop_s, group[-1][1] * hop_s
        if end < after_s:  # over before after_s (a later stretch is a new sound)
            continue
        if start >= after_s + min_gap_s:
            return None
        return end
    return None
