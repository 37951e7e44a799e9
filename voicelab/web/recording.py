"""The run folder of a live session: a browser call recorded and re-derived like a fixture call.

`LiveRecording` owns the session's run folder (`voicelab.runs.folder`, the only writer): config.json when
the session starts ("live": true, the pipeline config, the page's user agent once it says hello),
events.jsonl row by row as the session logs them, and when the session ends (the page's goodbye, a
disconnect, an error) calls/<id>.wav (left: the mic as received, `MicRecorder`'s track; right: the bot's
audio as sent, `LivePlayout`'s track; both in `voicelab.pipeline.transport`) and calls/<id>.json with the
caller utterances found on the left channel (`voicelab.measure.live_truth`, logged as caller_speech rows
too), then `finish_run` seals it with the page's own figures
(`voicelab.analysis.client_server.client_summary`) and the machine's load while the session lasted
(`voicelab.runs.machine_probe`, started by the session on its loop). A folder whose session never finished (the server was
killed) keeps its INCOMPLETE marker.

`page_message` turns the page's measurement messages into event rows: `client_far` (its FAR, the two
timestamps it came from and its jitter-buffer counters) and `clock_sync` (one ping/pong round trip, for the
page-to-server clock offset); a `ping` is answered at once with the call clock.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger

from engines.protocol import EngineLike
from voicelab.analysis.client_server import client_summary
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import Event, EventKind, EventWriter
from voicelab.measure.live_truth import caller_rows, live_turns, live_utterances
from voicelab.measure.recording import Track
from voicelab.measure.truth import call_truth_dict
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.transport.mic_recorder import MicRecorder
from voicelab.runs.calls import config_record, finish_run
from voicelab.runs.folder import RunFolder
from voicelab.runs.machine_probe import MachineProbe

K = EventKind
MAX_TEXT = 400  # a page's user agent is kept to this many characters


def live_config(cfg: PipelineConfig, session_id: str, engine: EngineLike | None = None,
                user_agent: str | None = None) -> dict[str, Any]:
    """config.json of a live session: the fixture runs' record (when the engine is loaded) plus live facts."""
    base = config_record(cfg, engine, []) if engine is not None else {
        "engine": cfg.engine_label(), "engine_arg": cfg.engine, "label": cfg.slug(), "sampler": cfg.sampler,
        "policy": cfg.policy, "stt": cfg.stt, "vad": cfg.vad, "barge_in": cfg.barge_in, "turn": cfg.turn,
        "sample_rate": cfg.sample_rate, "pipeline": cfg.to_dict(), "fixtures": []}
    return {**base, "live": True, "session_id": session_id, "user_agent": user_agent}


def run_folder_name(session_id: str, now: datetime | None = None) -> str:
    """<UTC time>-<session id>, the id reduced to characters safe in a file name."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-live-{re.sub(r'[^A-Za-z0-9_-]', '', session_id)[:40] or 'session'}"


class LiveRecording:
    """One live session's run folder, from `create` (INCOMPLETE) to `finish` (sealed)."""

    def __init__(self, folder: RunFolder, cfg: PipelineConfig, session_id: str) -> None:
        self.folder = folder
        self.cfg = cfg
        self.session_id = session_id
        self.writer: EventWriter = folder.events_writer()
        self.engine: EngineLike | None = None
        self.user_agent: str | None = None
        self.summary: dict[str, Any] | None = None
        self.probe: MachineProbe | None = None
        self.write_config()

    @classmethod
    def create(cls, runs_dir: Path, cfg: PipelineConfig, session_id: str) -> LiveRecording:
        return cls(RunFolder.create(Path(runs_dir) / run_folder_name(session_id)), cfg, session_id)

    @property
    def path(self) -> Path:
        return self.folder.path

    def write_config(self) -> None:
        self.folder.write_config(live_config(self.cfg, self.session_id, self.engine, self.user_agent),
                                 ["voicelab", "serve"])

    def watch_machine(self) -> None:
        """Start the machine probe on the running loop (the session's); `close` stops it and the summary gets its
        reading (`voicelab.runs.machine_probe`)."""
        self.probe = MachineProbe()
        self.probe.start()

    def set_engine(self, engine: EngineLike | None) -> None:
        if engine is not None and engine is not self.engine:
            self.engine = engine
            self.write_config()

    def set_user_agent(self, agent: Any) -> None:
        if isinstance(agent, str) and agent[:MAX_TEXT] != self.user_agent:
            self.user_agent = agent[:MAX_TEXT]
            self.write_config()

    async def close(self, log: CallLog, mic: MicRecorder | None, bot: Track | None, reason: str | None) -> None:
        """Seal the folder at the session's end: caller rows on the event loop, the files in a worker thread.
        A failure is logged, not raised (the session is ending anyway); the folder then stays INCOMPLETE."""
        if self.summary is not None:
            return
        if self.probe is not None:
            self.probe.stop()
        try:
            mic_track, mic_end = (mic.track, mic.end) if mic is not None else (None, 0)
            utts = self.log_caller_speech(log, mic_track, mic_end)
            log.writer = None  # the file closes now; a late row stays in memory only
            await asyncio.to_thread(self.finish, list(log.events), log, mic_track, mic_end, bot, utts, reason)
            logger.info(f"session {self.session_id}: run folder {self.path}")
        except Exception:
            logger.exception(f"session {self.session_id}: run folder {self.path} not finished")

    def log_caller_speech(self, log: CallLog, mic: Track | None, mic_end: int) -> list[dict[str, Any]]:
        """Find the caller's utterances on the mic track and log their caller_speech rows (on the loop)."""
        if mic is None:
            return []
        utts = live_utterances(mic.buf[:mic_end], mic.sample_rate, live_turns(log.events))
        for e in caller_rows(log.call_id, utts):
            log.log(e.kind, e.turn, e.payload, t_ns=e.t_ns)
        return call_truth_dict(log.call_id, utts, sample_rate=mic.sample_rate)["utterances"]

    def finish(self, events: list[Event], log: CallLog, mic: Track | None, mic_end: int, bot: Track | None,
               utterances: list[dict[str, Any]], reason: str | None) -> dict[str, Any]:
        """The WAV, the call's JSON, then `finish_run` (blocking: run it in a thread). Returns the summary."""
        self.writer.close()
        sr = self.cfg.sample_rate
        bot_end = 0 if bot is None or not bot.buf.any() else int(np.flatnonzero(bot.buf)[-1]) + 1
        end = max(mic_end, bot_end, log.now_ns() * sr // 1_000_000_000)
        stereo = np.zeros((end, 2), dtype=np.int16)
        for ch, (track, n) in enumerate(((mic, mic_end), (bot, bot_end))):
            if track is not None:
                stereo[:n, ch] = track.buf[:n]
        self.folder.write_call(log.call_id, stereo, sr, {
            "fixture": None, "fixture_path": None, "live": True, "utterances": utterances,
            "caller_truth": "server recording, left channel (voicelab.measure.live_truth)", "ended": reason})
        self.summary = finish_run(self.folder, events,
                                  {"engine": self.cfg.engine_label(), "sampler": self.cfg.sampler,
                                   "policy": self.cfg.policy, "live": True},
                                  extra=client_summary(events),
                                  machine=None if self.probe is None else self.probe.load())
        return self.summary


# ---- the page's measurement messages ---------------------------------------------------------------------

def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def page_message(message: Mapping[str, Any], log: CallLog, send: Callable[[dict[str, Any]], None]) -> bool:
    """Handle one of the page's measurement messages (True if it was one); bad fields drop the message."""
    kind = message.get("type")
    if kind == "ping":
        t = _number(message.get("t"))
        if t is not None:
            send({"type": "pong", "t": t, "server_ms": log.now_ns() / 1e6})
        return True
    if kind == "clock":
        vals = {k: _number(message.get(k)) for k in ("page_send_ms", "page_recv_ms", "server_ms")}
        if None not in vals.values():
            log.log(K.CLOCK_SYNC, -1, vals)
        return True
    if kind == "client_far":
        vals = {k: _number(message.get(k)) for k in ("far_ms", "mic_end_ms", "bot_onset_ms")}
        if None in vals.values():
            return True
        payload: dict[str, Any] = dict(vals)
        for k in ("jb_delay_s", "jb_emitted", "jb_target_s", "jb_window_end_ms", "server_far_ms"):
            if (v := _number(message.get(k))) is not None:
                payload[k] = v
        turn = message.get("turn")
        ok_turn = isinstance(turn, int) and not isinstance(turn, bool) and 0 <= turn < 100_000
        log.log(K.CLIENT_FAR, turn if ok_turn else None, payload)
        return True
    return False
