"""Live sessions recorded like fixture runs (voicelab.web.recording): the run folder a session leaves, the
page's measurement messages, and (slow) a real headless-browser session whose folder `voicelab report`
renders with the client − server FAR broken down.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.voicelab.web.test_browser import CHROMIUM, QUESTION, _engine, _launch, _mic_wav, _wait
from tests.web_helpers import ServerThread
from voicelab.analysis.client_server import RESIDUAL_TOLERANCE_MS, breakdown
from voicelab.analysis.report import build_report
from voicelab.analysis.tables import is_finished
from voicelab.cli.common import quiet_pipecat_logs
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind, read_events
from voicelab.measure.machine_load import BUSY, verdict_of
from voicelab.measure.recording import Track
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.resources import ResourcePool
from voicelab.pipeline.transport.mic_recorder import MicRecorder
from voicelab.runs.folder import INCOMPLETE
from voicelab.web.app import create_app
from voicelab.web.options import ServeOptions, SessionLimits
from voicelab.web.recording import LiveRecording, page_message, run_folder_name

K = EventKind
SR = 16000
MS = 1_000_000


def tone(seconds: float, dbfs: float = -20.0) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (10 ** (dbfs / 20) * 32767 * np.sin(2 * np.pi * 220 * t)).astype(np.int16)


def test_folder_name_is_time_and_a_safe_session_id() -> None:
    name = run_folder_name("pc/../x y:1", datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC))
    assert name == "20261130-120005-live-pcxy1"


def test_page_messages_become_rows_and_pongs() -> None:
    log = CallLog("pc-1")
    sent: list[dict[str, Any]] = []
    assert page_message({"type": "ping", "t": 12.5}, log, sent.append)
    assert sent[0]["type"] == "pong" and sent[0]["t"] == 12.5 and sent[0]["server_ms"] >= 0
    assert page_message({"type": "clock", "page_send_ms": 12.5, "page_recv_ms": 14.0, "server_ms": 3.0}, log,
                        sent.append)
    assert page_message({"type": "client_far", "far_ms": 900.0, "mic_end_ms": 100.0, "bot_onset_ms": 1000.0,
                         "turn": 2, "jb_delay_s": 1.5, "jb_emitted": 48000, "jb_target_s": 1.0, "jb_window_end_ms": 320,
                         "extra": "ignored"},
                        log, sent.append)
    assert page_message({"type": "client_far", "far_ms": "fast", "mic_end_ms": 1, "bot_onset_ms": 2}, log,
                        sent.append)  # a bad field: dropped
    assert page_message({"type": "client_far", "far_ms": 5, "mic_end_ms": 1, "bot_onset_ms": 6, "turn": True}, log,
                        sent.append)  # a bad turn: the reply turn now
    assert not page_message({"type": "keepalive"}, log, sent.append)
    assert [(e.kind, e.turn) for e in log.events] == [(K.CLOCK_SYNC, -1), (K.CLIENT_FAR, 2), (K.CLIENT_FAR, -1)]
    assert log.events[1].payload == {"far_ms": 900.0, "mic_end_ms": 100.0, "bot_onset_ms": 1000.0,
                                     "jb_delay_s": 1.5, "jb_emitted": 48000.0, "jb_target_s": 1.0,
                                     "jb_window_end_ms": 320.0}


def test_mic_frames_end_where_they_arrived() -> None:
    mic = MicRecorder(CallLog("pc-1"), SR)
    frame = np.ones(320, dtype=np.int16)
    mic.put(frame, SR, 1, 1_000 * MS)  # 20 ms arriving at 1.000 s: samples 15680..16000
    assert mic.end == SR and mic.track.buf[SR - 320: SR].all() and not mic.track.buf[: SR - 320].any()
    for _ in range(50):  # a 1 s backlog delivered at once, at 1.010 s: it does not push later audio late
        mic.put(frame * 2, SR, 1, 1_010 * MS)
    mic.put(frame * 3, SR, 1, 1_030 * MS)
    assert mic.end == SR + 480 and (mic.track.buf[SR + 160 - 320: SR + 160] == 2).all()
    assert (mic.track.buf[SR + 160: SR + 480] == 3).all()
    mic.put(np.ones(1280, dtype=np.int16), 4 * SR, 2, 2_000 * MS)  # stereo 64 kHz: 640 frames -> 160 samples
    assert mic.end == 2 * SR and mic.track.buf[2 * SR - 160: 2 * SR].any()  # resampled: not all ones
    mic.put(frame, SR, 1, 5 * MS)  # the call's first 5 ms: the frame's last 80 samples
    assert mic.track.buf[:80].all()


def test_a_live_session_seals_a_run_folder_that_the_report_renders(tmp_path: Path) -> None:
    cfg = PipelineConfig(engine="diffusion")
    rec = LiveRecording.create(tmp_path, cfg, "pc-synthetic")
    assert (rec.path / INCOMPLETE).exists() and json.loads((rec.path / "config.json").read_text())["live"] is True
    rec.set_user_agent("HeadlessChrome/156")
    log = CallLog("pc-synthetic", writer=rec.writer)
    mic = MicRecorder(log, SR)
    speech = tone(1.0)  # the caller speaks 1.0-2.0 s on the server's clock
    for i in range(0, speech.size, 320):
        mic.put(speech[i: i + 320], SR, 1, round((1.0 + (i + 320) / SR) * 1e9))
    mic.put(np.zeros(SR * 2, dtype=np.int16), SR, 1, 4_000 * MS)
    bot = Track(SR)
    bot.put(int(2.7 * SR), tone(0.8))  # the reply leaves the server at 2.7 s
    log.log(K.VAD_START, 0, {"start_secs": 0.2}, t_ns=1_250 * MS)
    log.log(K.VAD_STOP, 0, {"stop_secs": 0.2}, t_ns=2_350 * MS)  # the VAD's estimate of the end: 2.15 s
    log.log(K.TURN_END, 0, {}, t_ns=2_400 * MS)
    log.log(K.BOT_AUDIBLE_ONSET, 0, {}, t_ns=2_700 * MS)
    # the page's clock is the server's minus 10 s; one ping of round trip 2 ms
    log.log(K.CLOCK_SYNC, -1, {"page_send_ms": -9_000.0, "page_recv_ms": -8_998.0, "server_ms": 1_001.0})
    log.log(K.CLIENT_FAR, 0, {"far_ms": 2_850.0 - 1_960.0, "mic_end_ms": 1_960.0 - 10_000.0,
                              "bot_onset_ms": 2_850.0 - 10_000.0, "jb_delay_s": 48_000.0, "jb_emitted": 960_000})
    asyncio.run(rec.close(log, mic, bot, "test"))

    assert is_finished(rec.path)
    s = json.loads((rec.path / "summary.json").read_text())
    assert abs(s["far_ms"]["p50"] - 700.0) <= 6  # onset 2.7 s - the acoustic end 2.0 s in the left channel
    assert s["truth"]["far_abs_diff_ms_p95"] is not None and s["truth"]["far_abs_diff_ms_p95"] <= 6
    assert s["client_far_ms"]["n"] == 1 and s["client_far_ms"]["p50"] == 890.0
    cs = s["client_server_ms"]
    assert abs(cs["vad_lag_p50"] - 150.0) <= 6 and abs(cs["uplink_p50"] - 40.0) <= 6
    assert cs["downlink_p50"] == 150.0 and cs["jitter_buffer_p50"] == 50.0
    assert cs["residual_abs_max"] <= RESIDUAL_TOLERANCE_MS
    call = json.loads((rec.path / "calls" / "pc-synthetic.json").read_text())
    assert call["live"] is True and len(call["utterances"]) == 1
    assert {e.kind for e in read_events(rec.path / "events.jsonl")} >= {K.CLIENT_FAR, K.CALLER_SPEECH_END}
    assert json.loads((rec.path / "config.json").read_text())["user_agent"] == "HeadlessChrome/156"

    page = build_report(rec.path).read_text(encoding="utf-8")
    assert "Live sessions: client − server FAR" in page and "HeadlessChrome/156" in page


# ---- a real browser session (slow) -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def served_recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerThread, Path]]:
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium (scripts/setup.sh --test installs it)")
    pytest.importorskip("playwright.sync_api")
    engine = _engine()
    if engine is None:
        pytest.skip("needs a trained tiny engine in engines/tiny (voicelab train) or VOICELAB_TEST_ENGINE")
    quiet_pipecat_logs("WARNING")
    runs = tmp_path_factory.mktemp("live-runs")
    # the embedded stack of the README, no greeting: the caller's question is the first thing said
    cfg = PipelineConfig(engine=engine, stt="pocketsphinx", turn="smart", barge_in="words:3", greeting="")
    pool = ResourcePool()
    pool.preload(cfg)
    app = create_app(ServeOptions(pipeline=cfg, max_sessions=2, runs_dir=runs,
                                  limits=SessionLimits(idle_timeout_s=6.0)), pool=pool)
    with ServerThread(app) as server:
        yield server, runs
    pool.close()


def _sealed_runs(runs: Path, before: set[Path], timeout_s: float = 30.0) -> list[Path]:
    """Run folders made since `before`, once every one of them is sealed (or the time is up)."""
    deadline = time.monotonic() + timeout_s
    while True:
        new = sorted(p for p in runs.iterdir() if p.is_dir() and p not in before)
        if (new and all(is_finished(p) for p in new)) or time.monotonic() > deadline:
            return new
        time.sleep(0.2)


@pytest.mark.slow
def test_browser_session_leaves_a_run_folder_with_client_server_breakdown(
        served_recording: tuple[ServerThread, Path], tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    served, runs = served_recording
    before = set(runs.iterdir())
    mic = _mic_wav(tmp_path / "mic.wav", QUESTION, lead_s=4.0, tail_s=8.0)
    with sync_playwright() as pw:
        browser = _launch(pw, mic)
        try:
            page = browser.new_page()
            page.goto(served.url + "/")
            _wait(page, "document.querySelectorAll('#opt-engine option').length > 0")
            page.click("#start")
            _wait(page, "window.voicelab.state === 'ready'", 20)
            try:
                _wait(page, "window.voicelab.clientReports.length > 0 && window.voicelab.serverFarMs.length > 0"
                            " && window.voicelab.clockSamples >= 3", 45)
            except TimeoutError:
                raise AssertionError(f"no client figure reported: {page.evaluate('window.voicelab')}") from None
            stats = page.evaluate("window.voicelab")
            page.click("#stop")  # the page says goodbye: the session ends and seals its folder
        finally:
            browser.close()
    assert served.wait_sessions(0)["sessions"] == 0
    [run] = _sealed_runs(runs, before)
    assert is_finished(run), sorted(p.name for p in run.iterdir())

    config = json.loads((run / "config.json").read_text())
    assert config["live"] is True and "Chrome" in (config["user_agent"] or "")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["client_far_ms"]["n"] >= 1 and summary["far_ms"]["n"] >= 1, summary
    # the run's own FAR re-derived from the server recording agrees with the event log (docs/metrics.md, measurement truth)
    assert summary["truth"]["far_abs_diff_ms_p95"] is not None and summary["truth"]["far_abs_diff_ms_p95"] <= 20

    rows = [b for b in breakdown(read_events(run / "events.jsonl")) if b.residual_ms is not None]
    assert rows, breakdown(read_events(run / "events.jsonl"))
    b = rows[0]
    print(f"\nlive session {run.name}: {json.dumps(b.to_dict())}\nsummary: {json.dumps(summary['client_server_ms'])}")
    # the parts add up to the difference the page showed (client FAR - the server's VAD-based FAR)
    shown = stats["clientFarMs"][0] - stats["serverFarMs"][0]
    assert b.server_far_vad_ms is not None and abs(b.server_far_vad_ms - stats["serverFarMs"][0]) <= 1.0, stats
    parts = sum(x for x in (b.vad_lag_ms, b.uplink_ms, b.jitter_buffer_ms, b.downlink_other_ms) if x is not None)
    assert b.jitter_buffer_ms is not None, b
    assert abs(parts - shown) <= RESIDUAL_TOLERANCE_MS + 1.0, (parts, shown, b)
    # each part is what it says: the page hears the bot after the server sent it, the mic end reaches the
    # server after the page heard it (both within the clock offset's error), the jitter buffer holds audio.
    # The server's send times are read on its event loop (`LivePlayout`): on a run that judged its machine busy
    # they can be seconds late (one loaded run: loop lag up to 1.7 s, the server's onset 3.2 s after the page
    # heard it), so there only the parts' sum, above, is checked; the run's figures carry the busy mark.
    if verdict_of(summary.get("machine")) != BUSY:
        err = b.offset_error_ms
        assert err is not None and err < 50, b
        assert b.uplink_ms is not None and b.uplink_ms > -err - 15, b
        assert b.downlink_ms is not None and b.downlink_ms > -err, b
        # the page's jitter buffer (getStats, no clock involved) is the mean wait of the samples played in a
        # window that closes jb_window_end_ms after the onset; none of them was sent before the onset, so none
        # waited longer than the onset's downlink (as the clocks measured it) plus that
        [client_row] = [e for e in read_events(run / "events.jsonl") if e.kind == "client_far" and e.turn == b.turn][:1]
        window_end = client_row.payload.get("jb_window_end_ms")
        assert isinstance(window_end, float) and window_end > 0, client_row
        assert 0 <= b.jitter_buffer_ms <= b.downlink_ms + err + window_end, (b, window_end)

    page_html = build_report(run).read_text(encoding="utf-8")
    assert "Live sessions: client − server FAR" in page_html and "jitter buffer" in page_html


@pytest.mark.slow
def test_a_session_cut_by_the_browser_is_sealed_too(served_recording: tuple[ServerThread, Path],
                                                    tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    served, runs = served_recording
    before = set(runs.iterdir())
    mic = _mic_wav(tmp_path / "silence.wav", None, lead_s=0.0, tail_s=20.0)
    with sync_playwright() as pw:
        browser = _launch(pw, mic)
        try:
            page = browser.new_page()
            page.goto(served.url + "/")
            _wait(page, "document.querySelectorAll('#opt-engine option').length > 0")
            page.click("#start")
            _wait(page, "window.voicelab.state === 'ready'", 20)
        finally:
            browser.close()  # no goodbye, no pc.close(): the server finds out on its own
    assert served.wait_sessions(0, timeout_s=40)["sessions"] == 0
    [run] = _sealed_runs(runs, before)
    assert is_finished(run)
    assert json.loads((run / "summary.json").read_text())["turns"] == 0
    assert list((run / "calls").glob("*.wav"))
