"""The planted faults of `fault_rules.py` wired into a pipecat 1.14 pipeline (both reference agents use it).

- `user_params(plan)`: the user aggregator's VAD and turn strategies (cuts-in, deaf, jumpy); the clean plan gives
  exactly what the agents built before faults existed;
- `ReplyFaults`, between the agent's brain and its TTS: counts the replies (a `TTSSpeakFrame` or an LLM response
  each) and delays, mutes, revises or drops the stream at the planned one;
- `StopOnSound`, after the transport's input: any caller sound of `stop_on_sound_s` stops the agent (jumpy);
- `AudioGaps`, between the TTS and the transport's output: silences 200 ms of every second of each reply.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from fault_rules import ABANDONED, FaultPlan, SoundRun, frame_dbfs, gap_spans
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    TTSStartedFrame,
)
from pipecat.processors.aggregators.llm_response_universal import LLMUserAggregatorParams
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.turns.user_start import TranscriptionUserTurnStartStrategy, VADUserTurnStartStrategy
from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies


def user_params(plan: FaultPlan) -> LLMUserAggregatorParams:
    """The user aggregator's parameters under the plan."""
    vad = {k: v for k, v in (("start_secs", plan.vad_start_s), ("confidence", plan.vad_confidence),
                             ("min_volume", plan.vad_min_volume)) if v is not None}
    analyzer = SileroVADAnalyzer(params=VADParams(**vad)) if vad else SileroVADAnalyzer()
    if plan.turn_end_pause_s is None and plan.interruptions:
        return LLMUserAggregatorParams(vad_analyzer=analyzer)
    strategies = UserTurnStrategies(
        start=[VADUserTurnStartStrategy(enable_interruptions=plan.interruptions),
               TranscriptionUserTurnStartStrategy(enable_interruptions=plan.interruptions)],
        stop=(None if plan.turn_end_pause_s is None
              else [SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=plan.turn_end_pause_s)]))
    return LLMUserAggregatorParams(vad_analyzer=analyzer, user_turn_strategies=strategies)


class ReplyFaults(FrameProcessor):
    """Before the TTS: each `TTSSpeakFrame` or LLM response (start to end) is one reply, counted from 0. Under
    the plan: every reply but the first waits `reply_delay_s`; the mute reply is dropped; the revised reply
    starts with ABANDONED, which is interrupted (the transport sends `clear`) `revise_after_s` later, and then
    the reply is said (timed from the output's first audio of the abandoned sentence); `drop_after_s` into the drop reply, `hang_up` closes the media stream."""

    def __init__(self, plan: FaultPlan, hang_up: Callable[[], Awaitable[None]] | None = None) -> None:
        super().__init__()
        self.plan = plan
        self.hang_up = hang_up
        self.replies = 0
        self.current = -1  # the reply whose frames are passing
        self.held: list[Frame] | None = None  # the revised reply's frames, said after the abandoned sentence
        self.speaking = asyncio.Event()  # the transport's output started sending the agent's audio

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, BotStartedSpeakingFrame):
            self.speaking.set()
        if direction != FrameDirection.DOWNSTREAM or isinstance(frame, InterruptionFrame):
            await self.push_frame(frame, direction)
            return
        starts = isinstance(frame, (TTSSpeakFrame, LLMFullResponseStartFrame))
        if starts:
            self.current, self.replies = self.replies, self.replies + 1
            await self._start(self.current)
        inside = starts or isinstance(frame, (LLMTextFrame, LLMFullResponseEndFrame))
        if inside and self.current == self.plan.mute_reply:
            return
        if inside and self.held is not None and self.current == self.plan.revise_reply:
            self.held.append(frame)
            if isinstance(frame, (TTSSpeakFrame, LLMFullResponseEndFrame)):
                held, self.held = self.held, None
                self.create_task(self._revise(held), name="revise")
            return
        await self.push_frame(frame, direction)

    async def _start(self, reply: int) -> None:
        if reply > 0 and self.plan.reply_delay_s > 0:
            await asyncio.sleep(self.plan.reply_delay_s)
        if reply == self.plan.revise_reply:
            self.held = []
        if reply == self.plan.drop_reply and self.hang_up is not None:
            self.create_task(self._drop(), name="drop")

    async def _revise(self, held: list[Frame]) -> None:
        self.speaking.clear()
        await self.push_frame(TTSSpeakFrame(ABANDONED))
        await self.speaking.wait()  # `revise_after_s` of it heard (the output sends it as it is made)
        await asyncio.sleep(self.plan.revise_after_s)
        await self.broadcast_interruption()
        for frame in held:
            await self.push_frame(frame)

    async def _drop(self) -> None:
        await asyncio.sleep(self.plan.drop_after_s)
        assert self.hang_up is not None
        await self.hang_up()


class AudioGaps(FrameProcessor):
    """After the TTS: silences `gap_s` of every `gap_every_s` of each reply's audio (counted from the reply's
    `TTSStartedFrame`), as packets lost on the way would."""

    def __init__(self, plan: FaultPlan) -> None:
        super().__init__()
        self.plan = plan
        self.at = 0  # samples of the current reply so far

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TTSStartedFrame):
            self.at = 0
        elif isinstance(frame, TTSAudioRawFrame) and self.plan.gap_every_s is not None:
            n = len(frame.audio) // 2
            audio = bytearray(frame.audio)
            for a, b in gap_spans(self.at, n, frame.sample_rate, self.plan.gap_every_s, self.plan.gap_s,
                                  self.plan.gap_first_s):
                audio[2 * a:2 * b] = bytes(2 * (b - a))
            self.at += n
            frame.audio = bytes(audio)
        await self.push_frame(frame, direction)


class StopOnSound(FrameProcessor):
    """After the transport's input: while the agent talks, any caller sound lasting `stop_on_sound_s` (frames over
    SOUND_DBFS) interrupts it, whatever the sound (a cough, "mm hmm"): the transport's output sends `clear`."""

    def __init__(self, plan: FaultPlan) -> None:
        super().__init__()
        assert plan.stop_on_sound_s is not None
        self.run = SoundRun(plan.stop_on_sound_s)
        self.bot_speaking = False

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, BotStartedSpeakingFrame):
            self.bot_speaking = True
        elif isinstance(frame, BotStoppedSpeakingFrame):
            self.bot_speaking = False
        elif isinstance(frame, InputAudioRawFrame):
            seconds = len(frame.audio) / 2 / frame.sample_rate / frame.num_channels
            if self.run.feed(frame_dbfs(frame.audio), seconds) and self.bot_speaking:
                await self.push_frame(frame, direction)
                await self.broadcast_interruption()
                return
        await self.push_frame(frame, direction)
