"""Synthetic run folders (the RUNFOLDER contract) with known timings, for tests, demos and dry-run sweeps.

No model, no TTS, no pipecat: a scripted caller, a toy diffusion (or autoregressive) canvas fed through the
real `voicelab.gate.Gate`, and seeded noise bursts standing in for speech on the recorded stereo WAV. Every
time is chosen here, so a test knows the true onsets (the first sample of each burst) and can check the
analyzer and the figures against them; `Timing.playout_delay_ms` adds a known delay between the pipeline and
the caller's ear (it moves the playout events, the acoustic marks and the bot channel of the WAV).

`write_run(out_dir, config, calls)` writes config.json, events.jsonl, calls/<id>.wav + .json, the Parquet
tables and summary.json (truth figures included), and returns the run folder. `synthetic_cell_runner` is a
`voicelab.runs.sweep` cell runner built on it (`voicelab sweep --runner synthetic`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from engines.snapshot import Snapshot
from voicelab.analysis.price import price_summary
from voicelab.analysis.tables import parquet_tables
from voicelab.gate import Gate, ShaperParams
from voicelab.measure.events import Event, EventKind, snapshot_payload
from voicelab.measure.machine_load import MachineLoad
from voicelab.measure.metrics import summarize
from voicelab.measure.truth import Utterance, analyze_run, call_truth_dict
from voicelab.pcm import SAMPLE_RATE
from voicelab.runs.folder import RunFolder
from voicelab.runs.matrix import CellSpec

K = EventKind
MASK_ID, EOS_ID, WRONG_ID = 0, 1, 2


@dataclass(frozen=True)
class Timing:
    """Pipeline delays of the synthetic call (ms unless named _s)."""

    vad_start_ms: float = 150.0  # caller speech start -> vad_start
    endpointing_ms: float = 300.0  # caller speech end -> turn_end
    stt_ms: float = 80.0  # turn_end -> llm_request
    step_ms: float = 25.0  # one engine step
    tts_ms: float = 120.0  # tts_request -> tts_first_audio
    buffer_ms: float = 40.0  # tts_first_audio -> playout start (output buffering)
    playout_delay_ms: float = 0.0  # extra delay between the pipeline's playout and the caller's ear
    react_ms: float = 120.0  # interrupting speech start -> interruption (the pipeline stops its output)
    word_s: float = 0.26  # one spoken word of the bot (a noise burst)
    gap_s: float = 0.06  # silence between two words
    jitter_ms: float = 2.0  # error of the pipeline's own acoustic marks (bot_audible_*)
    level_dbfs: float = -18.0  # loudness of the bursts


@dataclass(frozen=True)
class ScriptedTurn:
    """One caller utterance and the bot's scripted answer to it ('' = none, e.g. a backchannel)."""

    text: str
    reply: str = ""
    expect: str | None = None
    after: str = "prev_end"  # call_start | prev_end | bot_audio_start | bot_audio_end (of the previous reply)
    delay_s: float = 0.4
    speech_s: float = 1.0  # caller speech duration (the clip adds 0.1 s of silence each side)


@dataclass(frozen=True)
class ScriptedCall:
    """A synthetic call's script: its caller turns in order, and the fixture name its run rows carry."""

    call_id: str
    turns: tuple[ScriptedTurn, ...]
    fixture: str = "synthetic"


def plain_call(call_id: str = "c0") -> ScriptedCall:
    """Two ordinary question-and-answer turns, no interruptions."""
    return ScriptedCall(call_id, (
        ScriptedTurn("hi what time do you open on saturday",
                     "we open at nine in the morning, and close at five.",
                     after="call_start", delay_s=0.5, speech_s=1.4),
        ScriptedTurn("great thanks", "you are welcome, see you on saturday.", after="bot_audio_end",
                     delay_s=0.5, speech_s=0.7),
    ), fixture="synthetic_plain")


def barge_in_call(call_id: str = "c1") -> ScriptedCall:
    """A question, a barge-in that cuts the answer, and a backchannel over the second answer."""
    return ScriptedCall(call_id, (
        ScriptedTurn("what time do you open on saturday",
                     "on saturday we open at nine and we close at five in the "
                     "evening, every week of the year.", after="call_start", delay_s=0.5, speech_s=1.3),
        ScriptedTurn("sorry I meant sunday",
                     "on sunday we are closed all day, but monday we open at nine again.",
                     expect="interrupt", after="bot_audio_start", delay_s=1.0, speech_s=0.9),
        ScriptedTurn("mm-hmm", expect="no_interrupt", after="bot_audio_start", delay_s=0.8, speech_s=0.4),
    ), fixture="synthetic_barge_in")


def default_calls() -> list[ScriptedCall]:
    return [plain_call("c0"), barge_in_call("c1")]


# ---- the toy engine -------------------------------------------------------------------------------------

def _pieces(words: Sequence[str]) -> list[str]:
    return [("" if i == 0 else " ") + w for i, w in enumerate(words)]


class _ToyCanvas:
    """A toy denoising canvas over the words of a scripted answer (one token per word, then EOS)."""

    def __init__(self, words: Sequence[str], sampler: str, rng: random.Random) -> None:
        self.true = _pieces(words) + [""]
        self.n = len(self.true)
        self.sampler = sampler
        self.rng = rng
        self.masked = [True] * self.n
        self.pieces = [""] * self.n
        self.wrong: int | None = None  # position showing a wrong word this step (revising sampler)
        self.pinned = 0
        self.step = 0
        self.forwards = 0
        # a revising sampler keeps polishing a few steps after the last unmask, and may change what the gate
        # already released (unless it was pinned): the defects the figures must catch
        self.polish = 8 if sampler == "revising" else 0

    def pin(self, n: int) -> None:
        self.pinned = max(self.pinned, n)

    def _eos(self) -> int | None:
        e = self.n - 1
        return e if not any(self.masked[: e + 1]) else None

    def _snap(self, t_ns: int, revised: Sequence[int], done: bool) -> Snapshot:
        tokens = tuple(MASK_ID if m else (EOS_ID if i == self.n - 1 else (WRONG_ID if i == self.wrong else 10 + i))
                       for i, m in enumerate(self.masked))
        conf = tuple(0.2 + 0.5 * self.rng.random() if m else 0.7 + 0.3 * self.rng.random() for m in self.masked)
        return Snapshot(step=self.step, t_ns=t_ns, tokens=tokens, masked=tuple(self.masked), confidence=conf,
                        guesses=tokens, pieces=tuple("" if m else p for m, p in zip(self.masked, self.pieces,
                                                                                   strict=True)),
                        eos=self._eos(), block_size=self.n, blocks_done=self.n if done else 0,
                        pinned=self.pinned, forwards=self.forwards, done=done, revised=tuple(revised))

    def advance(self, t_ns: int) -> Snapshot:
        """One step: unmask some positions (and, for 'revising', maybe flip one released word for a step)."""
        self.step += 1
        self.forwards += 1
        revised: list[int] = []
        if self.wrong is not None:  # put back the word flipped last step
            self.pieces[self.wrong] = self.true[self.wrong]
            revised.append(self.wrong)
            self.wrong = None
        if self.sampler == "autoregressive":
            k, window = 1, 1
        elif self.sampler == "threshold":
            k, window = 3, 4
        else:
            k, window = 2, 4
        for _ in range(k):
            open_pos = [i for i, m in enumerate(self.masked) if m]
            if not open_pos:
                break
            i = self.rng.choice(open_pos[:window])
            self.masked[i] = False
            self.pieces[i] = self.true[i]
        if not any(self.masked) and self.polish > 0:
            self.polish -= 1
        if self.sampler == "revising" and not revised and self.rng.random() < 0.35:
            cands = [i for i in range(self.pinned, self.n - 1) if not self.masked[i]]
            if cands:
                self.wrong = self.rng.choice(cands)
                self.pieces[self.wrong] = (" " if self.wrong else "") + "uh"
                revised.append(self.wrong)
        done = not any(self.masked) and self.wrong is None and self.polish == 0
        return self._snap(t_ns, revised, done)


# ---- one call -------------------------------------------------------------------------------------------

@dataclass
class _Reply:
    turn: int
    events: list[Event] = field(default_factory=list)  # pipeline side, up to TTS
    chunks: list[tuple[int, str, float, float]] = field(default_factory=list)  # id, text, heard start/end (s)
    words: list[tuple[float, float, str, int]] = field(default_factory=list)  # heard start, end, word, chunk
    onset_s: float | None = None
    end_s: float | None = None
    cut_s: float | None = None


def _ns(s: float) -> int:
    return int(round(s * 1e9))


class _CallSim:
    def __init__(self, call: ScriptedCall, config: dict[str, Any], timing: Timing, seed: int) -> None:
        self.call = call
        self.cfg = config
        self.tm = timing
        self.rng = random.Random(seed)
        self.events: list[Event] = [Event(call.call_id, -1, 0, K.CALL_START, {})]
        self.truth: list[dict[str, Any]] = []
        self.replies: list[_Reply] = []
        self.caller_bursts: list[tuple[float, float]] = []

    def ev(self, turn: int, t_s: float, kind: K, **payload: Any) -> None:
        self.events.append(Event(self.call.call_id, turn, _ns(t_s), kind, payload))

    def _speech_bursts(self, start: float, dur: float) -> list[tuple[float, float]]:
        """Word-like bursts filling [start, start+dur], exact at both ends."""
        out, t = [], start
        while t < start + dur - 1e-9:
            e = min(t + self.tm.word_s, start + dur)
            out.append((t, e))
            t = e + self.tm.gap_s
        return out

    def run(self) -> None:
        tm = self.tm
        prev_clip_end = 0.0
        for k, turn in enumerate(self.call.turns):
            prev = self.replies[-1] if self.replies else None
            if turn.after == "call_start":
                anchor = 0.0
            elif turn.after == "bot_audio_start" and prev is not None and prev.onset_s is not None:
                anchor = prev.onset_s
            elif turn.after == "bot_audio_end" and prev is not None and prev.end_s is not None:
                anchor = prev.end_s
            else:
                anchor = prev_clip_end
            clip_start = max(anchor + turn.delay_s, prev_clip_end)
            s0, s1 = clip_start + 0.1, clip_start + 0.1 + turn.speech_s
            prev_clip_end = s1 + 0.1
            self.caller_bursts += self._speech_bursts(s0, turn.speech_s)
            self.truth.append({"turn": k, "clip_start_s": clip_start, "clip_end_s": prev_clip_end,
                               "speech_start_s": s0, "speech_end_s": s1, "expect": turn.expect,
                               "text": turn.text})
            self.ev(k, clip_start, K.CALLER_CLIP_START, text=turn.text)
            self.ev(k, s0, K.CALLER_SPEECH_START, expect=turn.expect, text=turn.text)
            self.ev(k, s1, K.CALLER_SPEECH_END)
            self.ev(k, prev_clip_end, K.CALLER_CLIP_END)
            self.ev(k, s0 + tm.vad_start_ms / 1000, K.VAD_START)
            self.ev(k, s1 + 0.1, K.VAD_STOP)
            # a caller talking over the bot: interrupt (cut the reply) or a backchannel (it keeps going)
            if (prev is not None and prev.onset_s is not None and prev.end_s is not None
                    and prev.onset_s <= s0 < prev.end_s and turn.expect != "no_interrupt"):
                t_int = s0 + tm.react_ms / 1000
                self.ev(k, t_int, K.INTERRUPTION, bot_speaking=True)
                cut = t_int + tm.playout_delay_ms / 1000  # audio already buffered still reaches the ear
                if cut < prev.end_s:
                    prev.cut_s = cut
            if turn.reply:
                self.replies.append(self._reply(k, turn, s1))
        for r in self.replies:
            self._play(r)
        ends = [r.end_s for r in self.replies if r.end_s is not None] + [prev_clip_end]
        self.call_end_s = max(ends) + 1.0
        self.ev(-1, self.call_end_s, K.CALL_END)

    def _reply(self, k: int, turn: ScriptedTurn, speech_end: float) -> _Reply:
        tm = self.tm
        r = _Reply(k)
        t_turn = speech_end + tm.endpointing_ms / 1000
        t_req = t_turn + tm.stt_ms / 1000
        r.events.append(Event(self.call.call_id, k, _ns(t_turn), K.TURN_END, {}))
        r.events.append(Event(self.call.call_id, k, _ns(t_req - 0.005), K.STT_FINAL, {"text": turn.text}))
        r.events.append(Event(self.call.call_id, k, _ns(t_req), K.LLM_REQUEST, {"text": turn.text}))
        sampler = str(self.cfg.get("sampler") or "low_confidence")
        canvas = _ToyCanvas(turn.reply.split(), sampler, self.rng)
        policy = str(self.cfg.get("policy") or "prefix")
        shaper = ShaperParams(**(self.cfg.get("shaper") or {}))
        gate = Gate(policy, shaper, pin=canvas.pin if policy.startswith("pinned") else None)
        step_s = tm.step_ms / 1000 * (0.5 if sampler == "autoregressive" else 1.0)
        t, prev_snap = t_req, None
        released: list[tuple[Any, float]] = []
        for _ in range(400):
            t += step_s
            snap = canvas.advance(_ns(t))
            r.events.append(Event(self.call.call_id, k, _ns(t), K.ENGINE_SNAPSHOT,
                                  snapshot_payload(snap, prev_snap, canvas=True)))
            prev_snap = snap
            for c in gate.feed(snap, _ns(t)):
                r.events.append(Event(self.call.call_id, k, _ns(t), K.GATE_COMMIT, gate.commit_payload(c)))
                released.append((c, t))
            if snap.done:
                break
        r.events.append(Event(self.call.call_id, k, _ns(t), K.ENGINE_DONE,
                              {"tokens": canvas.n, "steps": canvas.step, "forwards": canvas.forwards,
                               "cancelled": False}))
        # TTS renders chunks one after another; playout is sequential, words back to back
        tts_free, play_free = 0.0, 0.0
        for c, t_commit in released:
            t_tts = max(t_commit + 0.002, tts_free)
            t_first = t_tts + tm.tts_ms / 1000
            words = c.text.split()
            dur = len(words) * tm.word_s + max(0, len(words) - 1) * tm.gap_s
            tts_free = t_first + 0.3 * dur  # renders faster than real time
            r.events.append(Event(self.call.call_id, k, _ns(t_tts), K.TTS_REQUEST,
                                  {"chunk_id": c.chunk_id, "text": c.text}))
            r.events.append(Event(self.call.call_id, k, _ns(t_first), K.TTS_FIRST_AUDIO, {"chunk_id": c.chunk_id}))
            start = max(t_first + tm.buffer_ms / 1000 + tm.playout_delay_ms / 1000, play_free)
            for j, w in enumerate(words):
                ws = start + j * (tm.word_s + tm.gap_s)
                r.words.append((ws, ws + tm.word_s, w, c.chunk_id))
            play_free = start + dur + tm.gap_s
            r.chunks.append((c.chunk_id, c.text, start, start + dur))
        if r.words:  # as planned; a later barge-in may cut it (see _play)
            r.onset_s, r.end_s = r.words[0][0], r.words[-1][1]
        return r

    def _play(self, r: _Reply) -> None:
        """Emit the output side of a reply, cut at `cut_s` if the caller barged in."""
        tm = self.tm
        cut = r.cut_s
        r.words = [(a, min(b, cut) if cut is not None else b, w, c) for a, b, w, c in r.words
                   if cut is None or a < cut]
        if r.words:
            r.onset_s = r.words[0][0]
            r.end_s = r.words[-1][1]
        played_words: list[str] = []
        for chunk_id, text, start, end in r.chunks:
            if cut is not None and start >= cut:
                break
            self.ev(r.turn, start, K.PLAYOUT_START, chunk_id=chunk_id, text=text)
            heard = [w for a, _, w, c in r.words if c == chunk_id]
            played_words += heard
            if cut is not None and end > cut:
                self.ev(r.turn, cut, K.PLAYOUT_STOP, chunk_id=chunk_id, text=text, played=" ".join(heard),
                        interrupted=True)
            else:
                self.ev(r.turn, end, K.PLAYOUT_STOP, chunk_id=chunk_id, text=text, interrupted=False)
        jit = tm.jitter_ms / 1000
        if r.onset_s is not None and r.end_s is not None:
            self.ev(r.turn, r.onset_s + self.rng.uniform(-jit, jit), K.BOT_AUDIBLE_ONSET)
            self.ev(r.turn, r.end_s + self.rng.uniform(-jit, jit), K.BOT_AUDIBLE_END)
        full = " ".join(text for _, text, _, _ in r.chunks)
        content = " ".join(played_words) if cut is not None else full
        self.ev(r.turn, (r.end_s or 0.0) + 0.01, K.CONTEXT_UPDATE, content=content, interrupted=cut is not None)
        # the reply's pipeline events, minus what a barge-in prevented (nothing after the cut is synthesized)
        for e in r.events:
            if cut is None or e.t_ns <= _ns(cut) or e.kind not in (K.TTS_REQUEST, K.TTS_FIRST_AUDIO):
                self.events.append(e)

    def wav(self) -> np.ndarray:
        n = int(np.ceil(self.call_end_s * SAMPLE_RATE))
        out = np.zeros((n, 2), dtype=np.float64)
        amp = 10 ** (self.tm.level_dbfs / 20) * np.sqrt(3.0)  # uniform noise: RMS = amp / sqrt(3)
        rs = np.random.default_rng(self.rng.randrange(2**31))
        for ch, bursts in ((0, self.caller_bursts), (1, [(a, b) for r in self.replies for a, b, _, _ in r.words])):
            for a, b in bursts:
                i, j = int(round(a * SAMPLE_RATE)), int(round(b * SAMPLE_RATE))
                out[i:j, ch] = rs.uniform(-amp, amp, j - i)
        return np.clip(np.round(out * 32767), -32768, 32767).astype(np.int16)


def write_run(out_dir: str | Path, config: dict[str, Any] | None = None,
              calls: Sequence[ScriptedCall] | None = None, timing: Timing | None = None, seed: int = 0,
              run_id: str | None = None, finish: bool = True, machine: MachineLoad | None = None) -> Path:
    """Write one synthetic run folder, out_dir/<run_id>, and return it.

    `config` may give engine, sampler, policy, shaper (ShaperParams fields). With finish=False only the
    files a crashed run leaves (config.json, events.jsonl, calls/) are written. `machine`: a made-up reading of
    the machine's load for its summary (None: not measured, as a run before the probe).
    """
    cfg = {"engine": "diffusion", "sampler": "low_confidence", "policy": "prefix", "shaper": {}}
    cfg.update(config or {})
    timing = timing or Timing()
    calls = list(calls) if calls is not None else default_calls()
    rid = run_id or f"synthetic-{cfg['engine']}-{cfg['sampler']}-{str(cfg['policy']).replace(':', '')}"
    folder = RunFolder.create(Path(out_dir) / rid)
    cfg.update({"synthetic": True, "seed": seed, "timing": asdict(timing),
                "fixtures": [{"name": c.fixture, "sha256": None} for c in calls]})
    cfg = folder.write_config(cfg)
    events: list[Event] = []
    for i, call in enumerate(calls):
        sim = _CallSim(call, cfg, timing, seed * 1000 + i)
        sim.run()
        sim.events.sort(key=lambda e: e.t_ns)
        events += sim.events
        meta = call_truth_dict(call.call_id, [Utterance(**u) for u in sim.truth], fixture=call.fixture,
                               fixture_path=f"synthetic/{call.fixture}", sample_rate=SAMPLE_RATE)
        folder.write_call(call.call_id, sim.wav(), SAMPLE_RATE, meta)
    folder.write_events(events)
    if finish:
        rows = analyze_run(folder.path)
        summary = {**summarize(events, cfg, truth=rows), "price": price_summary(events, cfg)}
        if machine is not None:
            summary["machine"] = machine.to_json()
        folder.write_tables(parquet_tables(folder.path, truth_rows=rows))
        folder.seal(summary)
    return folder.path


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


def synthetic_cell_runner(cell: CellSpec, out_dir: Path) -> Path:
    """A sweep cell runner that writes a synthetic run for the cell's configuration (no model, seconds)."""
    cfg = {"engine": cell.engine, "sampler": cell.sampler, "policy": cell.policy, "shaper": dict(cell.shaper)}
    timing = Timing()
    if cell.engine == "ar":
        timing = replace(timing, step_ms=15.0)
    calls: list[ScriptedCall] = []
    for r in range(1, cell.repeat + 1):
        rep = f"r{r}-" if cell.repeat > 1 else ""
        for f in cell.fixtures:  # 'plain', anything with 'barge', or both (e.g. 'default')
            if "barge" not in f:
                calls.append(plain_call(f"{rep}{_safe(f)}-plain"))
            if "plain" not in f:
                calls.append(barge_in_call(f"{rep}{_safe(f)}-barge"))
    return write_run(out_dir, cfg, calls, timing=timing, seed=cell.seed, run_id=cell.cell_id)
