"""The models behind the VAD, smart-turn and the pause barge-in's judge, loaded once, shared by calls.

pipecat's `SileroVADAnalyzer` and `LocalSmartTurnAnalyzerV3` each open their own onnxruntime
`InferenceSession` (measured: ~9 MB for Silero, ~27 MB for smart-turn after one inference), a live session
needs three of them (the turn VAD, the onset VAD of `--barge-in pause`, smart-turn), and `PauseThenDecide`
loads its own decision model (~3 MB of weights) unless given a judge. A finished pipeline is freed only by
Python's cyclic garbage collector (its processors, tasks and handlers refer to each other), whose full passes
are rare, so with per-session models dozens of dead sessions' models piled up (+19 MB of RSS per
connect/disconnect). Shared, the models are loaded once per server.

Sharing is safe: `InferenceSession.run` is thread-safe, the decision model's questions are stateless forward
passes, and what changes per stream (Silero's recurrent state and context, smart-turn's audio buffer) stays
in the per-call analyzer built around the shared session.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from pipecat.audio.turn.smart_turn.base_smart_turn import BaseSmartTurn, SmartTurnParams
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.vad.silero import SileroOnnxModel, SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams
from pipecat.utils.env import env_truthy

from engines.decision.model import DecisionModel
from voicelab.pcm import SAMPLE_RATE
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.turns.barge_in_strategy import default_judge, model_judges
from voicelab.rules.barge_in import Judge
from voicelab.rules.turn_kinds import INTERRUPTION_JUDGE, SMART_TURN


class _SileroState(SileroOnnxModel):
    """Silero's per-stream state (recurrent state, context) around a shared `InferenceSession`."""

    def __init__(self, session: Any) -> None:  # no super().__init__: that would open a session of its own
        self.session = session
        self.reset_states()
        self.sample_rates = [8000, 16000]


class SharedSileroVADAnalyzer(SileroVADAnalyzer):
    """`SileroVADAnalyzer` on a shared model session; its state is its own."""

    def __init__(self, session: Any, *, sample_rate: int | None = None, params: VADParams | None = None) -> None:
        VADAnalyzer.__init__(self, sample_rate=sample_rate, params=params)  # skip the model load
        self._model = _SileroState(session)
        self._windows_since_reset = 0  # as SileroVADAnalyzer.__init__ sets them
        self._low_confidence_windows = 0


class SharedSmartTurnAnalyzer(LocalSmartTurnAnalyzerV3):
    """`LocalSmartTurnAnalyzerV3` on a shared model session; its audio buffer is its own."""

    def __init__(self, session: Any, *, sample_rate: int | None = None,
                 params: SmartTurnParams | None = None) -> None:
        BaseSmartTurn.__init__(self, sample_rate=sample_rate, params=params)  # skip the model load
        self._log_data = env_truthy("PIPECAT_SMART_TURN_LOG_DATA", default=False)
        self._session = session


class TurnModels:
    """Silero's and smart-turn's `InferenceSession`s and the barge-in judge, each loaded on first use
    (thread-safe) and then shared.

    The sessions are opened by pipecat's own analyzers (same files, same session options), then dropped.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._silero: Any = None
        self._smart_turn: Any = None
        self._judge: tuple[str, Judge, Judge | None] | None = None

    def silero_session(self) -> Any:
        with self._lock:
            if self._silero is None:
                self._silero = SileroVADAnalyzer()._model.session
            return self._silero

    def smart_turn_session(self) -> Any:
        with self._lock:
            if self._smart_turn is None:
                analyzer = LocalSmartTurnAnalyzerV3()
                # onnxruntime's first run is slow: pay it here, not in a caller's first turn end
                analyzer._predict_endpoint(np.zeros(SAMPLE_RATE, dtype=np.float32))  # one second
                self._smart_turn = analyzer._session
            return self._smart_turn

    def interruption_judge(self, decision: DecisionModel | None = None) -> tuple[str, Judge, Judge | None]:
        """(name, P(interruption), P(complete) or None) of the pause barge-in: `decision` (the turn end's model,
        already shared) when given, else `PauseThenDecide`'s own choice (the installed decision model, or the
        word rule), loaded once."""
        if decision is not None:
            return ("decision_model", *model_judges(decision))
        with self._lock:
            if self._judge is None:
                self._judge = default_judge()
            return self._judge

    def preload(self, cfg: PipelineConfig, decision: DecisionModel | None = None) -> None:
        """Load now what `cfg` needs (its VAD, and the models its turn-end and barge-in kinds name in
        `voicelab.rules.turn_kinds`), not in a caller's first seconds."""
        if cfg.vad == "silero":
            self.silero_session()
        if SMART_TURN in cfg.turn_spec().entry.models:
            self.smart_turn_session()
        if INTERRUPTION_JUDGE in cfg.barge_in_spec().entry.models:
            self.interruption_judge(decision)

    def silero_vad(self, *, sample_rate: int | None = None, params: VADParams | None = None) -> VADAnalyzer:
        return SharedSileroVADAnalyzer(self.silero_session(), sample_rate=sample_rate, params=params)

    def smart_turn(self, *, params: SmartTurnParams | None = None) -> LocalSmartTurnAnalyzerV3:
        return SharedSmartTurnAnalyzer(self.smart_turn_session(), params=params)
