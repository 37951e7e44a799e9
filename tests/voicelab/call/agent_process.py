"""An agent (or the lab's mock engine) started as its own process on a loopback port for a test, stopped after it:
the one copy of start, wait for the port and stop that the end-to-end call tests share."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.voicelab.call.test_helpers import free_port

ROOT = Path(__file__).resolve().parents[3]


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 90.0) -> None:
    """Until `proc` listens on `port` (an error if it exits first or takes longer than `timeout_s`)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode} before listening")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"{proc.args!r} did not listen on {port} within {timeout_s:g} s")


@contextmanager
def serving(argv: list[str], port: int | None = None, timeout_s: float = 90.0) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """Run `argv` plus `--port PORT` from the repository root; yield (port, process) once it listens."""
    port = port or free_port()
    proc = subprocess.Popen([*argv, "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        wait_port(port, proc, timeout_s)
        yield port, proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:  # a server still closing its last session
            proc.kill()
            proc.wait(10)


def example_agent(name: str, *args: str) -> list[str]:
    """The command line of an agent under examples/."""
    return [sys.executable, str(ROOT / "examples" / name), *args]
