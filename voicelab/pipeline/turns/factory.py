"""The VAD and the user-turn strategies (turn start / barge-in, turn end) a configuration asks for."""

from __future__ import annotations

from dataclasses import replace
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
from voicelab.pipeline.turns.turn_end_strategy import DecidingTurnStopStrategy
from voicelab.pipeline.turns.turn_models import TurnModels
from voicelab.pipeline.turns.vad_webrtc import WebrtcvadAnalyzer
from voicelab.rules.turn_end import TurnThresholds


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


# the pause trigger's VAD: two Silero windows (64 ms) of speech instead of the turn VAD's start_secs; a false
# start costs only a pause that is resumed
ONSET_START_SECS = 0.064
ONSET_STOP_SECS = 0.2


def onset_vad(cfg: PipelineConfig, models: TurnModels | None = None) -> VADAnalyzer:
    """The early VAD of `--barge-in pause`: the configured VAD with a short start window, ready to analyse."""
    vad = vad_analyzer(replace(cfg, vad_start_secs=ONSET_START_SECS, vad_stop_secs=ONSET_STOP_SECS), models)
    vad.set_sample_rate(cfg.sample_rate)
    return vad


def turn_strategies(cfg: PipelineConfig, *, decision: DecisionModel | None = None,
                    log: CallLog | None = None, models: TurnModels | None = None) -> UserTurnStrategies:
    """Turn start (barge-in rule) and turn end (`decide`, smart-turn or a silence timeout) strategies.

    `decision` is the tiny decision model of `--turn decide` (loaded once per configuration); `log` gets its
    verdicts and those of the paused bot; `models`: the Silero and smart-turn sessions and the barge-in judge
    shared with other calls (None: their own)."""

    def smart_turn(params: SmartTurnParams) -> LocalSmartTurnAnalyzerV3:
        if models is not None:
            return models.smart_turn(params=params)
        return LocalSmartTurnAnalyzerV3(params=params)

    words = cfg.barge_in_words()
    if cfg.barge_in == "pause":
        if models is None:
            pause = PauseThenDecide(onset_vad=onset_vad(cfg), log=log)
        else:  # the judge's model is shared too, not loaded again by each call's strategy
            name, judge, complete = models.interruption_judge(decision)
            pause = PauseThenDecide(judge=judge, complete=complete, onset_vad=onset_vad(cfg, models), log=log)
            pause.judge_name = name
        start: list[Any] = [pause]
    elif words is None:
        start = [VADUserTurnStartStrategy(), TranscriptionUserTurnStartStrategy()]
    else:
        start = [WordsWhileBotSpeaks(min_words=words, use_interim=True)]
    kind, timeout = cfg.turn_timeout()
    if kind == "decide":
        # smart-turn's own silence fallback is set past the rule's cap: the rule ends every turn
        analyzer = smart_turn(SmartTurnParams(stop_secs=TurnThresholds().cap_ms / 1000 + 1))
        stop: list[Any] = [DecidingTurnStopStrategy(analyzer=analyzer, decision=decision, log=log,
                                                    preemptive=cfg.preemptive)]
    elif kind == "smart":
        analyzer = smart_turn(SmartTurnParams(stop_secs=timeout))
        stop = [TurnAnalyzerUserTurnStopStrategy(turn_analyzer=analyzer)]
    else:
        stop = [SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=timeout)]
    return UserTurnStrategies(start=start, stop=stop)
