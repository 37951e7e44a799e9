"""Trust the tester: the reference agent with one planted fault at a time, called over the phone line, and every
detector's precision and recall on them.

Each variant of `examples/pipecat_phone_agent.py --fault NAME` (`examples/fault_rules.py`: cuts-in, deaf, jumpy,
slow, wrong-fact, revises, mute-turn, drops, garbled, and the clean agent, none) is started on a loopback port and
called `--reps` times with `benchmarks/fixtures/planted_faults` by `voicelab call` (one run folder per variant and
pass under `--out`; a variant that already has its calls there is not called again, so an interrupted bench
resumes). Then every call is read by each detector (`voicelab.analysis.fault_flags`), and the confusion table,
precision and recall with Wilson 95 % intervals are written. `voicelab compare CLEAN VARIANT --fail-on
far_p50:+500ms` is run on each variant's first run folder against the clean agent's: its exit status is the
run-level FAR gate.

`--agent booking` does the same for `examples/pipecat_booking_agent.py` (its LLM the lab's loopback mock engine),
called by the listening caller of `booking_table_scenario`, for the faults it plants its own way (`wrong-fact`
reads back another day, `mute-turn` ignores the caller's second turn) and the clean agent; its run folders go
under `--out`/booking.

    .venv/bin/python benchmarks/planted_faults.py --reps 5 --out runs/planted_faults \
        --json benchmarks/results/planted_faults.json --markdown benchmarks/results/planted_faults.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from voicelab.analysis.fault_flags import (  # noqa: E402
    DETECTORS,
    EXPECTED,
    FAULTS,
    CallFacts,
    confusion,
    flags,
    markdown,
)
from voicelab.analysis.tables import is_finished  # noqa: E402
from voicelab.measure.audio_gaps import gaps, unexplained  # noqa: E402

PY = Path(sys.executable)
VOICELAB = PY.parent / "voicelab"
FAR_GATE = "far_p50:+500ms"
NO_REPLY_MS = 10000  # a turn waits this long for a reply (a slow agent on a busy machine is not a mute one)


@dataclass(frozen=True)
class Agent:
    """An agent under test: its script, the fixture that calls it, and the faults the bench plants in it."""

    script: Path
    fixture: str  # a folder, or a fixture name `voicelab call` resolves
    faults: tuple[str, ...]
    needs_llm: bool = False  # started with --llm-url of a loopback `voicelab mock-engine`
    subdir: str = ""  # its run folders under --out


AGENTS = {
    "phone": Agent(ROOT / "examples" / "pipecat_phone_agent.py",
                   str(ROOT / "benchmarks" / "fixtures" / "planted_faults"), FAULTS),
    "booking": Agent(ROOT / "examples" / "pipecat_booking_agent.py", "booking_table_scenario",
                     ("none", "wrong-fact", "mute-turn"), needs_llm=True, subdir="booking"),
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 240.0) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the agent exited with {proc.returncode} before listening")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"the agent did not listen on {port} within {timeout_s:g} s")


def run_folders(out: Path, fault: str) -> list[Path]:
    """The variant's finished run folders, oldest first."""
    d = out / fault
    return sorted(p for p in d.iterdir() if p.is_dir() and is_finished(p)) if d.is_dir() else []


def calls_made(out: Path, fault: str) -> int:
    return sum(len(list((r / "calls").glob("*.json"))) for r in run_folders(out, fault))


@contextmanager
def _serving(argv: list[str], log: Any) -> Iterator[int]:
    """Run `argv --port P` from the repository root until the block ends; yield P once it listens."""
    port = _free_port()
    proc = subprocess.Popen([*argv, "--port", str(port)], cwd=ROOT, stdout=log, stderr=log)
    try:
        _wait_port(port, proc)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)


def call_variant(agent: Agent, out: Path, fault: str, reps: int, log: Path) -> None:
    """Start the agent with the fault (and its mock LLM, if it has one) and play the fixture `reps` times to it
    (one `voicelab call`)."""
    with log.open("ab") as lf:
        llm = _serving([str(VOICELAB), "mock-engine"], lf) if agent.needs_llm else nullcontext(None)
        with llm as llm_port:
            extra = ["--llm-url", f"http://127.0.0.1:{llm_port}/v1"] if llm_port else []
            with _serving([str(PY), str(agent.script), "--fault", fault, *extra], lf) as port:
                subprocess.run([str(VOICELAB), "call", f"ws://127.0.0.1:{port}/media-stream", agent.fixture,
                                "--repeat", str(reps), "--no-reply-timeout-ms", str(NO_REPLY_MS),
                                "--out", str(out / fault)], cwd=ROOT, stdout=lf, stderr=lf, check=False)


def read_calls(run: Path, fault: str) -> list[CallFacts]:
    """Every call of a run folder, as the detectors read it."""
    rows_by_call: dict[str, list[dict[str, Any]]] = {}
    for r in pq.read_table(run / "turns.parquet").to_pylist():
        rows_by_call.setdefault(r["call_id"], []).append(r)
    out = []
    for meta_path in sorted((run / "calls").glob("*.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        call_id = meta_path.stem
        bot, sr = sf.read(run / "calls" / f"{call_id}.wav", dtype="int16")
        # the cuts the agent's own clears made are no lost packets (run folders from before the line logged
        # its clears have none to leave out)
        found = unexplained(gaps(bot[:, 1], sr), meta.get("clears_heard_s", []))
        out.append(CallFacts.from_run(fault, str(run.name), call_id, meta, rows_by_call.get(call_id, []),
                                      len(found)))
    return out


def far_gate(out: Path, fault: str) -> int | None:
    """`voicelab compare` exit status, clean against the variant, on their first run folders."""
    clean, other = run_folders(out, "none"), run_folders(out, fault)
    if not clean or not other:
        return None
    res = subprocess.run([str(VOICELAB), "compare", str(clean[0]), str(other[0]), "--fail-on", FAR_GATE],
                         cwd=ROOT, capture_output=True, check=False)
    return res.returncode


def machine_load(out: Path, fault: str) -> list[dict[str, Any]]:
    """Each of the variant's run folders' own measure of the machine (summary.json `machine`: the verdict, the
    loop lag, the CPU share others took; the agent under test is one of those others)."""
    return [{"run": r.name, **(json.loads((r / "summary.json").read_text(encoding="utf-8")).get("machine") or {})}
            for r in run_folders(out, fault)]


def load_markdown(loads: dict[str, list[dict[str, Any]]]) -> str:
    """One row per variant: the machine as its calls measured it."""
    lines = ["| variant | verdict | loop lag p95 (ms) | CPU others took (share of the machine) |", "|---|---|---|---|"]
    for fault, runs in loads.items():
        for m in runs:
            lag = (m.get("loop_lag_ms") or {}).get("p95")
            lines.append(f"| {fault} | {m.get('verdict', '—')} | {lag if lag is not None else '—'} | "
                         f"{m.get('others_cpu_share', '—')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agent", choices=list(AGENTS), default="phone", help="the agent under test")
    ap.add_argument("--reps", type=int, default=5, help="calls per variant (in all, counting earlier passes)")
    ap.add_argument("--faults", nargs="*", help="the variants to call (default: every fault the agent plants)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "planted_faults")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--no-calls", action="store_true", help="only read the run folders already under --out")
    args = ap.parse_args(argv)
    agent = AGENTS[args.agent]
    args.faults = args.faults or list(agent.faults)
    args.out = args.out / agent.subdir if agent.subdir else args.out
    args.out.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    if not args.no_calls:
        for fault in args.faults:
            left = args.reps - calls_made(args.out, fault)
            if left > 0:
                print(f"{fault}: {left} calls", flush=True)
                call_variant(agent, args.out, fault, left, args.out / f"{fault}.log")
    calls = [c for fault in args.faults for run in run_folders(args.out, fault) for c in read_calls(run, fault)]
    flagged = flags(calls)
    table = confusion(flagged)
    gates = {fault: far_gate(args.out, fault) for fault in args.faults if fault != "none"}
    result = {
        "command": " ".join(["python", *[os.path.relpath(a, ROOT) if a.startswith(str(ROOT)) else a
                                         for a in sys.argv]]),
        "started_utc": started, "finished_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "machine": platform.machine(), "cpus": os.cpu_count()},
        "fixture": os.path.relpath(agent.fixture, ROOT) if agent.fixture.startswith(str(ROOT)) else agent.fixture,
        "agent": str(agent.script.relative_to(ROOT)),
        "detectors": {d: {"fault": EXPECTED[d], "doc": doc} for d, doc in DETECTORS.items()},
        "far_gate": {"fail_on": FAR_GATE, "exit_status": gates},
        "machine_load": {fault: machine_load(args.out, fault) for fault in args.faults},
        **table,
        "calls": [f.to_dict() for f in flagged],
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    gate = ", ".join(f"{f} {rc}" for f, rc in gates.items())
    text = (markdown(result) + f"\n`voicelab compare CLEAN VARIANT --fail-on {FAR_GATE}` exit status: {gate}\n\n"
            + load_markdown(result["machine_load"]))
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
