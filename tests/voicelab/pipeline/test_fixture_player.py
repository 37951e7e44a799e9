"""The fixture player's clip grid: a clip due anywhere in a grid cell starts at the cell's end, and the truth
it logs is where it really started."""

from __future__ import annotations

from pathlib import Path

import pytest

from voicelab.fixtures.format import load_fixture
from voicelab.measure.calllog import CallLog
from voicelab.measure.recording import CallRecorder
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.pipeline.transport.fixture_input import FixturePlayerInput

FIXTURE = Path(__file__).resolve().parents[3] / "audio_fixtures" / "single_question"
SR = 16000


def _player(grid_ms: int) -> tuple[FixturePlayerInput, CallLog]:
    fx = load_fixture(FIXTURE, sample_rate=SR)
    log = CallLog("c")
    scheduler = fx.scheduler(greeting=False)
    assert [c.turn for c in scheduler.due(10.0)] == [0]  # the player places a clip the scheduler has released
    return FixturePlayerInput(fx, scheduler, log, CallRecorder(SR, seconds=5.0), clip_grid_ms=grid_ms), log


async def test_clips_due_in_one_grid_cell_start_on_the_same_sample() -> None:
    starts = []
    for due_s in (1.001, 1.0333, 1.1199):  # all inside the cell (0.96, 1.12] s of a 160 ms grid
        player, log = _player(160)
        player._place(0, due_s, frame_lo=int(due_s * SR) // 320 * 320)
        starts.append(player._playing[-1].start)
        (u,) = log.utterances
        assert u.clip_start_ns == starts[-1] * 1_000_000_000 // SR  # the truth is the real start
        assert player.stats.late_clips == []  # on the grid is not late
    assert starts == [int(1.12 * SR)] * 3 and starts[0] % 2560 == 0


async def test_without_a_grid_a_clip_starts_at_its_exact_sample() -> None:
    player, _ = _player(0)
    player._place(0, 1.0333, frame_lo=int(1.0333 * SR) // 320 * 320)
    assert player._playing[-1].start == round(1.0333 * SR)


def test_the_grid_must_fit_frames_and_vad_windows() -> None:
    assert PipelineConfig().clip_grid_ms == 160
    PipelineConfig(clip_grid_ms=0)
    PipelineConfig(clip_grid_ms=320)
    with pytest.raises(PipelineConfigError, match="clip_grid_ms: 100 is not 0 or a multiple of 160"):
        PipelineConfig(clip_grid_ms=100)
