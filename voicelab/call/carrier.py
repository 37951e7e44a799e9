"""The lab as the carrier: one call to an agent over the telephone media stream, measured from its audio.

It dials the agent's WebSocket, says `connected` and `start`, and then runs one 20 ms clock for both
directions, the call clock of `voicelab.measure.calllog` (t 0 = the `start` message):

- caller side: the fixture's clips, started by the reactive rules of `voicelab.fixtures.schedule` exactly as
  `voicelab run`'s fixture player starts them, mixed into 8 kHz frames, µ-law encoded and sent as `media`
  (silence between clips, as a phone line sends); the left channel records what was sent;
- agent side: `media` goes into the carrier's playout queue (`voicelab.call.playout_queue`), whatever its pacing;
  every tick one frame leaves the queue and is what the caller hears, recorded on the right channel at the
  tick's wall time. `clear` empties the queue at once, as Twilio documents it (buffered audio is dropped, its
  marks echoed); `mark`s are echoed when playout reaches them. A `clear` while the agent was heard is a stop
  (an interruption row at the `clear`) unless the agent is audible again within `CallOptions.clear_pause_s`:
  then it only paused (an agent that clears on a pause and sends the rest on a resume), as the silence rule
  of a false barge-in has it;
- bot_audio_start / bot_audio_end, for the caller's start rules and the event rows, come from what leaves the
  queue, by the onset rule (`voicelab.measure.playout_ledger.AudibleTracker`, the rule of `voicelab.measure.onset`).

Every send happens on the clock's tick; the receiver only queues. A bad line ends the call with one line saying
what is wrong (`CallResult.failure`), the audio and rows measured until then kept: refused connection, failed
handshake, a message the line cannot carry (`voicelab.call.protocol`), an agent that never sends audio, a
hang-up before the caller is done, or a call past its time limit.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from voicelab.call import protocol
from voicelab.call.line import LineStats, caller_spoke
from voicelab.call.pacing import FRAME_SAMPLES, LINE_RATE, FrameClock
from voicelab.call.playout_queue import PlayoutQueue
from voicelab.call.reply_spans import reply_turn
from voicelab.fixtures.format import Fixture
from voicelab.fixtures.schedule import CallerScheduler
from voicelab.measure.calllog import CallLog, PlayedUtterance
from voicelab.measure.events import EventKind, EventWriter
from voicelab.measure.playout_ledger import AudibleTracker
from voicelab.measure.recording import CallRecorder
from voicelab.measure.truth import Utterance
from voicelab.pcm import to_int16
from voicelab.pipeline.transport import mulaw

K = EventKind
_NS = 1_000_000_000


@dataclass(frozen=True)
class CallOptions:
    """How to dial and when to give up (seconds). `max_call_s` None: the fixture's length plus a margin."""

    headers: dict[str, str] = field(default_factory=dict)  # HTTP headers of the WebSocket handshake
    params: dict[str, str] = field(default_factory=dict)  # start.customParameters
    connect_timeout_s: float = 10.0
    answer_timeout_s: float = 15.0  # the agent sent no audio at all this long after the caller's first turn
    no_reply_timeout_s: float = 6.0  # a turn waiting on a reply that never came starts anyway (schedule.py)
    greeting: bool = True  # the agent is expected to greet (turn 0's bot_audio_* rules wait for it)
    clear_pause_s: float = 2.0  # a clear the agent's audio comes back within is a pause, not a stop
    max_call_s: float | None = None
    # a caller that chooses its turns during the call (voicelab.call.listening): (fixture as played, its scheduler)
    caller: Callable[[Fixture, CallRecorder, CallOptions], tuple[Fixture, CallerScheduler]] | None = None


@dataclass
class CallResult:
    call_id: str
    fixture: Fixture
    url: str
    log: CallLog
    recorder: CallRecorder
    line: LineStats
    scheduler: CallerScheduler
    ids: protocol.StreamIds
    failure: str | None = None
    duration_s: float = 0.0
    close: dict[str, Any] = field(default_factory=dict)  # who closed the socket, code, reason

    @property
    def said(self) -> list[Utterance]:
        return [Utterance(u.turn, u.speech_start_ns / _NS, u.speech_end_ns / _NS, u.expect)
                for u in self.log.utterances]

    @property
    def stereo(self) -> np.ndarray:
        return self.recorder.stereo()


class LineFailure(Exception):
    """The call cannot go on; the message is the one line the user sees (after the URL)."""


def call_limit_s(fixture: Fixture, opts: CallOptions) -> float:
    if opts.max_call_s is not None:
        return opts.max_call_s
    return fixture.caller_audio_s + (len(fixture.turns) + 1) * (opts.no_reply_timeout_s + 4.0) + 30.0


def _connect_failure(exc: BaseException, timeout_s: float) -> str:
    if isinstance(exc, InvalidStatus):
        return f"handshake refused: the server answered HTTP {exc.response.status_code}, not a WebSocket upgrade"
    if isinstance(exc, InvalidURI):
        return f"not a ws:// or wss:// URL ({exc})"
    if isinstance(exc, InvalidHandshake):
        return f"wrong handshake: {exc} (is this a WebSocket endpoint?)"
    if isinstance(exc, TimeoutError):
        return f"no WebSocket handshake within {timeout_s:g} s"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (nothing is listening there)"
    if isinstance(exc, OSError):
        return f"cannot connect: {exc.strerror or exc}"
    return f"cannot connect: {type(exc).__name__}: {exc}"


class _Call:
    """One call's state, driven by `run` (the clock) and `_receive` (the agent's messages)."""

    def __init__(self, url: str, fixture: Fixture, call_id: str, opts: CallOptions, writer: EventWriter | None):
        if fixture.sample_rate != LINE_RATE:
            raise ValueError(f"{fixture.path}: loaded at {fixture.sample_rate} Hz; a phone call plays it at "
                             f"{LINE_RATE} Hz")
        self.url, self.fixture, self.opts = url, fixture, opts
        self.log = CallLog(call_id, writer)
        self.recorder = CallRecorder(LINE_RATE, seconds=60.0)
        self.queue = PlayoutQueue()
        self.line = LineStats(clock=FrameClock())
        self.scheduler = fixture.scheduler(no_reply_timeout_s=opts.no_reply_timeout_s, greeting=opts.greeting)
        if opts.caller is not None:  # the turns grow as the caller listens; self.fixture holds them as played
            self.fixture, self.scheduler = opts.caller(fixture, self.recorder, opts)
        self.tracker = AudibleTracker(LINE_RATE)
        # the line hears the agent start again only once the onset rule confirms it (see CallerScheduler)
        self.scheduler.onset_confirm_s = self.tracker.confirm_s
        hexid = uuid.uuid4().hex
        self.ids = protocol.StreamIds(stream_sid=f"MZ{hexid}", call_sid=f"CA{uuid.uuid4().hex}")
        self.clips = [to_int16(t.audio) for t in fixture.turns]
        self.playing: list[tuple[int, np.ndarray]] = []  # (start sample, int16 clip)
        self.said: list[Utterance] = []
        self.echo: list[str] = []  # marks to echo on the next tick
        self.failure: str | None = None
        self.closed: dict[str, Any] | None = None
        self.got_media = False
        self.bot_turn = -1  # the turn the agent's current stretch answers
        self.open_clear: tuple[int, int, float] | None = None  # a clear while heard: (t ns, turn, dropped ms)

    # ---- agent -> carrier ------------------------------------------------------------------------------
    async def receive(self, ws: ClientConnection) -> None:
        try:
            async for data in ws:
                t_ns = self.log.now_ns()
                try:
                    msg = protocol.parse_agent(data, self.ids.stream_sid)
                except protocol.LineProtocolError as e:
                    self.failure = f"at {t_ns / _NS:.2f} s the agent {e}"
                    return
                self._handle(msg, t_ns)
        except ConnectionClosed:
            pass
        # the socket closed under us (a cancel by the clock never gets here)
        rcvd = ws.protocol.close_rcvd
        self.closed = {"t_s": round(self.log.now_ns() / _NS, 3), "code": rcvd.code if rcvd else None,
                       "reason": rcvd.reason if rcvd else ""}

    def _handle(self, msg: protocol.AgentMessage, t_ns: int) -> None:
        if msg.kind == "media":
            pcm = mulaw.decode(msg.audio)
            self.line.media(t_ns / 1e6, pcm.size, self.queue.depth)
            self.queue.push_audio(pcm)
            self.got_media = True
        elif msg.kind == "mark":
            self.line.marks_received += 1
            self.queue.push_mark(msg.name)
        elif msg.kind == "clear":
            speaking = self.queue.depth > 0 or self.tracker.audible
            cleared = self.queue.clear()
            self.line.clear(cleared.dropped, len(cleared.marks))
            self.echo += cleared.marks
            dropped_ms = round(1000 * cleared.dropped / LINE_RATE, 1)
            if not speaking:
                self.log.log(K.INTERRUPTION, self.bot_turn, {"bot_speaking": False, "by": "clear",
                                                             "dropped_ms": dropped_ms}, t_ns=t_ns)
            else:
                self.line.heard_clears_s.append(t_ns / _NS)  # its cut is no lost packet (audio_gaps.unexplained)
                if not caller_spoke(t_ns / _NS, self.log.utterances):  # the agent cut itself off: a revision
                    self.line.clears_unprompted += 1
                if self.open_clear is None:  # a stop or a pause: the next clear_pause_s tell
                    self.open_clear = (t_ns, self.bot_turn, dropped_ms)
        else:
            self.line.other(msg.name)

    # ---- the clock ---------------------------------------------------------------------------------------
    async def run(self, ws: ClientConnection) -> None:
        await ws.send(protocol.connected())
        await ws.send(protocol.start(self.ids, self.opts.params))
        self.log.restart_clock()
        self.log.log(K.CALL_START, -1, {"fixture": self.fixture.name, "url": self.url,
                                         "stream_sid": self.ids.stream_sid, "call_sid": self.ids.call_sid})
        limit_s = call_limit_s(self.fixture, self.opts)
        receiver = asyncio.create_task(self.receive(ws), name=f"{self.log.call_id}-receive")
        k = 0
        try:
            while True:
                wait = (self.line.clock.due_ns(k) - self.log.now_ns()) / _NS
                if wait > 0:
                    await asyncio.sleep(wait)
                self.line.clock.sent(k, self.log.now_ns())
                await self._tick(ws, k)
                now_s = (k + 1) * FRAME_SAMPLES / LINE_RATE
                k += 1
                if self.failure is not None:
                    raise LineFailure(self.failure)
                if self.scheduler.done(now_s):
                    return
                if self.closed is not None:
                    raise LineFailure(self._hangup_line(now_s))
                self._watchdogs(now_s, limit_s)
        finally:
            receiver.cancel()
            try:
                await receiver
            except asyncio.CancelledError:
                pass
            self._finish((k + 1) * FRAME_SAMPLES)

    async def _tick(self, ws: ClientConnection, k: int) -> None:
        lo, hi = k * FRAME_SAMPLES, (k + 1) * FRAME_SAMPLES
        for clip in self.scheduler.due(hi / LINE_RATE):
            self._place(clip.turn, clip.start_s, lo)
        frame = np.zeros(FRAME_SAMPLES, dtype=np.int32)
        for start, audio in self.playing:
            a, b = max(lo, start), min(hi, start + audio.size)
            if a < b:
                frame[a - lo:b - lo] += audio[a - start:b - start]
        self.playing = [(s, a) for s, a in self.playing if s + a.size > hi]
        payload = mulaw.encode(np.clip(frame, -32768, 32767).astype(np.int16))
        self.recorder.put("left", lo, mulaw.decode(payload))  # what the line carried, codec and all
        # what leaves the queue now is heard from now on: the right channel at the tick's wall time
        out = self.queue.pull(FRAME_SAMPLES)
        self.recorder.put("right", hi, out.samples)
        self.recorder.mark(hi + FRAME_SAMPLES)
        self.line.tick(self.queue.depth)
        self.line.marks_played += len(out.marks)
        try:
            await ws.send(protocol.media(self.ids, payload, lo * 1000 // LINE_RATE))
            for name in self.echo + out.marks:
                await ws.send(protocol.mark(self.ids, name))
        except ConnectionClosed:
            return  # the receiver records the close; the clock reports it
        finally:
            self.echo = []
        self._audible(self.tracker.advance(self.recorder.right, hi + FRAME_SAMPLES))
        self._settle_clear(hi / LINE_RATE)

    def _settle_clear(self, now_s: float, final: bool = False) -> None:
        """An open clear becomes a pause once the agent is audible again (past the frame already playing when it
        came), or a stop (the interruption row, at the clear) once it stayed silent `clear_pause_s`."""
        if self.open_clear is None:
            return
        t_ns, turn, dropped_ms = self.open_clear
        clear_s = t_ns / _NS
        heard_s = self.tracker.last_active_s
        if heard_s is not None and heard_s > clear_s + 2 * FRAME_SAMPLES / LINE_RATE:
            self.line.clears_resumed += 1
            self.open_clear = None
        elif final or now_s - clear_s >= self.opts.clear_pause_s:
            self.log.log(K.INTERRUPTION, turn, {"bot_speaking": True, "by": "clear", "dropped_ms": dropped_ms},
                         t_ns=t_ns)
            self.open_clear = None

    def _audible(self, events: list[Any]) -> None:
        for ev in events:
            if ev.kind == "onset":
                self.bot_turn = reply_turn(self.said, ev.t_s)
                self.scheduler.bot_audio_started(ev.t_s)
                self.log.log(K.BOT_AUDIBLE_ONSET, self.bot_turn, {"by": "line"}, t_ns=int(ev.t_s * _NS))
            else:
                self.scheduler.bot_audio_stopped(ev.t_s)
                self.log.log(K.BOT_AUDIBLE_END, self.bot_turn, {"by": "line"}, t_ns=int(ev.t_s * _NS))

    def _place(self, turn: int, start_s: float, frame_lo: int) -> None:
        start = max(int(round(start_s * LINE_RATE)), frame_lo)
        self.scheduler.clip_started(turn, start / LINE_RATE)
        t = self.fixture.turns[turn]
        audio = self.clips[turn] if self.opts.caller is None else to_int16(t.audio)
        self.playing.append((start, audio))
        ns = _NS / LINE_RATE
        u = PlayedUtterance(turn=turn, clip_start_ns=int(start * ns), clip_end_ns=int((start + audio.size) * ns),
                            speech_start_ns=int((start + t.speech_onset_s * LINE_RATE) * ns),
                            speech_end_ns=int((start + t.speech_offset_s * LINE_RATE) * ns),
                            expect=t.expect, text=t.text, expect_reply=t.expect_reply)
        self.log.add_utterance(u)
        self.said.append(Utterance(turn, u.speech_start_ns / _NS, u.speech_end_ns / _NS, t.expect))

    def _watchdogs(self, now_s: float, limit_s: float) -> None:
        if not self.got_media and self.said and now_s >= self.said[0].speech_end_s + self.opts.answer_timeout_s:
            raise LineFailure(f"the agent never answered: no audio in {now_s:.1f} s of call "
                              f"({self.opts.answer_timeout_s:g} s after the caller's first turn)")
        if now_s >= limit_s:
            raise LineFailure(f"the call went past its {limit_s:.0f} s limit with turn "
                              f"{len(self.scheduler.scheduled())} of {len(self.fixture.turns)} still to play")

    def _hangup_line(self, now_s: float) -> str:
        c = self.closed or {}
        code = f"close code {c.get('code')}" if c.get("code") is not None else "no close frame"
        played = len(self.scheduler.scheduled())
        return (f"the agent hung up at {c.get('t_s', now_s):.2f} s, mid-call ({played} of "
                f"{len(self.fixture.turns)} caller turns started; {code})")

    def _finish(self, end_sample: int) -> None:
        self.recorder.mark(end_sample)
        t_ns = int(end_sample / LINE_RATE * _NS)
        for ev in self.tracker.advance(self.recorder.right, end_sample) + self.tracker.flush():
            self._audible([ev])
        self._settle_clear(end_sample / LINE_RATE, final=True)
        self.log.log(K.CALL_END, -1, {}, t_ns=t_ns)


async def place_call(url: str, fixture: Fixture, call_id: str, opts: CallOptions | None = None,
                     writer: EventWriter | None = None) -> CallResult:
    """Play one fixture to the agent at `url`; never raises for a bad line (see `CallResult.failure`)."""
    opts = opts or CallOptions()
    call = _Call(url, fixture, call_id, opts, writer)
    failure: str | None = None
    try:
        ws = await asyncio.wait_for(
            connect(url, additional_headers=opts.headers or None, open_timeout=opts.connect_timeout_s,
                    ping_interval=None, max_size=2**22, compression=None),
            timeout=opts.connect_timeout_s + 1.0)
    except Exception as e:  # every way a dial fails is one line
        failure = _connect_failure(e, opts.connect_timeout_s)
        call.log.restart_clock()
        call.log.log(K.CALL_START, -1, {"fixture": fixture.name, "url": url})
        call.log.log(K.CALL_END, -1, {})
    else:
        try:
            await asyncio.wait_for(call.run(ws), timeout=call_limit_s(fixture, opts) + 30.0)
        except LineFailure as e:
            failure = str(e)
        except TimeoutError:
            failure = "the call hung past its time limit (watchdog)"
        except ConnectionClosed:
            failure = call._hangup_line(call.log.now_ns() / _NS)
        finally:
            try:
                if ws.protocol.close_rcvd is None:
                    await ws.send(protocol.stop(call.ids))
            except ConnectionClosed:
                pass
            await ws.close()
    return _result(call, fixture, failure)


def failed_call(url: str, fixture: Fixture, call_id: str, failure: str, opts: CallOptions | None = None,
                writer: EventWriter | None = None) -> CallResult:
    """The result of a call that never reached the line (its caller process died, say): no audio, `failure`."""
    call = _Call(url, fixture, call_id, replace(opts or CallOptions(), caller=None), writer)  # nobody listens
    call.log.restart_clock()
    call.log.log(K.CALL_START, -1, {"fixture": fixture.name, "url": url})
    call.log.log(K.CALL_END, -1, {})
    return _result(call, fixture, failure)


def _result(call: _Call, fixture: Fixture, failure: str | None) -> CallResult:
    """`fixture`: as given (a listening caller's call holds its turns as played)."""
    if failure is not None:
        call.failure = failure
        call.log.error("line", f"{call.url}: {failure}", turn=-1)
    return CallResult(call_id=call.log.call_id, fixture=fixture, url=call.url, log=call.log,
                      recorder=call.recorder, line=call.line, scheduler=call.scheduler, ids=call.ids,
                      failure=call.failure, duration_s=call.recorder.end / LINE_RATE, close=call.closed or {})
