"""What the models say about each case, computed once and cached on disk: the expensive half of the bench.

Per case (`CaseAudio`): Silero's confidence and pipecat's smoothed volume for every 32 ms window (the VAD that
every strategy rides on, run exactly as pipecat's `SileroVADAnalyzer` runs: 20 ms frames, the lab's shared
model session), the window's RMS (the pause trigger's loudness gate), and at each stop of the default VAD
(start and stop 0.2 s):

- smart-turn v3's P(complete) on the audio pipecat's analyzer would hold (from the first VAD start minus
  `pre_speech_ms` 0.5 s and the VAD's `start_secs`, to the stop; its last 8 s), and the pass's wall time;
- Whisper tiny.en's final reading, as the lab's STT service feeds it (each stretch of speech from its VAD start
  minus the 0.7 s pre-roll and `start_secs`, the turn's stretches joined), with the callers' language model at
  the default weight, Whisper's own confidence figures and the pass's wall time; and the reading the early final
  would give (the last stretch cut at the VAD's first silent window, `--stt-early-final`);
- the decision model's P(complete) on each reading (`turn_complete`), and for barge-in cases P(interruption).

The cache key is the case's content hash and `SCORER_VERSION`: the folder can be deleted at any time. Heavy
imports (pipecat, onnxruntime, ctranslate2, torch) are this module's: the bench imports it only when it needs
scores, and the models load only when a case is not cached yet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from engines.decision.model import load_decision_model
from voicelab.pcm import as_heard, to_int16
from voicelab.pipeline.turns.turn_models import SharedSileroVADAnalyzer, TurnModels
from voicelab.speech.caller_lm import DEFAULT_LM_WEIGHT
from voicelab.speech.recognizers import make_recognizer
from voicelab.speech.reliability import words_reliable
from voicelab.turnbench.audio import SR, CaseAudio
from voicelab.turnbench.cases import CACHE_ROOT
from voicelab.turnbench.replay import (
    DEFAULT_VAD,
    WINDOW,
    StopScores,
    speaking,
    trace_of,
    vad_events,
)

__all__ = ["DEFAULT_CACHE", "SCORER_VERSION", "Models", "cached", "rescore_words", "score_barge", "score_turn",
           "trace_of"]

SCORER_VERSION = 4  # 4: smart-turn and Whisper read the clip through int16, as in the pipeline
DEFAULT_CACHE = CACHE_ROOT
PRE_SPEECH_S = 0.5  # SmartTurnParams.pre_speech_ms
MAX_SMART_S = 8.0  # SmartTurnParams.max_duration_secs
STT_PREROLL_S = 0.7  # WhisperSTTService's preroll_s


class Models:
    """The models, loaded on first use (the lab's loaders and settings)."""

    def __init__(self, threads: int = 2) -> None:
        self.threads = threads
        self._turn_models: Any = None
        self._smart: Any = None
        self._whisper: Any = None
        self._decision: Any = None

    def _tm(self) -> Any:
        if self._turn_models is None:
            self._turn_models = TurnModels()
        return self._turn_models

    def silero(self, on_window: Callable[[float, float], None]) -> Any:
        class WindowRecordingVAD(SharedSileroVADAnalyzer):
            # record what the state machine sees: the model's confidence and the smoothed volume of each window
            _conf = 0.0

            def voice_confidence(self, buffer: bytes) -> float:
                self._conf = float(np.asarray(super().voice_confidence(buffer)).item())
                return self._conf

            def _get_smoothed_volume(self, audio: bytes) -> float:
                v = super()._get_smoothed_volume(audio)
                on_window(self._conf, float(v))
                return v

        vad = WindowRecordingVAD(self._tm().silero_session(), sample_rate=SR)
        vad.set_sample_rate(SR)
        return vad

    def smart(self) -> Any:
        if self._smart is None:
            self._smart = self._tm().smart_turn()
            self._smart.set_sample_rate(SR)
        return self._smart

    def whisper(self) -> Any:
        if self._whisper is None:
            self._whisper = make_recognizer("whisper", self.threads, lm_weight=DEFAULT_LM_WEIGHT)
        return self._whisper

    def decision(self) -> Any:
        if self._decision is None:
            self._decision = load_decision_model()
        return self._decision


def silero_windows(models: Models, audio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per window: Silero's confidence and pipecat's smoothed volume, fed in 20 ms frames as the pipeline does."""
    conf: list[float] = []
    vol: list[float] = []
    vad = models.silero(lambda c, v: (conf.append(c), vol.append(v)))
    pcm = to_int16(audio)
    for i in range(0, pcm.size - 319, 320):
        vad._run_analyzer(pcm[i:i + 320].tobytes())
    return np.asarray(conf, dtype=np.float32), np.asarray(vol, dtype=np.float32)


def window_rms_dbfs(audio: np.ndarray, n_windows: int) -> np.ndarray:
    """The RMS of each Silero window in dBFS (the pause trigger's gate: `LevelGatedVAD`)."""
    x = np.asarray(audio[:n_windows * WINDOW], dtype=np.float64).reshape(-1, WINDOW)
    return (20.0 * np.log10(x.std(axis=1) + 1e-9)).astype(np.float32)


def _cut(audio: np.ndarray, a: float, b: float) -> np.ndarray:
    return audio[max(0, round(a * SR)):max(0, round(b * SR))]


def stt_audio(audio: np.ndarray, starts: list[float], stops: list[float], upto: float, start_secs: float = 0.2,
              preroll_s: float = STT_PREROLL_S) -> np.ndarray:
    """The audio the lab's STT service has fed its stream by `upto`: each stretch from its VAD start minus the
    pre-roll (never before the last stop, whose audio the stream already has) to its stop (or `upto`)."""
    parts = []
    prev_stop = 0.0
    for s in starts:
        if s >= upto:
            break
        stop = next((t for t in stops if t > s), upto)
        parts.append(_cut(audio, max(prev_stop, s - preroll_s - start_secs), min(stop, upto)))
        prev_stop = stop
    return np.concatenate(parts) if parts else np.zeros(0, np.float32)


def _reading(models: Models, audio: np.ndarray) -> dict[str, Any]:
    t = models.whisper().transcribe(audio.astype(np.float32))
    ws = t.windows
    lp = (sum(w.avg_logprob * (w.tokens + 1) for w in ws) / sum(w.tokens + 1 for w in ws)) if ws else None
    cr = max((w.compression_ratio for w in ws), default=None)
    ns = min((w.no_speech_prob for w in ws), default=None)
    return {"text": t.text, "ms": t.ms, "avg_logprob": lp, "reliable": words_reliable(lp, cr, ns)}


def _ask_model(models: Models, task: str, text: str) -> tuple[float | None, float]:
    if not text:
        return None, 0.0
    d = models.decision().ask(task, text)
    return float(d.p_yes), float(d.ms)


def score_turn(models: Models, case: CaseAudio, readings: bool = True) -> dict[str, Any]:
    """The case's VAD windows and, at each stop of the default VAD, smart-turn's P(complete) and (`readings`)
    the recogniser's readings with the decision model's verdicts (without: no words)."""
    conf, vol = silero_windows(models, case.audio)
    ev = vad_events(speaking(conf, vol))
    starts = [e.t_s for e in ev if e.kind == "start"]
    stops = [e for e in ev if e.kind == "stop"]
    heard = as_heard(case.audio)  # the samples the pipeline's models read: smart-turn is not robust to the last bit
    out_stops = []
    for e in stops:
        first = next((s for s in starts if s < e.t_s), None)
        if first is None:
            continue
        a0 = first - PRE_SPEECH_S - DEFAULT_VAD.start_secs
        seg = _cut(heard, a0, e.t_s)[-round(MAX_SMART_S * SR):]
        t0 = time.perf_counter()
        p = float(models.smart()._predict_endpoint(seg.astype(np.float32))["probability"])
        smart_ms = (time.perf_counter() - t0) * 1000.0
        stop_times = [s.t_s for s in stops]
        if not readings:
            none = {"text": "", "ms": 0.0, "avg_logprob": None, "reliable": True}
            final, early = none, none
        else:
            final = _reading(models, stt_audio(heard, starts, stop_times, e.t_s))
            early_stops = [t for t in stop_times if t < e.t_s] + [e.first_silent_s or e.t_s]
            early = _reading(models, stt_audio(heard, starts, early_stops, e.first_silent_s or e.t_s))
        tp, dms = _ask_model(models, "turn_complete", final["text"])
        etp, _ = _ask_model(models, "turn_complete", early["text"])
        out_stops.append(asdict(StopScores(
            t_s=e.t_s, first_silent_s=e.first_silent_s or e.t_s, audio_p=p, smart_ms=smart_ms, text=final["text"],
            text_p=tp, stt_ms=final["ms"], decision_ms=dms, reliable=final["reliable"],
            early_text=early["text"], early_text_p=etp, early_stt_ms=early["ms"])) | {
                "avg_logprob": final["avg_logprob"]})
    return {"conf": conf, "vol": vol, "starts": starts, "stops": out_stops}


def score_barge(models: Models, case: CaseAudio) -> dict[str, Any]:
    conf, vol = silero_windows(models, case.audio)
    ev = vad_events(speaking(conf, vol))
    starts = [e.t_s for e in ev if e.kind == "start"]
    stops = [e.t_s for e in ev if e.kind == "stop"]
    fixed = case.meta.get("reading")
    if fixed is not None or not stops:
        reading = {"text": fixed or "", "ms": 0.0, "avg_logprob": None, "reliable": True}
    else:
        reading = _reading(models, stt_audio(as_heard(case.audio), starts, stops, stops[-1]))
    ip, ims = _ask_model(models, "interruption", reading["text"])
    cp, _ = _ask_model(models, "turn_complete", reading["text"])
    return {"conf": conf, "vol": vol, "rms_dbfs": window_rms_dbfs(case.audio, conf.size), "starts": starts,
            "stops": stops, "reading": reading, "interruption_p": ip, "complete_p": cp, "decision_ms": ims}


def rescore_words(docs: list[dict[str, Any]], folder: Path | None = None) -> None:
    """Ask the decision model (the shipped one, or `folder` of the same layout) about the cached readings, in
    place: each turn stop's P(complete) on its final and early readings, each barge case's P(interruption) and
    P(complete). The readings, audio scores and pass times stay the cache's; the decision model's pass time is
    re-measured. Each distinct reading is asked once."""
    models = Models()
    models._decision = load_decision_model(folder)
    memo: dict[tuple[str, str], tuple[float | None, float]] = {}

    def _ask(models: Models, task: str, text: str) -> tuple[float | None, float]:
        if (task, text) not in memo:
            memo[(task, text)] = _ask_model(models, task, text)
        return memo[(task, text)]

    for doc in docs:
        if doc.get("kind") == "barge":
            text = doc["reading"]["text"]
            doc["interruption_p"], doc["decision_ms"] = _ask(models, "interruption", text)
            doc["complete_p"], _ = _ask(models, "turn_complete", text)
            continue
        for stop in doc["stops"]:
            stop["text_p"], stop["decision_ms"] = _ask(models, "turn_complete", stop["text"])
            stop["early_text_p"], _ = _ask(models, "turn_complete", stop.get("early_text") or "")


def cached(root: Path, key: str, kind: str, models: Models, make: Callable[[], CaseAudio]) -> dict[str, Any]:
    """A case's scores (and its points, length and description) from the cache under `key`; on a miss, the
    case is made (`make`: synthesis or loading), scored and stored first."""
    path = root / f"v{SCORER_VERSION}" / kind / f"{key.replace('/', '_')}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as z:
            doc = json.loads(str(z["doc"]))
            for name in z.files:
                if name != "doc":
                    doc[name] = z[name]
        return doc
    case = make()
    doc = score_turn(models, case) if kind == "turn" else score_barge(models, case)
    doc |= {"id": case.id, "group": case.group, "duration_s": case.duration_s, "meta": case.meta,
            "points": [asdict(p) for p in case.points]}
    arrays = {k: v for k, v in doc.items() if isinstance(v, np.ndarray)}
    rest = {k: v for k, v in doc.items() if not isinstance(v, np.ndarray)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez_compressed(tmp, doc=np.asarray(json.dumps(rest)), **arrays)
    tmp.replace(path)  # atomic: a killed job leaves no half-written entry
    return doc


