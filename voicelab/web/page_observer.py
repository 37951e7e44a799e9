"""What the page needs from frames that no event row carries: each engine snapshot (the live denoising
canvas) and each interim transcript."""

from __future__ import annotations

from collections.abc import Callable

from pipecat.frames.frames import InterimTranscriptionFrame
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.llm_service import LLMService
from pipecat.services.stt_service import STTService

from voicelab.pipeline.frames import SnapshotFrame


class PageObserver(BaseObserver):
    """Hands the session each engine snapshot (with its per-position pieces) and each interim transcript."""

    def __init__(self, on_snapshot: Callable[[SnapshotFrame], None], on_interim: Callable[[str], None]) -> None:
        super().__init__()
        self._on_snapshot = on_snapshot
        self._on_interim = on_interim

    async def on_push_frame(self, data: FramePushed) -> None:
        f = data.frame
        if data.direction != FrameDirection.DOWNSTREAM:
            return
        if isinstance(f, SnapshotFrame) and isinstance(data.source, LLMService):
            self._on_snapshot(f)
        elif isinstance(f, InterimTranscriptionFrame) and isinstance(data.source, STTService):
            self._on_interim(f.text)
