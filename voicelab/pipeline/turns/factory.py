"""The VAD and the user-turn strategies (turn start / barge-in, turn end) a configuration asks for.

The kinds and their names are the tables of `voicelab.rules.turn_kinds`; this module is their pipecat side: each
entry's factory (`decide_stop`, `smart_stop`, `timeout_stop`; `pause_start`, `vad_start`, `words_start`) takes the
`TurnParts` of a call and returns its strategies.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pipecat.audio.turn.smart_turn.base_smart_turn import SmartTurnParams
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
)
from pipecat.turns.types import ProcessFrameResult
from pipecat.turns.user_start.min_words_user_turn_start_strategy import MinWordsUserTurnStartStrategy
from pipecat.turns.user_start.transcription_user_turn_start_strategy import TranscriptionUserTurnStartStrategy
from pipecat.turns.user_start.vad_user_turn_start_strategy import VADUserTurnStartStrategy
from pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy import SpeechTimeoutUserTurnStopStrategy
from pipecat.turns.user_stop.turn_analyzer_user_turn_stop_strategy import TurnAnalyzerUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from engines.decision.model import DecisionModel
from voicelab.measure.calllog import CallLog
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.turns.barge_in_strategy import PauseThenDecide
from voicelab.pipeline.turns.turn_end_strategy import DecideTurnEndStopStrategy
from voicelab.pipeline.turns.turn_models import TurnModels
from voicelab.pipeline.turns.vad_webrtc import WebrtcvadAnalyzer
from voicelab.rules.barge_in import ONSET_START_SECS, ONSET_STOP_SECS
from voicelab.rules.turn_end import TurnThresholds
from voicelab.rules.turn_fusion import load_weighing


def vad_analyzer(cfg: PipelineConfig, models: TurnModels | None = None) -> VADAnalyzer:
    """Silero (from the pipecat wheel) or webrtcvad, with the config's start/stop seconds. `models`: Silero's
    model session shared with other calls (None: a model of its own)."""
    params = VADParams(start_secs=cfg.vad_start_secs, stop_secs=cfg.vad_stop_secs)
    if cfg.vad == "webrtc":
        return WebrtcvadAnalyzer(sample_rate=cfg.sample_rate, params=params)
    if models is not None:
        return models.silero_vad(sample_rate=cfg.sample_rate, params=params)
    return SileroVADAnalyzer(sample_rate=cfg.sample_rate, params=params)


class WordsWhileBotSpeaks(MinWordsUserTurnStartStrategy):
    """MinWordsUserTurnStartStrategy that starts the turn at the VAD's start while the bot is silent.

    Word counting only matters while the bot talks (it keeps backchannels from stopping it). When the bot
    is silent, waiting for the recogniser's first words would start the turn late, after the VAD's stop
    even, and the turn-stop strategy would then miss that stop and wait for its timeout.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._bot_talking = False

    async def process_frame(self, frame: Any) -> Any:
        if isinstance(frame, BotStartedSpeakingFrame):
            self._bot_talking = True
        elif isinstance(frame, BotStoppedSpeakingFrame):
            self._bot_talking = False
        elif isinstance(frame, VADUserStartedSpeakingFrame) and not self._bot_talking:
            await self.trigger_user_turn_started()
            return ProcessFrameResult.STOP
        return await super().process_frame(frame)




def onset_vad(cfg: PipelineConfig, models: TurnModels | None = None) -> VADAnalyzer:
    """The early VAD of `--barge-in pause`: the configured VAD with a short start window, ready to analyse."""
    vad = vad_analyzer(replace(cfg, vad_start_secs=ONSET_START_SECS, vad_stop_secs=ONSET_STOP_SECS), models)
    vad.set_sample_rate(cfg.sample_rate)
    return vad


@dataclass
class TurnParts:
    """What a call's turn strategies are built from: the configuration, the tiny decision model of a kind that
    needs it (loaded once per configuration), the call's log (the strategies' verdicts) and the Silero and
    smart-turn sessions and barge-in judge shared with other calls (None: the strategies load their own)."""

    cfg: PipelineConfig
    decision: DecisionModel | None = None
    log: CallLog | None = None
    models: TurnModels | None = None

    def smart_turn(self, params: SmartTurnParams) -> LocalSmartTurnAnalyzerV3:
        if self.models is not None:
            return self.models.smart_turn(params=params)
        return LocalSmartTurnAnalyzerV3(params=params)

    def silence_s(self) -> float:
        """The silence the `--turn` spec gives, in s (its kind must take one)."""
        silence = self.cfg.turn_spec().silence_s
        if silence is None:
            raise ValueError(f"turn: '{self.cfg.turn}' gives no silence")
        return silence


def turn_strategies(cfg: PipelineConfig, *, decision: DecisionModel | None = None,
                    log: CallLog | None = None, models: TurnModels | None = None) -> UserTurnStrategies:
    """Turn start (the barge-in kind's) and turn end (the turn kind's) strategies, from the kinds' tables.

    `decision` is the tiny decision model of a turn kind that needs it (loaded once per configuration); `log`
    gets the strategies' verdicts; `models`: the Silero and smart-turn sessions and the barge-in judge shared
    with other calls (None: their own)."""
    parts = TurnParts(cfg, decision, log, models)
    return UserTurnStrategies(start=cfg.barge_in_spec().entry.build_start_strategies(parts),
                              stop=cfg.turn_spec().entry.build_stop_strategies(parts))


# ---- the turn-end kinds' factories (voicelab.rules.turn_kinds.TURN_KINDS) ---------------------------------

def decide_stop(parts: TurnParts) -> list[Any]:
    """`decide`: smart-turn and the decision model, weighed by `DecideTurnEnd`."""
    # smart-turn's own silence fallback is set past the rule's cap: the rule ends every turn
    analyzer = parts.smart_turn(SmartTurnParams(stop_secs=TurnThresholds().cap_ms / 1000 + 1))
    return [DecideTurnEndStopStrategy(analyzer=analyzer, decision=parts.decision, log=parts.log,
                                      preemptive=parts.cfg.preemptive)]


def fuse_stop(parts: TurnParts) -> list[Any]:
    """`fuse`: the same rule with the fitted weighing of `voicelab.rules.turn_fusion` (its shipped weights)."""
    weighing = load_weighing()
    analyzer = parts.smart_turn(SmartTurnParams(stop_secs=weighing.cap_ms / 1000 + 1))
    return [DecideTurnEndStopStrategy(analyzer=analyzer, decision=parts.decision, log=parts.log,
                                      thresholds=weighing, preemptive=parts.cfg.preemptive)]


def smart_stop(parts: TurnParts) -> list[Any]:
    """`smart[:MS]`: pipecat's smart-turn strategy; an unfinished-sounding turn ends after the spec's silence."""
    return [TurnAnalyzerUserTurnStopStrategy(turn_analyzer=parts.smart_turn(SmartTurnParams(
        stop_secs=parts.silence_s())))]


def timeout_stop(parts: TurnParts) -> list[Any]:
    """`timeout:MS`: pipecat's silence timeout."""
    return [SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=parts.silence_s())]


# ---- the barge-in kinds' factories (voicelab.rules.turn_kinds.BARGE_IN_KINDS) ----------------------------

def pause_start(parts: TurnParts) -> list[Any]:
    """`pause`: pause the bot at the caller's voice, then stop for good or resume."""
    cfg, models = parts.cfg, parts.models
    if models is None:
        return [PauseThenDecide(onset_vad=onset_vad(cfg), log=parts.log)]
    # the judge's model is shared too, not loaded again by each call's strategy
    name, judge, complete = models.interruption_judge(parts.decision)
    pause = PauseThenDecide(judge=judge, complete=complete, onset_vad=onset_vad(cfg, models), log=parts.log)
    pause.judge_name = name
    return [pause]


def vad_start(parts: TurnParts) -> list[Any]:
    """`vad`: any speech starts the caller's turn (and stops the bot)."""
    return [VADUserTurnStartStrategy(), TranscriptionUserTurnStartStrategy()]


def words_start(parts: TurnParts) -> list[Any]:
    """`words:N`: N recognised words while the bot talks."""
    return [WordsWhileBotSpeaks(min_words=parts.cfg.barge_in_words(), use_interim=True)]
