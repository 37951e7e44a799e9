"""Smart-turn scored through every labelled silence, every 100 ms, on the audio up to that instant: the scores of
`voicelab bench turns --mode eot`, computed once per case and cached on disk.

As LiveKit's eot-bench scores a model (github.com/livekit/eot-bench): for each labelled silence (a mid-turn
pause, until the caller speaks again; a true end, through `END_SCORED_MS` of silence) and each instant
k x 100 ms into it, smart-turn v3.2 (pipecat's `LocalSmartTurnAnalyzerV3`, the packaged
`smart-turn-v3.2-cpu.onnx`, its own features and 8 s window) reads the case's audio up to that instant, trailing
silence included, as the pipeline's models hear it (through int16). Past the end of a recording the silence goes
on (zeros). Each pass's wall time is kept: the CPU cost of listening through a second of silence.

Heavy imports (pipecat, onnxruntime) come with `voicelab.turnbench.scores.Models`; the cache key is the case's
content key and `EOT_SCORER_VERSION`; the spans scored are stored with the scores, and a case whose labels
changed is scored again.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from voicelab.pcm import as_heard
from voicelab.rules.listen_through import STEP_MS
from voicelab.turnbench.audio import SR, CaseAudio
from voicelab.turnbench.eot import END_SCORED_MS, ScoredCase, SilenceSpan, spans_of
from voicelab.turnbench.replay import DEFAULT_VAD, FRAME_S
from voicelab.turnbench.scores import MAX_SMART_S, PRE_SPEECH_S, Models, cached, rescore_words

EOT_SCORER_VERSION = 1


def _window(heard: np.ndarray, t_s: float) -> np.ndarray:
    """The audio up to `t_s` (its last `MAX_SMART_S`), silence after the recording's end."""
    end = round(t_s * SR)
    start = max(0, end - round(MAX_SMART_S * SR))
    seg = heard[start:min(end, heard.size)]
    if end > heard.size:
        seg = np.concatenate([seg, np.zeros(end - max(start, heard.size), np.float32)])
    return seg.astype(np.float32)


def score_spans(models: Models, audio: np.ndarray, spans: Sequence[SilenceSpan]) -> tuple[list[np.ndarray], list[float]]:
    """Per span, smart-turn's P(complete) at each of its instants; and every pass's wall time (ms)."""
    heard = as_heard(audio)
    smart = models.smart()
    out: list[np.ndarray] = []
    ms: list[float] = []
    for sp in spans:
        ps = []
        for k in range(1, sp.instants + 1):
            seg = _window(heard, sp.start_s + k * STEP_MS / 1000.0)
            t0 = time.perf_counter()
            ps.append(float(smart._predict_endpoint(seg)["probability"]))
            ms.append((time.perf_counter() - t0) * 1000.0)
        out.append(np.asarray(ps, dtype=np.float32))
    return out, ms


def _spans_doc(spans: Sequence[SilenceSpan]) -> list[list[Any]]:
    return [[sp.label, round(sp.start_s, 4), sp.instants] for sp in spans]


def cached_scores(root: Path, key: str, models: Models, make: Callable[[], CaseAudio | np.ndarray],
                  spans: Sequence[SilenceSpan]) -> tuple[list[np.ndarray], list[float]]:
    """The case's span scores from the cache under `key` (scored first on a miss, or when its spans changed);
    `make` gives the case's audio. Returns the scores and the pass times measured when they were computed."""
    path = root / f"eot-v{EOT_SCORER_VERSION}" / f"{key.replace('/', '_')}.npz"
    want = _spans_doc(spans)
    if path.is_file():
        with np.load(path, allow_pickle=False) as z:
            doc = json.loads(str(z["doc"]))
            if doc["spans"] == want:
                return [z[f"s{i}"] for i in range(len(spans))], list(map(float, z["ms"]))
    made = make()
    audio = made.audio if isinstance(made, CaseAudio) else made
    scores, ms = score_spans(models, audio, spans)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez_compressed(tmp, doc=np.asarray(json.dumps({"spans": want})), ms=np.asarray(ms, np.float32),
                        **{f"s{i}": s for i, s in enumerate(scores)})
    tmp.replace(path)  # atomic: a killed job leaves no half-written entry
    return scores, ms


def _once(make: Callable[[], CaseAudio]) -> Callable[[], CaseAudio]:
    """`make`, called at most once (a case without labelled points is made for its points, then scored)."""
    made: list[CaseAudio] = []

    def once() -> CaseAudio:
        if not made:
            made.append(make())
        return made[0]

    return once


def score_refs(refs: Sequence[Any], cache: Path, threads: int = 2,
               progress: Callable[[str], None] | None = None) -> list[ScoredCase]:
    """The scored silences of every turn case of `refs` (`voicelab.turnbench.turn_bench.CaseRef`: its labelled
    points, or its audio's where it has none yet), scoring the ones the cache lacks."""
    models = Models(threads)
    out = []
    t0 = time.monotonic()
    turns = [r for r in refs if r.kind == "turn"]
    for i, r in enumerate(turns):
        make = _once(r.make)
        points = r.points if r.points is not None else make().points
        spans = spans_of(points)
        scores, ms = cached_scores(cache, r.key, models, make, spans)
        out.append(ScoredCase(r.id, r.group, spans, scores, ms))
        if progress is not None and (i + 1) % 25 == 0:
            progress(f"{i + 1}/{len(turns)} cases scored through their silences ({time.monotonic() - t0:.0f} s)")
    return out


__all__ = ["Models", "cached", "cached_listen", "cached_scores", "listen_scores", "rescore_words", "score_refs",
           "score_spans"]  # the bench's heavy half, imported in one place

LISTEN_VERSION = 1


def listen_scores(models: Models, audio: np.ndarray, starts: Sequence[float], stops: Sequence[float],
                  stop_secs: float = DEFAULT_VAD.stop_secs) -> list[np.ndarray]:
    """What `--turn listen` scores live, per stop of the default VAD: smart-turn on the window pipecat's
    analyzer holds (from the turn's first VAD start minus `pre_speech_ms` and `start_secs`, to the instant, its
    last 8 s) at each grid instant of the silence from the first one at or after the stop (counted from the
    estimated speech end, the stop minus `stop_secs`) until the VAD starts again or `END_SCORED_MS`."""
    heard = as_heard(audio)
    smart = models.smart()
    out = []
    k0 = max(1, math.ceil(round(stop_secs * 1000.0, 6) / STEP_MS))
    for t_stop in stops:
        first = next((s for s in starts if s < t_stop), None)
        nxt = next((s for s in starts if s > t_stop), math.inf)
        ps: list[float] = []
        if first is not None:
            # its window opens `pre_speech_ms` and `start_secs` before the first frame appended as speech, the
            # frame after the one that started the VAD
            a0 = max(0, round((first + FRAME_S - PRE_SPEECH_S - DEFAULT_VAD.start_secs) * SR))
            speech_end = t_stop - stop_secs
            for k in range(k0, END_SCORED_MS // STEP_MS + 1):
                t = speech_end + k * STEP_MS / 1000.0
                if t >= nxt:
                    break
                # the analyzer holds the frames appended by then: at the stop, the stop's own frame; at a later
                # instant, the frames completed before it (the one ending at the instant is not in yet)
                end = t if k == k0 else t - FRAME_S
                seg = _window(heard, end)
                seg = seg[max(0, seg.size - (round(end * SR) - a0)):]  # not before the analyzer's window opens
                ps.append(float(smart._predict_endpoint(seg)["probability"]))
        out.append(np.asarray(ps, dtype=np.float32))
    return out


def cached_listen(root: Path, key: str, models: Models, make: Callable[[], CaseAudio],
                  starts: Sequence[float], stops: Sequence[float]) -> list[np.ndarray]:
    """`listen_scores` of a case from the cache under `key` (scored first on a miss or when its stops changed)."""
    path = root / f"listen-v{LISTEN_VERSION}" / f"{key.replace('/', '_')}.npz"
    want = [round(float(t), 4) for t in stops]
    if path.is_file():
        with np.load(path, allow_pickle=False) as z:
            if json.loads(str(z["doc"]))["stops"] == want:
                return [z[f"s{i}"] for i in range(len(want))]
    scores = listen_scores(models, make().audio, starts, stops)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez_compressed(tmp, doc=np.asarray(json.dumps({"stops": want})), **{f"s{i}": s for i, s in enumerate(scores)})
    tmp.replace(path)
    return scores
