"""`SpeakerPause` directly, without pipecat: the hold every output side waits on, and the ledger rows it leaves."""

from __future__ import annotations

import asyncio

from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind as K
from voicelab.measure.playout_ledger import PlayoutLedger
from voicelab.rules.speaker_pause import SpeakerPause

SR = 16000
MS = 1_000_000


def _side(lag_ns: int | None = None) -> tuple[SpeakerPause, CallLog]:
    log = CallLog("c1")
    return SpeakerPause(PlayoutLedger(log, SR), log_lag_ns=lag_ns), log


def _rows(log: CallLog) -> list[tuple[str, int, dict]]:
    return [(str(e.kind), e.t_ns, e.payload) for e in log.events if e.kind in (K.PLAYOUT_PAUSE, K.PLAYOUT_RESUME)]


def test_a_pause_holds_writes_and_a_resume_lets_them_go() -> None:
    async def run() -> list[bool]:
        p = SpeakerPause()
        p.pause("maybe")
        assert p.paused
        held = asyncio.create_task(p.wait())
        await asyncio.sleep(0.01)
        assert not held.done()  # the write waits
        p.resume("backchannel")
        return [await held, await p.wait()]

    assert asyncio.run(run()) == [True, True]


def test_an_interruption_during_a_pause_drops_the_held_write() -> None:
    async def run() -> tuple[bool, bool]:
        p = SpeakerPause()
        p.pause()
        held = asyncio.create_task(p.wait())
        await asyncio.sleep(0.01)
        p.interrupt()
        p.release()  # the transport cleared its queue
        return await held, p.paused

    assert asyncio.run(run()) == (False, False)


def test_the_speaker_logs_a_pause_at_once_and_a_resume_where_the_held_audio_lands() -> None:
    async def run() -> list[tuple[str, int, dict]]:
        p, log = _side()
        p.pause("maybe", 100 * MS)
        p.pause("again", 150 * MS)  # already paused: no second row
        held = asyncio.create_task(p.wait())
        await asyncio.sleep(0.01)
        p.resume("backchannel", 300 * MS)  # a write is held: it logs the resume
        assert await held
        p.landed(320 * MS)
        p.landed(400 * MS)  # nothing left to log
        return _rows(log)

    rows = asyncio.run(run())
    assert [(k, t) for k, t, _ in rows] == [("playout_pause", 100 * MS), ("playout_resume", 320 * MS)]
    assert rows[1][2]["gap_ms"] == 220.0 and rows[1][2]["reason"] == "backchannel"


def test_a_resume_with_no_write_held_is_logged_at_once_and_an_interruption_flushes_a_waiting_one() -> None:
    p, log = _side()
    p.pause("maybe", 100 * MS)
    p.resume("words", 250 * MS)
    assert [(k, t) for k, t, _ in _rows(log)] == [("playout_pause", 100 * MS), ("playout_resume", 250 * MS)]
    p.resume("twice", 300 * MS)  # not paused: nothing
    assert len(_rows(log)) == 2

    async def run() -> None:
        p2.pause("maybe", 100 * MS)
        held = asyncio.create_task(p2.wait())
        await asyncio.sleep(0.01)
        p2.resume("backchannel", 200 * MS)
        p2.interrupt(260 * MS)  # the held write has not run: its resume is logged now
        p2.release()
        await held

    p2, log2 = _side()
    asyncio.run(run())
    assert [(k, t) for k, t, _ in _rows(log2)] == [("playout_pause", 100 * MS), ("playout_resume", 260 * MS)]


def test_a_lagging_side_logs_a_pause_once_the_sent_audio_came_through() -> None:
    p, log = _side(lag_ns=100 * MS)
    p.pause("maybe", play_ns=500 * MS, now_ns=500 * MS)
    p.tick(now_ns=550 * MS, sent_ns=520 * MS)
    assert _rows(log) == []  # too early: audio sent before the pause may still come through
    p.tick(now_ns=600 * MS, sent_ns=530 * MS)
    assert [(k, t) for k, t, _ in _rows(log)] == [("playout_pause", 530 * MS)]  # where the sent audio ends

    q, log = _side(lag_ns=100 * MS)
    q.pause("maybe", play_ns=500 * MS, now_ns=500 * MS)
    q.resume("words", play_ns=560 * MS, sent_ns=480 * MS)  # the pause is logged first, at its own time
    assert [(k, t) for k, t, _ in _rows(log)] == [("playout_pause", 500 * MS), ("playout_resume", 560 * MS)]
    q.flush(900 * MS)  # nothing pending
    assert len(_rows(log)) == 2


def test_an_interruption_cuts_the_open_chunks() -> None:
    p, log = _side()
    p.interrupt(123 * MS)
    assert not p.paused  # not paused before: cut does nothing to the hold
    assert [e.kind for e in log.events] == []  # no open chunk: nothing to stop
