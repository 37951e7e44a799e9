"""The commit-policy probe: does an engine's stream revise text it has shown, how late, and which gate
policy would have been safe?

    report = probe(engine, DEFAULT_PROMPTS, out_dir=Path("probe-out"))   # probe.json + probe.png

Each prompt's stream is recorded whole; every intermediate state is diffed against the final answer:
positions that changed after they first appeared, the latest change (in ms and in snapshots before the
end, and how far behind the visible end it was), whether the stream was append-only, and for each gate
policy (final, prefix, stable:K, block, pinned; voicelab/gate.py) whether everything it would have
released is a prefix of the final answer. The policy frontiers are restated here because engines/
imports nothing from voicelab.

The default prompts are caller lines asking for a read-back of digits, a booking with a day, time and
name (a tool call), an order number, opening hours and a cancellation. The tiny engines' canvas holds
~48 tokens, so for them (`split_lines`) each line is its own generation and the figures pool ~200+
tokens; tiny-backed HTTP and profile engines answer all lines in one long stream.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engines.protocol import EngineLike
from engines.snapshot import Snapshot

DEFAULT_PROMPTS: list[list[dict[str, str]]] = [[{"role": "user", "content": "\n".join([
    "can you read my number back 5 5 5 0 1 9 2 7 3",
    "can i book a tune up on friday at 10 am my name is anna",
    "where is my order 4 8 2 1 7",
    "what time do you open on saturday",
    "i need to cancel my appointment on tuesday my name is ben",
    "can i move my appointment to thursday at 2 pm my name is chris",
    "what are your hours on sunday",
    "please read back my booking for wednesday at 11 am my name is diana",
    "can i book a service on monday at 3 pm my name is ethan",
    "where is my order 9 3 0 6 2",
    "what time do you close on friday",
])}]]
MAX_K = 8  # stable:K is tried for K = 1..MAX_K


@dataclass
class StreamReport:
    prompt: str
    tokens: int  # final answer length
    snapshots: int
    append_only: bool
    revised_positions: list[int]  # positions changed after they first appeared
    revision_events: int  # (position, snapshot) changes after first appearance
    latest_change_ms_before_end: float | None  # how long before the done snapshot the last change happened
    latest_change_steps_before_end: int | None
    deepest_change: int | None  # max (visible prefix length - position) at a change: how far behind the end
    safe: dict[str, bool] = field(default_factory=dict)
    timeline: list[dict[str, Any]] = field(default_factory=list)  # (t_ms, position, event) for the plot


def _frontier(policy: str, snaps: list[Snapshot], i: int) -> int:
    s = snaps[i]
    if s.done:
        return s.prefix_len
    if policy == "final":
        return 0
    if policy == "prefix":
        return s.prefix_len
    if policy == "block":
        return min(s.blocks_done, s.prefix_len)
    k = int(policy.split(":")[1])  # stable:K: tokens equal over the last K snapshots' prefixes
    if i + 1 < k:
        return 0
    hist = snaps[i + 1 - k:i + 1]
    n = min(h.prefix_len for h in hist)
    f = 0
    while f < n and all(h.tokens[f] == s.tokens[f] for h in hist):
        f += 1
    return f


def _safe(policy: str, snaps: list[Snapshot], final_text: str) -> bool:
    return all(final_text.startswith(snaps[i].text(_frontier(policy, snaps, i))) for i in range(len(snaps)))


def analyse(snaps: list[Snapshot], prompt: str, t0_ns: int, engine_honours_pins: bool) -> StreamReport:
    """Diff every state of one stream against its final answer."""
    final = snaps[-1]
    n_final = final.eos if final.eos is not None else final.prefix_len
    first_seen: dict[int, int] = {}
    changes: list[tuple[int, int, int]] = []  # (snapshot index, position, depth behind the visible end)
    timeline: list[dict[str, Any]] = []
    prev: Snapshot | None = None
    for i, s in enumerate(snaps):
        t_ms = round((s.t_ns - t0_ns) / 1e6, 2)
        for p in range(len(s.tokens)):
            visible = not s.masked[p]
            if visible and p not in first_seen:
                first_seen[p] = i
                timeline.append({"t_ms": t_ms, "pos": p, "event": "appear"})
            elif p in first_seen and prev is not None and p < len(prev.tokens):
                if (not visible and not prev.masked[p]) or (visible and s.tokens[p] != prev.tokens[p]):
                    changes.append((i, p, s.prefix_len - p))
                    timeline.append({"t_ms": t_ms, "pos": p, "event": "change"})
        if prev is not None:  # a shorter redraft drops positions: those count as changed too
            for p in range(len(s.tokens), len(prev.tokens)):
                if p in first_seen and not prev.masked[p]:
                    changes.append((i, p, s.prefix_len - p))
                    timeline.append({"t_ms": t_ms, "pos": p, "event": "change"})
        prev = s
    final_text = final.text()
    policies = ["final", "prefix", "block", *[f"stable:{k}" for k in range(1, MAX_K + 1)]]
    safe = {p: _safe(p, snaps, final_text) for p in policies}
    # pinning freezes what was released only if the engine honours pins; a remote stream cannot
    for base in ("prefix", "block", "stable:2"):
        safe[f"pinned:{base}"] = safe[base] or engine_honours_pins
    last = max(changes, default=None)
    return StreamReport(
        prompt=prompt, tokens=n_final, snapshots=len(snaps), append_only=not changes,
        revised_positions=sorted({p for _, p, _ in changes}), revision_events=len(changes),
        latest_change_ms_before_end=None if last is None else round((final.t_ns - snaps[last[0]].t_ns) / 1e6, 2),
        latest_change_steps_before_end=None if last is None else len(snaps) - 1 - last[0],
        deepest_change=max((d for _, _, d in changes), default=None), safe=safe, timeline=timeline)


def probe(engine: EngineLike, prompts: list[list[dict[str, str]]] | None = None, *, split_lines: bool | None = None,
          out_dir: Path | None = None) -> dict[str, Any]:
    """Stream each prompt, analyse it, and (with out_dir) write probe.json and probe.png."""
    import time

    prompts = prompts or DEFAULT_PROMPTS
    if split_lines is None:  # checkpoint engines (short canvas) answer one caller line at a time
        split_lines = "folder" in engine.describe()
    chats: list[list[dict[str, str]]] = []
    for msgs in prompts:
        lines = [ln for ln in msgs[-1]["content"].splitlines() if ln.strip()] if split_lines else [None]
        for ln in lines:
            chats.append(msgs if ln is None else [*msgs[:-1], {"role": msgs[-1]["role"], "content": ln}])
    honours_pins = engine.kind == "diffusion" and "folder" in engine.describe()  # the tiny samplers honour pin()
    streams: list[StreamReport] = []
    for chat in chats:
        gen = engine.generate(chat)
        t0 = time.monotonic_ns()
        snaps = list(gen)
        if snaps:
            streams.append(analyse(snaps, chat[-1]["content"], t0, honours_pins))
    safe_all = {p: all(s.safe[p] for s in streams) for p in (streams[0].safe if streams else {})}
    stable_ks = [int(p.split(":")[1]) for p, ok in safe_all.items() if p.startswith("stable:") and ok]
    report = {
        "engine": engine.describe(), "kind": engine.kind, "streams": len(streams),
        "tokens": sum(s.tokens for s in streams), "append_only": all(s.append_only for s in streams),
        "revising": any(not s.append_only for s in streams),
        "revision_events": sum(s.revision_events for s in streams),
        "latest_change_ms_before_end": max((s.latest_change_ms_before_end or 0.0 for s in streams), default=0.0),
        "deepest_change": max((s.deepest_change or 0 for s in streams), default=0),
        "safe_policies": [p for p, ok in safe_all.items() if ok],
        "smallest_safe_stable_k": min(stable_ks) if stable_ks else None,
        "per_stream": [asdict(s) for s in streams],
    }
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "probe.json").write_text(json.dumps(report, indent=1) + "\n")
        plot(streams, out_dir / "probe.png", engine.describe().get("engine", "engine"))
    return report


def plot(streams: list[StreamReport], path: Path, title: str) -> None:
    """Position against time per stream: where text first appeared (dots) and where it changed (crosses)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    offset = 0
    for s in streams:  # streams stacked by position so a split probe reads as one long answer
        app = [(e["t_ms"], e["pos"] + offset) for e in s.timeline if e["event"] == "appear"]
        chg = [(e["t_ms"], e["pos"] + offset) for e in s.timeline if e["event"] == "change"]
        if app:
            ax.scatter(*zip(*app, strict=True), s=4, c="tab:blue")
        if chg:
            ax.scatter(*zip(*chg, strict=True), s=14, c="tab:red", marker="x")
        offset += s.tokens
    ax.set_xlabel("time since request (ms)")
    ax.set_ylabel("answer position (token)")
    ax.set_title(f"{title}: first appearance (blue) and revisions (red)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
