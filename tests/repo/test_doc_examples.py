"""Every example command of README.md and docs/ parses against the real command tree and runs in a test.

An example is a line of a fenced code block (```) of README.md or docs/**/*.md (not the generated docs/cli.md
and docs/results.md) that starts with `voicelab`, `.venv/bin/voicelab`, `python` or `.venv/bin/python`; lines
ending in `\\` are joined, a trailing `# comment` and a trailing `&` dropped. README.md's two set-up lines
(`bash scripts/setup.sh ...`) are not examples: CI runs the second, and the first is how a machine gets here.

- `test_every_voicelab_example_parses`: each `voicelab ...` example against the click tree of the real typer
  app (fast; catches an option renamed or removed under the docs).
- `TABLE` maps each example, exactly as normalised, to the test that runs it and how: an example with no
  entry fails ("add it to the table or change the docs"), and an entry no page holds any more fails too. The run
  tests live in this module and in the `test_doc_examples_*.py` beside it (`RUN_MODULES`), one topic a file:
  `--dist loadfile` keeps a file on one worker, so one file of every example was the suite's longest pole.
- The run tests run each example as written, through bash in a work folder under tmp_path, with the
  placeholders made real: `runs/RUN`, `runs/A`, `runs/B` are links to run folders this file makes with real
  short runs, `call.wav` and `calls/*.wav` that run's stereo recording, `HOST:PORT` and
  `wss://agent.example.com` a server the test started on a free loopback port. Servers (`voicelab serve`,
  `voicelab mock-engine`, the reference phone agent) run as subprocesses on a free loopback port, answer an
  HTTP request before anything uses them, and are stopped at the end; a port a page names (8000, 8765, 8766, 8808)
  is replaced by theirs.
- Running the examples takes minutes on two cores (servers, real-time calls), so every run test is in the slow
  lane and the quick lane (`-m "not slow"`) only parses them; `SLOW` names the slowest, each with its reason.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent  # the virtual environment these tests run in (.venv)
FIXTURES = ROOT / "audio_fixtures"
GENERATED = {"docs/cli.md", "docs/results.md"}  # written by voicelab itself (test_docs.py checks them)
PROGRAMS = ("voicelab", ".venv/bin/voicelab", "python", ".venv/bin/python")
SETUP_LINES = (  # README.md's set-up: not examples (CI runs the second; the first made this machine)
    "bash scripts/setup.sh && .venv/bin/voicelab run",
    "bash scripts/setup.sh --test && .venv/bin/python -m pytest -q -p no:cacheprovider",
)
TIMEOUT_S = 900  # one command on a loaded 2-core machine; a hung one fails instead of holding the suite
SERVER_UP_S = 240  # a server loading its models while other commands run beside it


# ---- the examples ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Example:
    file: str  # repository-relative
    line: int  # where the example starts
    cmd: str  # normalised

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.cmd}"


def doc_files() -> list[Path]:
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if p.relative_to(ROOT).as_posix() not in GENERATED)
    return [ROOT / "README.md", *docs]


def _strip_comment(line: str) -> str:
    """The line without a shell comment: a `#` that starts a word outside quotes."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def normalise(text: str) -> str:
    cmd = " ".join(_strip_comment(text).split())  # no command here holds a quoted run of spaces
    return cmd.removesuffix("&").rstrip()


def fenced_lines(path: Path) -> list[tuple[int, str]]:
    out, fence = [], False
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
        elif fence:
            out.append((i, line))
    return out


def examples(paths: list[Path] | None = None) -> list[Example]:
    found = []
    for path in paths or doc_files():
        rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
        lines = fenced_lines(path)
        k = 0
        while k < len(lines):
            start, text = lines[k]
            if text.split(maxsplit=1)[:1] and text.split(maxsplit=1)[0] in PROGRAMS:
                # a continuation joins the next fenced line (its own comment, if any, dropped with it)
                while _strip_comment(text).rstrip().endswith("\\") and k + 1 < len(lines):
                    k += 1
                    text = _strip_comment(text).rstrip()[:-1] + " " + lines[k][1].strip()
                found.append(Example(rel, start, normalise(text)))
            k += 1
    return found


def test_extraction_reads_fences_continuations_comments_and_ampersands(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("voicelab run outside\n\n```\n# voicelab not this\nvoicelab run a \\\n    --out x  # c\n"
                    "voicelab serve --port 1 &   # bg\n.venv/bin/python -m x --h 'a # b'\nbash scripts/y\n```\n"
                    "```python\npython_var = 1\n```\n", encoding="utf-8")
    assert [(e.line, e.cmd) for e in examples([page])] == [
        (5, "voicelab run a --out x"), (7, "voicelab serve --port 1"), (8, ".venv/bin/python -m x --h 'a # b'")]


def test_readme_setup_lines_are_the_two_known_ones() -> None:
    setup = [normalise(t) for _i, t in fenced_lines(ROOT / "README.md") if t.startswith("bash scripts/setup.sh")]
    assert tuple(setup) == SETUP_LINES


# ---- parsing: every voicelab example against the real command tree -------------------------------------------

def test_every_voicelab_example_parses() -> None:
    root = typer.main.get_command(importlib.import_module("voicelab.cli.app").app)
    bad = []
    for ex in examples():
        words = shlex.split(ex.cmd)
        if not words[0].endswith("voicelab"):
            continue
        cmd, name, args = root, "voicelab", words[1:]
        while getattr(cmd, "commands", None) and args and args[0] in cmd.commands:
            name, cmd, args = f"{name} {args[0]}", cmd.commands[args[0]], args[1:]
        if getattr(cmd, "commands", None):
            bad.append(f"{ex}\n    {name}: a command group, not a command")
            continue
        try:
            cmd.make_context(name, list(args), resilient_parsing=False)
        except Exception as e:  # typer vendors click: its UsageError is not click's
            msg = e.format_message() if hasattr(e, "format_message") else repr(e)
            bad.append(f"{ex}\n    {type(e).__name__}: {msg}")
    assert not bad, "examples the command line refuses:\n" + "\n".join(bad)


# ---- the table: every example, the test that runs it and how --------------------------------------------------

T_ONE = "test_one_call_report_compare_and_a_profile_matrix"
T_HOSTED = "test_hosted_engine_against_the_mock_engine_and_probe"
T_LINE = "test_live_demo_servers_and_the_phone_line"
T_OWN = "test_own_calls_imported_checked_and_benched"
T_BUILD = "test_fixtures_build_one"
T_SLOW_RUN = "test_slow_main_runs"
T_SLOW_MATRIX = "test_slow_long_answer_profile_matrix"
T_SLOW_PLAY = "test_slow_own_calls_played"
T_SLOW_BUILD = "test_slow_fixtures_build_the_suite"
T_SCENARIO = "test_scenario_calls_to_the_booking_agent"
T_CI = "test_ci_call_and_compare_with_junit"
T_BENCH = "test_benches_on_own_speech_and_the_human_group"
RUN_MODULES = ("tests.repo.test_doc_examples", "tests.repo.test_doc_examples_own_calls",
               "tests.repo.test_doc_examples_benches", "tests.repo.test_doc_examples_line",
               "tests.repo.test_doc_examples_agents", "tests.repo.test_doc_examples_hosted")

TABLE: dict[str, tuple[str, str]] = {
    # README.md, Quick start
    "voicelab run": (T_SLOW_RUN, "the main job's path (the default configuration, Whisper, a list of calls) on two of "
                                 "its calls, single_question and barge_in_early: the whole list takes 4-5 minutes and "
                                 "runs as the README's first command on a fresh clone before a release"),
    "voicelab run real": (T_SLOW_RUN, "real -> hr_question_close, the list's first recording (the five take about "
                                      "2 minutes; list selection: test_fixtures_build.py)"),
    "voicelab run single_question --stt transcript --json": (
        T_ONE, "as written; its run folder is runs/RUN and runs/A, its recording call.wav and calls/*.wav"),
    "voicelab report runs/RUN": (T_ONE, "runs/RUN: a link to the --json run's folder"),
    "voicelab compare runs/A runs/B --fail-on far_p95:+50ms": (
        T_ONE, "runs/A: the --json run, runs/B: the celeris-1 matrix's pinned run (same fixture); exit 0, 1 "
               "or 3 (one turn a side: undecided) are its documented verdicts, 2 (bad input) fails"),
    "voicelab serve": (T_LINE, "--port P added; GET / answers; the server the phone-line calls use"),
    "voicelab mock-engine": (T_HOSTED, "--port P added; GET /v1/models answers"),
    "voicelab run weekly_hours --stt transcript --engine openai:gemini-2.5-flash "
    "--base-url http://127.0.0.1:8808/v1": (T_HOSTED, "8808 -> the mock engine's port P"),
    "voicelab probe profile:mercury-2": (T_HOSTED, "as written"),
    "voicelab call ws://HOST:PORT/media-stream single_question": (T_LINE, "HOST:PORT -> the `voicelab serve`"),
    "voicelab fixtures import call.wav --out my_calls": (T_OWN, "call.wav: the --json run's stereo recording"),
    "voicelab bench turns --fixtures my_calls/call": (T_OWN, "my_calls/call: that import's fixture"),
    "voicelab run human": (T_SLOW_RUN, "human -> human/speech/2414, the list's shortest caller (the eight take about "
                                       "4 minutes)"),
    "voicelab bench stt --data my_speech --json": (
        T_BENCH, "my_speech/: two sentences of the human set copied with their transcripts.tsv lines"),
    # docs/engine-profiles.md
    "voicelab run single_question --stt transcript --matrix profiles:celeris-1": (T_ONE, "as written"),
    "voicelab run weekly_hours --stt transcript --matrix profiles:gpt-4.1-mini": (T_SLOW_MATRIX, "as written"),
    # docs/fixtures.md
    "voicelab fixtures check audio_fixtures/my_call": (
        T_OWN, "audio_fixtures/my_call: a copy of the README import's fixture, in the work folder"),
    "voicelab fixtures build": (T_SLOW_BUILD, "as written: the suite goes to the work folder's audio_fixtures/"),
    "voicelab fixtures build --only NAME": (T_BUILD, "NAME -> single_question; to the work folder"),
    # docs/live-demo.md
    "voicelab serve --engine ar --policy prefix": (T_LINE, "--port P added; GET / answers"),
    "voicelab serve --host 0.0.0.0 --port 8000 --max-sessions 2 --allow-origin https://example.org": (
        T_LINE, "0.0.0.0 -> 127.0.0.1 (loopback only), 8000 -> P; GET / answers"),
    # docs/own-calls.md
    ".venv/bin/voicelab fixtures import calls/*.wav --out my_calls": (
        T_OWN, "calls/: the --json run's stereo recording"),
    ".venv/bin/voicelab fixtures import runs/live/20261202-101500-live-pc1 --out my_calls/live --name live": (
        T_OWN, "a live session's run folder of that name, written by serve's own recorder (LiveRecording) from "
               "the --json run's recording (a real browser session needs a browser)"),
    ".venv/bin/voicelab fixtures import support.flac --out my_calls/support --caller-channel right "
    "--expect-fallback": (T_OWN, "support.flac: the --json run's recording, channels swapped (caller right)"),
    ".venv/bin/voicelab fixtures import support.flac --out checked_calls --caller-channel right --text expects.txt": (
        T_OWN, "expects.txt: one line per turn of my_calls/support/support (the same file and channel), each transcript "
               "with a tab and its checks"),
    ".venv/bin/voicelab fixtures check checked_calls": (T_OWN, "after that import; the checks are in the fixture"),
    ".venv/bin/voicelab fixtures list my_calls": (T_OWN, "after the three imports"),
    ".venv/bin/voicelab fixtures check my_calls": (T_OWN, "after the three imports"),
    ".venv/bin/voicelab run my_calls": (T_SLOW_PLAY, "after the three imports (as in the fast test): plays all three"),
    "voicelab call ws://127.0.0.1:8765/media-stream examples/ci/fixtures --repeat 6 --out ci-out/runs "
    "--junit ci-out/call.xml --fail-on-expectations": (
        T_CI, "8765 -> the reference agent's port, --repeat 6 -> 2 (the job's six plays take 3 minutes); exit 0 or 1 "
              "(a check the loaded machine's agent missed), a JUnit case per check"),
    "voicelab compare examples/ci/baseline ci-out/runs/RUN --fail-on far_p50:+200ms --junit ci-out/compare.xml": (
        T_CI, "RUN: that call's run folder; exit 0, 1 or 3 (two plays: too few samples), one JUnit case"),
    # docs/phone-line.md
    "voicelab call ws://127.0.0.1:8765/media-stream single_question": (
        T_LINE, "8765 -> the reference agent's port (docs/phone-line.md shows it twice)"),
    "voicelab call wss://agent.example.com/media-stream single_question --repeat 2 "
    "--header \"Authorization: Bearer $TOKEN\" --param caller=+15550100": (
        T_LINE, "wss://agent.example.com -> ws://127.0.0.1:P of the reference agent; TOKEN set in the env"),
    "voicelab serve --port 8000": (T_LINE, "8000 -> P: `voicelab serve` with its port, the same server"),
    "voicelab call ws://127.0.0.1:8000/media-stream single_question": (T_LINE, "8000 -> the serve's port P"),
    "voicelab run default --line mulaw8k --clip-grid-ms 0 --out runs/line": (
        T_LINE, "default -> single_question (the list takes 4-5 minutes), in its own work folder"),
    "voicelab call ws://127.0.0.1:8000/media-stream default --out runs/line": (
        T_LINE, "8000 -> the serve's port P, default -> single_question"),
    "voicelab compare runs/line/RUN runs/line/CALL": (
        T_LINE, "RUN, CALL: those two run folders; exit 0, 1 or 3 (one turn a side: undecided), not 2"),
    "python examples/pipecat_phone_agent.py --port 8765": (
        T_LINE, "8765 -> P; examples/ linked into the work folder; answers HTTP (404: WebSocket only)"),
    # docs/scenarios.md
    "voicelab mock-engine --port 8808": (T_SCENARIO, "8808 -> P; GET /v1/models answers"),
    "python examples/pipecat_booking_agent.py --port 8766": (
        T_SCENARIO, "8766 -> P2 and --llm-url the mock's port P; examples/ linked into the work folder"),
    "voicelab call ws://127.0.0.1:8766/media-stream booking_table_scenario": (
        T_SCENARIO, "8766 -> the booking agent's port P2; the task is reported done"),
    "voicelab call ws://127.0.0.1:8766/media-stream booking_table_scenario --no-listen": (
        T_SCENARIO, "8766 -> P2; the six-line script"),
    "voicelab compare runs/SCRIPT runs/LISTEN": (
        T_SCENARIO, "SCRIPT, LISTEN: those two run folders; exit 0, 1 or 3 (undecided), not 2"),
    # docs/turn-bench.md
    "voicelab bench turns --fixtures my_call/ --fixtures other_call/": (
        T_OWN, "my_call/: a copy of the import of calls/*.wav; other_call/: a copy of hr_question_close"),
    "voicelab bench turns --fixtures my_call/ --json --out benchmarks/results/turn_bench": (
        T_OWN, "as written, in the work folder"),
    "voicelab bench turns --fixtures my_call/ --strategy mypkg.turns:mine": (
        T_OWN, "mypkg/turns.py: the page's own ```python strategy; the work folder on PYTHONPATH"),
    "voicelab bench turns --group human --json": (T_BENCH, "as written: the human meetings and barge-in sounds"),
}

SLOW: dict[str, str] = {  # the slowest examples, each with its reason
    "voicelab run human": "one real person's three sentences in real time with Whisper, about 40 s",
    "voicelab run": "the main job's path: two recorded calls in real time through the real pipeline, about 40 s",
    "voicelab run real": "a real recording in real time with Whisper, about 30 s",
    "voicelab run weekly_hours --stt transcript --matrix profiles:gpt-4.1-mini":
        "two real-time calls of the longest fixture (three turns, a 45-token answer), about 1-2 minutes",
    ".venv/bin/voicelab run my_calls": "three imported calls in real time with Whisper, about a minute",
    "voicelab fixtures build": "synthesises all 37 suite fixtures (espeak-ng and Piper), about 30 s",
}


def run_test(test: str) -> object | None:
    """The run test of that name in one of `RUN_MODULES` (None if none holds it)."""
    found = [getattr(importlib.import_module(m), test) for m in RUN_MODULES
             if callable(getattr(importlib.import_module(m), test, None))]
    assert len(found) <= 1, f"{test}: in more than one of {RUN_MODULES}"
    return found[0] if found else None


def _is_slow(test: str) -> bool:
    return any(m.name == "slow" for m in getattr(run_test(test), "pytestmark", []))


def test_every_example_is_in_the_table_and_every_entry_in_the_docs() -> None:
    found = examples()
    missing = [f"{ex}\n    no entry in TABLE: add it to the table or change the docs" for ex in found
               if ex.cmd not in TABLE]
    stale = [f"TABLE: {cmd!r} is in no page any more: remove it" for cmd in TABLE
             if cmd not in {ex.cmd for ex in found}]
    assert not missing + stale, "\n".join(missing + stale)


def test_the_table_names_tests_of_these_files_and_every_run_test_is_slow() -> None:
    assert not [t for t, _how in TABLE.values() if run_test(t) is None]
    assert set(SLOW) <= set(TABLE) and all(SLOW.values())
    quick = sorted({t for t, _how in TABLE.values() if not _is_slow(t)})
    assert not quick, f"run tests outside the slow lane: {quick}"


# ---- running them ---------------------------------------------------------------------------------------------

RAN: dict[str, str] = {}  # example -> the command line that ran it
JOBS: list[Job] = []  # started by the test now running (or its fixtures): none outlives it


@pytest.fixture(autouse=True)
def _stop_what_the_test_started() -> Iterator[None]:
    yield
    while JOBS:
        JOBS.pop().stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


HUMAN_SPEECH = ROOT / "audio_fixtures" / "human" / "speech"


def workdir(path: Path) -> Path:
    """A work folder where the examples' relative paths mean what a reader's checkout gives them."""
    path.mkdir(parents=True, exist_ok=True)
    for name, target in ((".venv", VENV), ("examples", ROOT / "examples")):
        if not (path / name).exists():
            (path / name).symlink_to(target)
    return path


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    e = dict(os.environ)
    e["PATH"] = f"{VENV / 'bin'}{os.pathsep}{e.get('PATH', '')}"  # `voicelab` and `python`: this venv's
    e.update({"TOKEN": "doc-example-token", "PYTHONUNBUFFERED": "1"}, **(extra or {}))
    return e


class Job:
    """An example running through bash in its work folder; output to a log file (no pipe to fill)."""

    def __init__(self, cmd: str, cwd: Path, subs: dict[str, str] | None = None, extra_env: dict[str, str] | None = None,
                 exec_: bool = False) -> None:
        assert cmd in TABLE, f"{cmd!r}: not in TABLE"
        line = cmd
        for old, new in (subs or {}).items():
            assert old in line, f"{cmd!r}: no {old!r} to replace"
            line = line.replace(old, new)
        self.cmd, self.line, self.cwd = cmd, line, cwd
        logs = cwd / "logs"
        logs.mkdir(exist_ok=True)
        stem = f"{len(list(logs.iterdir())) // 2:02d}-{re.sub(r'[^a-z0-9]+', '-', line.lower())[:60]}"
        self.out, self.err = logs / f"{stem}.out", logs / f"{stem}.err"
        self.t0 = time.monotonic()
        with self.out.open("wb") as out, self.err.open("wb") as err:
            self.proc = subprocess.Popen(["bash", "-c", ("exec " if exec_ else "") + line], cwd=cwd,
                                         env=env(extra_env), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                         start_new_session=True)
        RAN[cmd] = line
        JOBS.append(self)

    def output(self) -> str:
        return self.out.read_text(encoding="utf-8", errors="replace")

    def tail(self, n: int = 3000) -> str:
        err = self.err.read_text(encoding="utf-8", errors="replace")
        return f"stdout: ...{self.output()[-n:]}\nstderr: ...{err[-n:]}"

    def finish(self, ok: tuple[int, ...] = (0,), timeout: float = TIMEOUT_S) -> str:
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"{self.cmd}\n  ran as: {self.line}\n  still running after {timeout:.0f} s:\n{self.tail()}")
        assert rc in ok, f"{self.cmd}\n  ran as: {self.line}\n  in {self.cwd}\n  exit {rc}:\n{self.tail()}"
        print(f"{time.monotonic() - self.t0:6.1f} s  {self.line}")
        return self.output()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its own session: the server and anything it started
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def run(cmd: str, cwd: Path, subs: dict[str, str] | None = None, ok: tuple[int, ...] = (0,),
        extra_env: dict[str, str] | None = None) -> str:
    return Job(cmd, cwd, subs, extra_env).finish(ok)


class Server(Job):
    def __init__(self, cmd: str, cwd: Path, subs: dict[str, str], port: int, path: str = "/") -> None:
        super().__init__(cmd, cwd, subs, exec_=True)
        self.url = f"http://127.0.0.1:{port}{path}"

    def wait_up(self, timeout: float = SERVER_UP_S) -> tuple[int, str]:
        """Poll until it answers HTTP (any status: the reference agent serves only its WebSocket)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                pytest.fail(f"{self.cmd}\n  ran as: {self.line}\n  exited {self.proc.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url, timeout=5) as r:
                    status, body = r.status, r.read().decode("utf-8", "replace")
            except urllib.error.HTTPError as e:
                status, body = e.code, ""
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
                continue
            print(f"{time.monotonic() - self.t0:6.1f} s  {self.line}: up, {self.url} -> {status}")
            return status, body
        self.stop()
        pytest.fail(f"{self.cmd}\n  ran as: {self.line}\n  no answer at {self.url} in {timeout:.0f} s:\n{self.tail()}")


def all_ran(test: str) -> None:
    left = [c for c, (t, _how) in TABLE.items() if t == test and c not in RAN]
    assert not left, f"{test} did not run: {left}"


def run_folders(runs: Path) -> list[Path]:
    """Sealed run folders under runs/ (a matrix's are one level down)."""
    return sorted(p.parent for p in runs.rglob("summary.json") if not (p.parent / "INCOMPLETE").exists())


@pytest.mark.slow
def test_fixtures_build_one(tmp_path: Path) -> None:
    work = workdir(tmp_path / "build")
    run("voicelab fixtures build --only NAME", work, {"NAME": "single_question"})
    assert [p.name for p in (work / "audio_fixtures").iterdir()] == ["single_question"]
    all_ran(T_BUILD)


@pytest.mark.slow
def test_slow_fixtures_build_the_suite(tmp_path: Path) -> None:
    work = workdir(tmp_path / "build")
    run("voicelab fixtures build", work)
    assert len(list((work / "audio_fixtures").rglob("fixture.json"))) >= 30
    all_ran(T_SLOW_BUILD)


@pytest.mark.slow
def test_slow_main_runs(tmp_path: Path) -> None:
    """The three main runs at once, each in its own work folder: each plays its calls in real time and mostly
    waits on the clock, so side by side they take about as long as the longest (one after another they were the
    sum, about 2 minutes of the file's worker)."""
    subs = {"voicelab run": {"voicelab run": "voicelab run single_question barge_in_early"},
            "voicelab run real": {"voicelab run real": "voicelab run hr_question_close"},
            "voicelab run human": {"voicelab run human": "voicelab run human/speech/2414"}}
    works = {cmd: workdir(tmp_path / f"work{k}") for k, cmd in enumerate(subs)}
    jobs = [Job(cmd, works[cmd], sub) for cmd, sub in subs.items()]
    for job in jobs:
        job.finish()
    for cmd, work in works.items():
        (folder,) = run_folders(work / "runs")
        assert json.loads((folder / "summary.json").read_text(encoding="utf-8"))["far_ms"]["n"] >= 1, cmd
    all_ran(T_SLOW_RUN)
