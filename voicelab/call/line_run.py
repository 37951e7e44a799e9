"""`voicelab call`: fixtures played to an agent over the telephone media stream, into a normal run folder.

The calls run first (`voicelab.call.carrier`, `concurrency` at a time, the list `repeat` times); only when
every call has ended does the lab's recogniser read the agent's replies back from the recordings
(`voicelab.call.readback`), so the agent under test never shares the CPU with it. Then the folder is written
through `voicelab.runs.folder`: calls/<id>.wav (left caller, right bot, 8 kHz, on the call clock) and
calls/<id>.json (the truth `voicelab.measure.truth` reads, plus the line's own figures), events.jsonl,
turns.csv, the Parquet tables and summary.json last.

summary.json is `voicelab.measure.metrics.summarize` over the call's rows (FAR, stop latency, recovery, false
barge-ins, the WAV truth check), with what audio alone cannot show set to None and named in `not_measured`,
and with the figures only a line run has: `talk_over_ms`, false cut-ins read from the recording, `line` (pacing, jitter, queue depth, clears, marks),
`answers` from the read-back words, `calls_failed`, `clears_unprompted` and `failures`.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from voicelab.call.carrier import CallOptions, CallResult, place_call
from voicelab.call.line import line_summary
from voicelab.call.listening import as_script, listening_options, load_scenarios, task_outcome, task_summary
from voicelab.call.pacing import LINE_RATE
from voicelab.call.readback import ReadBack, Recognizer, read_back, score_reply_words
from voicelab.call.reply_spans import cut_in_turns, reply_spans, reply_turn, silence_stops, talk_over_ms
from voicelab.fixtures.format import Fixture, load_fixture, select
from voicelab.measure.audio_gaps import Gap, unexplained
from voicelab.measure.audio_gaps import gaps as audio_gaps
from voicelab.measure.events import Event, EventKind, EventWriter, read_events
from voicelab.measure.figures import SummaryData, line_columns, line_not_measured
from voicelab.measure.figures import summary as figure_summary
from voicelab.measure.intervals import latency_stats
from voicelab.measure.machine_load import MachineLoad
from voicelab.measure.metrics import percentile, summarize, turn_table, unscore_cut_replies
from voicelab.measure.truth import TruthError, Utterance, analyze_run, call_truth_dict
from voicelab.runs.folder import EVENTS, RunFolder
from voicelab.runs.machine_probe import measured

K = EventKind
# What a recording of the line cannot show: the agent's insides (its turn end, recogniser, model, TTS) and what
# it did with the words (tool calls, context kept after a cut). summary.json sets these to None and lists them.
# The figure catalogue says, figure by figure, what a line run measures.
NOT_MEASURED = line_not_measured()  # as the catalogue stood at import; the run reads it afresh
# turns.csv / turns.parquet columns a line run sets from its recording (answers from the read-back words)
LINE_TURN_COLUMNS = line_columns()


@dataclass(frozen=True)
class BargeInRule:
    """When the agent's audio counts as stopped on a backchannel without a `clear` (figures.silence_stops)."""

    # 2 s: an agent's pause on a backchannel is silence on the line once it clears; the lab's own pauses last
    # 0.97-1.29 s, and LiveKit Agents gives an agent 2 s to resume (docs/decisions/line-stop-silence-2s.md)
    stop_silence_ms: float = 2000.0
    grace_ms: float = 1200.0


def redact_url(url: str) -> str:
    """The URL without its query values (a token rides there) or user info, for files and messages."""
    parts = urlsplit(url)
    query = "&".join(f"{kv.split('=', 1)[0]}=…" for kv in parts.query.split("&") if kv) if parts.query else ""
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"{url}: not a ws:// or wss:// URL of an agent's media-stream endpoint")


def call_ids(fixtures: Sequence[Fixture], repeat: int = 1) -> list[tuple[str, Fixture]]:
    """(call_id, fixture) in playing order, named as `voicelab run` names them (r1-00-NAME with repeats)."""
    if repeat < 1:
        raise ValueError(f"--repeat {repeat}: needs at least 1")
    return [(f"{f'r{r}-' if repeat > 1 else ''}{i:02d}-{fx.name}", fx)
            for r in range(1, repeat + 1) for i, fx in enumerate(fixtures)]


def load_line_fixtures(specs: Sequence[str]) -> list[Fixture]:
    """Fixtures named on the command line, loaded at the line's 8 kHz (truth found on what the line carries)."""
    return [load_fixture(p, sample_rate=LINE_RATE) for p in select(list(specs) or ["default"])]


def play_all(url: str, plan: Sequence[tuple[str, Fixture]], opts: CallOptions, writer: EventWriter | None,
             concurrency: int = 1, on_done: Callable[[CallResult], None] | None = None, ray: Any = None,
             cpus_per_call: float = 1.0) -> tuple[list[CallResult], MachineLoad | None]:
    """Every call of the plan, `concurrency` at once: from this process, with the machine's load meanwhile
    (`voicelab.runs.machine_probe`), or with `ray` (the joined module) each from a Ray task
    (`voicelab.call.ray_calls`; each task measures its own call, and the run's load is the busiest call's)."""
    if ray is not None:
        from voicelab.call.ray_calls import play_all_ray

        return play_all_ray(ray, url, plan, opts, writer, concurrency, cpus_per_call, on_done)
    return asyncio.run(measured(_play_here(url, plan, opts, writer, concurrency, on_done)))


async def _play_here(url: str, plan: Sequence[tuple[str, Fixture]], opts: CallOptions, writer: EventWriter | None,
                     concurrency: int = 1, on_done: Callable[[CallResult], None] | None = None) -> list[CallResult]:
    slots = asyncio.Semaphore(concurrency)

    async def one(call_id: str, fx: Fixture) -> CallResult:
        async with slots:
            result = await place_call(url, fx, call_id, opts, writer)
        if on_done is not None:
            on_done(result)
        return result

    return list(await asyncio.gather(*(one(cid, fx) for cid, fx in plan)))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _after_call_rows(result: CallResult, rule: BargeInRule) -> list[Event]:
    """Rows only the whole recording shows: a backchannel on which the agent fell silent (no clear)."""
    cleared = {e.turn for e in result.log.events if e.kind == K.INTERRUPTION}
    bot = result.stereo[:, 1]
    stops = silence_stops(bot, LINE_RATE, result.said, rule.stop_silence_ms / 1000, rule.grace_ms / 1000)
    out = []
    for turn, t_s in stops.items():
        if turn in cleared:
            continue
        out.append(Event(result.call_id, turn, int(t_s * 1e9), str(K.INTERRUPTION),
                         {"bot_speaking": True, "by": "silence", "stop_silence_ms": rule.stop_silence_ms}))
    return out


def _line_gaps(result: CallResult) -> list[Gap]:
    """The agent's audio gaps on the recording, less the cuts its own clears made (`audio_gaps.unexplained`)."""
    return unexplained(audio_gaps(result.stereo[:, 1], LINE_RATE), result.line.heard_clears_s)


def _gaps_per_turn(result: CallResult) -> dict[int, int]:
    """The agent's audio gaps counted for the caller turn whose reply they fall in (-1: the greeting)."""
    out: dict[int, int] = {}
    for g in _line_gaps(result):
        turn = reply_turn(result.said, g.start_s)
        out[turn] = out.get(turn, 0) + 1
    return out


def _call_meta(result: CallResult, readback: list[ReadBack] | None, url: str) -> dict[str, Any]:
    fx = result.fixture
    truth = call_truth_dict(result.call_id, [
        Utterance(turn=u.turn, speech_start_s=u.speech_start_ns / 1e9, speech_end_s=u.speech_end_ns / 1e9,
                  expect=u.expect, clip_start_s=u.clip_start_ns / 1e9, clip_end_s=u.clip_end_ns / 1e9,
                  text=u.text) for u in result.log.utterances], fixture=fx.name, fixture_path=str(fx.path),
        sample_rate=LINE_RATE)
    bot = result.stereo[:, 1]
    return {
        "fixture": fx.name, "fixture_path": str(fx.path), "utterances": truth["utterances"],
        "status": "failed" if result.failure else "ok", "failure": result.failure, "url": url,
        "stream_sid": result.ids.stream_sid, "call_sid": result.ids.call_sid,
        "duration_s": round(result.duration_s, 3), "close": result.close,
        "schedule": [{"turn": c.turn, "start_s": round(c.start_s, 3), "reason": c.reason, "note": c.note}
                     for c in result.scheduler.scheduled()],
        "talk_over_ms": {str(k): v for k, v in talk_over_ms(bot, LINE_RATE, result.said).items()},
        "audio_gaps": [{"start_s": round(g.start_s, 3), "ms": g.ms} for g in _line_gaps(result)],
        "clears_heard_s": [round(t, 3) for t in result.line.heard_clears_s],
        "line": line_summary([result.line]),
        "readback": None if readback is None else [r.to_dict() for r in readback],
        "scenario": task_outcome(result),
    }


def _readback_all(results: Sequence[CallResult], recognizer: Recognizer) -> dict[str, list[ReadBack]]:
    out = {}
    for r in results:
        bot = r.stereo[:, 1]
        expects = {u.turn: u.expect_reply for u in r.log.utterances}
        out[r.call_id] = read_back(recognizer, bot, LINE_RATE, reply_spans(bot, LINE_RATE, r.said), expects)
    return out


def _turn_rows(events: list[Event], results: Sequence[CallResult],
               readbacks: dict[str, list[ReadBack]] | None) -> list[dict[str, Any]]:
    """turn_table's rows with the line's columns: talk-over and the read-back reply with its score."""
    by_id = {r.call_id: r for r in results}
    # each call's recording is read once: talk-over, cut-ins and gaps per turn
    heard = {r.call_id: (talk_over_ms(r.stereo[:, 1], LINE_RATE, r.said),
                         cut_in_turns(r.stereo[:, 1], LINE_RATE, r.said), _gaps_per_turn(r)) for r in results}
    rows = turn_table(events)
    for row in rows:
        r = by_id.get(row["call_id"])
        over, cut_ins, gaps = heard.get(row["call_id"], ({}, set(), None))
        row["talk_over_ms"] = over.get(row["turn"])
        # the line attributes an onset inside the caller's speech to no reply: the recording says it was a cut-in
        row["false_cut_in"] = bool(row.get("false_cut_in")) or row["turn"] in cut_ins
        row["audio_gaps"] = None if gaps is None else gaps.get(row["turn"], 0)
        rb = next((b for b in (readbacks or {}).get(row["call_id"], []) if b.turn == row["turn"]), None)
        row["readback_text"] = None if rb is None else rb.text
        row["answer_text"] = None if rb is None else rb.text
        row["answer_correct"] = None if rb is None else rb.correct
        row["coherent"] = None if rb is None else rb.coherent
        row["wrong_tool_call"] = None  # not audible
        row["expectations"] = _checks(rb, r, row, readbacks is not None)
        interrupts = [e for e in events if e.call_id == row["call_id"] and e.kind == K.INTERRUPTION
                      and e.turn == row["turn"]]
        row["false_barge_in_by"] = (interrupts[0].payload.get("by") if interrupts and row.get("false_barge_in")
                                    else None)
    return unscore_cut_replies(rows)  # as in process: a reply the caller cut short is not scored


def _checks(rb: ReadBack | None, result: CallResult | None, row: dict[str, Any], read: bool) -> str | None:
    """The turn's expectations cell: from its read-back, or against silence when the agent said nothing to it
    (None without a read-back at all, or when the turn has no checks)."""
    if rb is not None:
        return rb.expectations
    if not read or result is None or row["expect"] == "no_interrupt":
        return None
    expect = next((u.expect_reply for u in result.log.utterances if u.turn == row["turn"]), None)
    return score_reply_words("", expect).get("expectations")


def _answers(events: list[Event], rows: list[dict[str, Any]], truth: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The answers block, made by the catalogue from the rows the tables show (the read-back scores in them)."""
    block = figure_summary(SummaryData(rows, events, truth, percentile, latency_stats)).get("answers", {})
    return {**block, "replies": sum(1 for r in rows if r.get("readback_text")), "wrong_tool_calls": None,
            "from": "read-back words"}


def line_run_summary(events: list[Event], rows: list[dict[str, Any]], results: Sequence[CallResult],
                     meta: dict[str, Any], truth: list[dict[str, Any]] | None, rule: BargeInRule,
                     readback: bool) -> dict[str, Any]:
    s = summarize(events, meta, truth=truth)
    unseen = line_not_measured()
    for key in unseen:
        s[key] = None
    s["measured_from"] = "line"
    s["not_measured"] = list(unseen) + ([] if readback else ["answers"])
    s["answers"] = _answers(events, rows, truth) if readback else None
    answered = [r for r in rows if r["expect"] != "no_interrupt"]
    s["talk_over_ms"] = latency_stats([r["talk_over_ms"] for r in answered if r.get("talk_over_ms") is not None])
    s["false_cut_ins"] = sum(1 for r in rows if r.get("false_cut_in"))
    s["false_barge_in_rule"] = {"by": "clear, or silence", "stop_silence_ms": rule.stop_silence_ms,
                                "grace_ms": rule.grace_ms}
    s["line"] = line_summary([r.line for r in results])
    s["calls_failed"] = sum(1 for r in results if r.failure)
    s["clears_unprompted"] = sum(r.line.clears_unprompted for r in results)
    s["audio_gaps"] = sum(len(_line_gaps(r)) for r in results)
    s["failures"] = [f"{r.call_id}: {r.url}: {r.failure}" for r in results if r.failure]
    s["tasks"] = task_summary(results)  # scenario calls' outcomes (done, not done, gave up); None: none listened
    return s


def run_line_calls(url: str, fixtures: Sequence[Fixture], out: Path, *, opts: CallOptions | None = None,
                   repeat: int = 1, concurrency: int = 1, readback: bool = True,
                   recognizer_factory: Callable[[], Recognizer] | None = None,
                   rule: BargeInRule | None = None, command: Sequence[str] = (), run_dir: Path | None = None,
                   on_done: Callable[[CallResult], None] | None = None,
                   listen: bool = True, ray: Any = None, cpus_per_call: float = 1.0) -> tuple[Path, list[CallResult]]:
    """Play every fixture to the agent at `url`; return the sealed run folder and the call results. `listen`: a
    fixture with a scenario chooses each line from the agent's last reply (`voicelab.call.listening`); without,
    its turns play in order as a fixed script. `ray`: the joined Ray module (`voicelab.runs.cluster.joined`):
    each call is placed from a Ray task reserving `cpus_per_call`."""
    check_url(url)
    if concurrency < 1:
        raise ValueError(f"--concurrency {concurrency}: needs at least 1")
    rule = rule or BargeInRule()
    # a clear the agent's audio comes back within the silence rule's time is a pause, as silence is
    opts = replace(opts or CallOptions(), clear_pause_s=rule.stop_silence_ms / 1000)
    scenarios = load_scenarios(fixtures) if listen else {}  # a bad scenario stops the run before any call
    fixtures = fixtures if listen else [as_script(f) for f in fixtures]
    opts = listening_options(opts, fixtures, scenarios, recognizer_factory or _whisper)
    plan = call_ids(fixtures, repeat)
    shown = redact_url(url)
    host = (urlsplit(url).hostname or "agent").replace(".", "-")
    run_dir = run_dir or Path(out) / f"{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-call-{host}"
    folder = RunFolder.create(run_dir)
    config = folder.write_config({
        "kind": "call", "engine": f"line:{shown}", "sampler": None, "policy": None, "url": shown,
        "headers": sorted(opts.headers), "params": sorted(opts.params),  # names only: values may be secrets
        "sample_rate": LINE_RATE, "encoding": "audio/x-mulaw", "frame_ms": 20, "repeat": repeat,
        "concurrency": concurrency, "ray": ray is not None, "readback": readback,
        "readback_recognizer": (None if not readback else "custom" if recognizer_factory else READBACK_RECOGNIZER),
        "greeting": opts.greeting, "listen": bool(scenarios),
        "timeouts_s": {"connect": opts.connect_timeout_s, "answer": opts.answer_timeout_s,
                       "no_reply": opts.no_reply_timeout_s, "max_call": opts.max_call_s},
        "false_barge_in_rule": {"stop_silence_ms": rule.stop_silence_ms, "grace_ms": rule.grace_ms},
        "fixtures": [{"name": f.name, "path": str(f.path), "sha256": _sha256(f.path)} for f in fixtures],
    }, command)
    with folder.events_writer() as writer:
        results, machine = play_all(url, plan, opts, writer, concurrency, on_done, ray, cpus_per_call)
        after = [e for r in results for e in _after_call_rows(r, rule)]
        for e in after:
            writer.write(e)
    folder.add_to_config({"machine_load": None if machine is None else machine.to_json()})
    notes: list[str] = []
    readbacks: dict[str, list[ReadBack]] | None = None
    if readback:  # only now: every call is over, the agent has the CPU to itself no longer
        try:
            readbacks = _readback_all(results, (recognizer_factory or _reader)())
        except Exception as e:  # a recogniser that cannot load leaves the timing figures standing
            notes.append(f"read-back not done: {type(e).__name__}: {e}")
    for r in results:
        folder.write_call(r.call_id, r.stereo, LINE_RATE,
                          _call_meta(r, None if readbacks is None else readbacks.get(r.call_id), shown))
    events = read_events(run_dir / EVENTS)
    rows = _turn_rows(events, results, readbacks)
    folder.write_turns_csv(rows)
    try:
        truth: list[dict[str, Any]] | None = analyze_run(run_dir)
    except TruthError as e:
        truth = None
        notes.append(f"truth analyzer: {e}")
    try:
        from voicelab.analysis.tables import parquet_tables  # pandas, pyarrow: loaded once the calls are over

        folder.write_tables(parquet_tables(run_dir, truth_rows=truth, events=events, turn_columns={
            (r["call_id"], r["turn"]): {k: r.get(k) for k in line_columns()} for r in rows}))
    except Exception as e:
        notes.append(f"parquet tables not written: {type(e).__name__}: {e}")
    summary = line_run_summary(events, rows, results,
                               {"run_id": folder.run_id, "engine": config["engine"], "sampler": None,
                                "policy": None}, truth, rule, readbacks is not None)
    summary["machine"] = None if machine is None else machine.to_json()
    folder.write_notes(notes)
    folder.seal(summary)
    return run_dir, results


def _whisper() -> Recognizer:
    """The listening caller's ear during the calls: Whisper tiny.en, quick enough not to keep a caller waiting."""
    from voicelab.speech.recognizers import make_recognizer  # ctranslate2: loaded only when listening

    return make_recognizer("whisper")


READBACK_RECOGNIZER = "whisper-base"  # docs/decisions/readback-whisper-base.md


def _reader() -> Recognizer:
    """The read-back's recogniser: Whisper base. It reads after every call has ended, so its cost is the lab's
    alone; on replies heard through the line it misreads fewer slot words than tiny.en."""
    from voicelab.speech.recognizers import make_recognizer  # ctranslate2: loaded only when reading back

    return make_recognizer(READBACK_RECOGNIZER)
