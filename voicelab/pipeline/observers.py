"""The pipecat observer that logs the frames no processor of ours owns (docs/metrics.md).

VAD, turn end, transcripts, interruptions and pipecat's bot speaking frames become event rows of the
call's `voicelab.measure.calllog.CallLog`.
"""

from __future__ import annotations

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    InterruptionFrame,
    TranscriptionFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.frame_processor import FrameDirection

from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind

K = EventKind


class EventObserver(BaseObserver):
    """Logs pipecat frames that mark the input side and the bot's speaking state.

    Frames broadcast in both directions are logged once (the downstream copy), and each frame once
    (its first push).
    """

    def __init__(self, log: CallLog) -> None:
        super().__init__()
        self._log = log
        self._seen: set[int] = set()

    def _once(self, data: FramePushed) -> bool:
        if data.direction != FrameDirection.DOWNSTREAM:
            return False
        fid = data.frame.id
        if fid in self._seen:
            return False
        self._seen.add(fid)
        return True

    async def on_push_frame(self, data: FramePushed) -> None:
        f = data.frame
        if not isinstance(f, (VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame, UserStartedSpeakingFrame,
                              UserStoppedSpeakingFrame, TranscriptionFrame, InterruptionFrame,
                              BotStartedSpeakingFrame, BotStoppedSpeakingFrame)):
            return
        if not self._once(data):
            return
        log = self._log
        now = log.now_ns()
        if isinstance(f, VADUserStartedSpeakingFrame):
            log.log(K.VAD_START, log.caller_turn_at(now), {"start_secs": f.start_secs})
        elif isinstance(f, VADUserStoppedSpeakingFrame):
            log.log(K.VAD_STOP, log.caller_turn_at(now), {"stop_secs": f.stop_secs})
        elif isinstance(f, UserStoppedSpeakingFrame):
            turn = log.on_turn_end()
            log.log(K.TURN_END, turn, {})
        elif isinstance(f, TranscriptionFrame):
            log.log(K.STT_FINAL, log.caller_turn_at(now), {"text": f.text, "finalized": bool(f.finalized)})
        elif isinstance(f, InterruptionFrame):
            log.log(K.INTERRUPTION, log.caller_turn_at(now), {"bot_speaking": log.bot_speaking})
        elif isinstance(f, BotStartedSpeakingFrame):
            log.bot_speaking = True
            log.log(K.BOT_STARTED_SPEAKING, None, {})
        elif isinstance(f, BotStoppedSpeakingFrame):
            log.bot_speaking = False
            log.log(K.BOT_STOPPED_SPEAKING, None, {})
        # UserStartedSpeakingFrame only matters through the InterruptionFrame it comes with
