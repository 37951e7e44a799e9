"""`voicelab sweep`: every configuration of a matrix (engines x samplers x policies x phrase-shaper settings x
fixtures), resumable, locally or on a Ray cluster, ending with a Pareto plot of FAR p50 against audible
defects per 100 spoken words.

Layout of a sweep folder:
    OUT/sweep.json            the matrix (under "grid") and its cells (rewritten at each start)
    OUT/cells/<cell_id>/...   one run folder per cell, written by the cell runner
    OUT/matrix.json           list of the finished cells' summaries (docs/metrics.md), with cell_id and label
    OUT/pareto.csv, pareto.png

A cell is **finished** when its folder holds a run folder with summary.json. A new start skips finished cells
and clears unfinished ones (left by a crash or kill) before running them again, so `voicelab sweep` with the
same arguments resumes where it stopped. A cell whose runner raises is reported and the sweep goes on.

A cell runner is `Callable[[CellSpec, Path], Path]`: it runs the cell's configuration into the given folder
and returns the run folder. `run_config_runner` calls the pipeline's `voicelab.runs.calls.run_config(config,
fixtures, out_dir)`; `voicelab.runs.synthetic.synthetic_cell_runner` writes a synthetic run (dry runs, tests).
On Ray the runner is shipped to the workers, so it must be a module-level function of an installed module,
and OUT must be on storage every node can write.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from voicelab.analysis import AnalysisError, load_run
from voicelab.analysis.tables import is_finished
from voicelab.measure.figures import ACCURACY_BAR
from voicelab.runs.cluster import ClusterError, first_line, joined, task_error
from voicelab.runs.folder import SUMMARY, write_json, write_matrix
from voicelab.runs.matrix import (  # noqa: F401 (compatible, parse_shaper: re-exported for the CLI and tests)
    CellRunner,
    CellSpec,
    SweepError,
    SweepMatrix,
    compatible,
    parse_shaper,
)
from voicelab.runs.synthetic import synthetic_cell_runner

LOCK = ".sweep.lock"  # holds the pid of the sweep writing this folder

CONCURRENCY_NOTE_LOCAL = ("note: cells run one after another here; anything else busy on this machine (a training "
                          "job, another sweep) still shifts the latencies, so compare cells of one quiet sweep.")
CONCURRENCY_NOTE_RAY = ("note: on Ray, cells that land on the same machine run at the same time and compete for "
                        "its CPUs: concurrent calls on one small machine disturb latencies. Give each cell a whole "
                        "node (--cpus-per-task) or compare only latencies measured alone.")


# ---- running ---------------------------------------------------------------------------------------------

def run_config_runner(cell: CellSpec, out_dir: Path) -> Path:
    """The real runner: the pipeline's `voicelab.runs.calls.run_config(config, fixtures, out_dir)`."""
    from voicelab.runs.calls import run_config  # the pipeline (pipecat, torch) loads only for real cells

    return Path(run_config(cell.config(), list(cell.fixtures), out_dir, repeat=cell.repeat))


RUNNERS: dict[str, CellRunner] = {"pipeline": run_config_runner, "synthetic": synthetic_cell_runner}


def finished_run(cell_dir: Path) -> Path | None:
    """The run folder of a finished cell (a sealed run folder at most two levels down), else None."""
    if not cell_dir.is_dir():
        return None
    for pattern in (SUMMARY, f"*/{SUMMARY}", f"*/*/{SUMMARY}"):
        hits = [h.parent for h in sorted(cell_dir.glob(pattern)) if is_finished(h.parent)]
        if hits:
            return hits[0]
    return None


@dataclass
class SweepResult:
    sweep_dir: Path
    cells: list[CellSpec]
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    runs: dict[str, Path] = field(default_factory=dict)  # cell_id -> run folder (finished cells)
    pareto: pd.DataFrame = field(default_factory=pd.DataFrame)
    pareto_png: Path | None = None


def _run_local(runner: CellRunner, cells: Sequence[CellSpec], dirs: Mapping[str, Path],
               echo: Callable[[str], None]) -> dict[str, Path | BaseException]:
    out: dict[str, Path | BaseException] = {}
    for i, cell in enumerate(cells, start=1):
        echo(f"[{i}/{len(cells)}] {cell.cell_id}: {cell.config_label} on {', '.join(cell.fixtures)}")
        try:
            out[cell.cell_id] = Path(runner(cell, dirs[cell.cell_id]))
        except Exception as exc:  # one broken cell must not lose the rest of the sweep
            out[cell.cell_id] = exc
            echo(f"  failed: {exc}")
    return out


def _ray_cell(runner: CellRunner, cell: CellSpec, out_dir: str) -> str:
    return str(runner(cell, Path(out_dir)))


def _run_ray(runner: CellRunner, cells: Sequence[CellSpec], dirs: Mapping[str, Path], address: str,
             cpus_per_cell: float, init_kwargs: Mapping[str, Any] | None,
             echo: Callable[[str], None]) -> dict[str, Path | BaseException]:
    out: dict[str, Path | BaseException] = {}
    try:
        with joined(address, init_kwargs) as ray:
            task = ray.remote(num_cpus=cpus_per_cell, max_retries=0)(_ray_cell)
            pending = {task.remote(runner, c, str(dirs[c.cell_id])): c for c in cells}
            echo(f"submitted {len(pending)} cells to Ray ({address})")
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                cell = pending.pop(done[0])
                try:
                    out[cell.cell_id] = Path(ray.get(done[0]))
                    echo(f"done {cell.cell_id}")
                except Exception as exc:  # RayTaskError wraps the runner's exception
                    cause = task_error(exc)
                    out[cell.cell_id] = cause
                    echo(f"failed {cell.cell_id}: {first_line(cause)}")
    except ClusterError as exc:
        raise SweepError(str(exc)) from None
    return out


def run_sweep(matrix: SweepMatrix, out_dir: str | Path, cell_runner: CellRunner | None = None,
              ray_address: str | None = None, cpus_per_cell: float = 1.0,
              ray_init: Mapping[str, Any] | None = None, echo: Callable[[str], None] = print) -> SweepResult:
    """Run every unfinished cell of the matrix into out_dir, then write matrix.json and the Pareto plot.

    `ray_address`: None runs locally, one cell at a time; 'local' starts a private Ray instance (`ray_init`
    are its ray.init arguments, e.g. num_cpus=1); anything else is a cluster address (ray.init(address=...)).
    """
    runner = cell_runner or run_config_runner
    sweep = Path(out_dir)
    if sweep.exists() and not sweep.is_dir():
        raise SweepError(f"{sweep}: not a folder")
    cells = matrix.cells()
    try:
        (sweep / "cells").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SweepError(f"{sweep}: cannot write the sweep folder ({exc.strerror or exc})") from None
    with sweep_lock(sweep):
        return _run_sweep(matrix, sweep, cells, runner, ray_address, cpus_per_cell, ray_init, echo)


@contextmanager
def sweep_lock(sweep: Path) -> Iterator[None]:
    """One sweep per folder: a second one on the same folder is refused (a lock left by a dead sweep is taken)."""
    lock = sweep / LOCK
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pid = _lock_pid(lock)
            if pid is not None and _alive(pid):
                raise SweepError(f"{sweep}: another sweep (pid {pid}) is writing this folder; wait for it to end, "
                                 "or use another --out") from None
            lock.unlink(missing_ok=True)  # its sweep died: take the folder over
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        break
    else:
        raise SweepError(f"{sweep}: cannot take the sweep lock {lock}")
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def _lock_pid(lock: Path) -> int | None:
    try:
        return int(lock.read_text().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _run_sweep(matrix: SweepMatrix, sweep: Path, cells: list[CellSpec], runner: CellRunner, ray_address: str | None,
               cpus_per_cell: float, ray_init: Mapping[str, Any] | None, echo: Callable[[str], None]) -> SweepResult:
    write_json(sweep / "sweep.json", {"grid": matrix.to_dict(), "cells": [{"cell_id": c.cell_id, **c.config()}
                                                                        for c in cells]})
    res = SweepResult(sweep, cells)
    dirs = {c.cell_id: sweep / "cells" / c.cell_id for c in cells}
    todo = []
    for c in cells:
        run = finished_run(dirs[c.cell_id])
        if run is not None:
            res.skipped.append(c.cell_id)
            res.runs[c.cell_id] = run
        else:
            if dirs[c.cell_id].exists():  # left by a crash or kill: start the cell afresh
                echo(f"{c.cell_id}: unfinished (no sealed run folder, killed or crashed): running it again")
                shutil.rmtree(dirs[c.cell_id])
            dirs[c.cell_id].mkdir(parents=True)
            todo.append(c)
    echo(f"sweep {sweep}: {len(cells)} cells, {len(res.skipped)} already finished, {len(todo)} to run")
    echo(CONCURRENCY_NOTE_RAY if ray_address else CONCURRENCY_NOTE_LOCAL)
    if todo:
        if ray_address:
            outcome = _run_ray(runner, todo, dirs, ray_address, cpus_per_cell, ray_init, echo)
        else:
            outcome = _run_local(runner, todo, dirs, echo)
        for c in todo:
            got = outcome.get(c.cell_id)
            run = finished_run(dirs[c.cell_id]) if isinstance(got, Path) else None
            if isinstance(got, Path) and run is None and is_finished(got):
                run = got  # the runner wrote its run folder somewhere else
            if run is not None:
                res.ran.append(c.cell_id)
                res.runs[c.cell_id] = run
            else:
                why = str(got) if isinstance(got, BaseException) else "the runner left no summary.json"
                res.failed[c.cell_id] = why.splitlines()[0] if why else type(got).__name__
    write_sweep_matrix(sweep, cells, res.runs)
    res.pareto = pareto_table(cells, res.runs)
    res.pareto.to_csv(sweep / "pareto.csv", index=False)
    res.pareto_png = sweep / "pareto.png"
    pareto_figure(res.pareto).savefig(res.pareto_png, dpi=100, bbox_inches="tight")
    echo(f"ran {len(res.ran)}, skipped {len(res.skipped)}, failed {len(res.failed)}; "
         f"matrix.json and pareto.png in {sweep}")
    return res


def write_sweep_matrix(sweep: Path, cells: Iterable[CellSpec], runs: Mapping[str, Path]) -> Path:
    """matrix.json of the finished cells, each summary with its cell id, label, fixtures and folder."""
    out = []
    for c in cells:
        run = runs.get(c.cell_id)
        if run is None:
            continue
        try:
            summary = json.loads((run / SUMMARY).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise SweepError(f"{run / SUMMARY}: unreadable: {exc}") from None
        out.append({"cell_id": c.cell_id, "label": c.config_label, "fixtures": list(c.fixtures),
                    "path": str(run), **summary})
    return write_matrix(sweep, out)


# ---- Pareto ----------------------------------------------------------------------------------------------

def pareto_table(cells: Sequence[CellSpec], runs: Mapping[str, Path]) -> pd.DataFrame:
    """One row per configuration (its cells' fixtures pooled): FAR p50 over answered turns, audible defects
    per 100 spoken words, and whether no other configuration beats it on both (`pareto`); beside them answer
    accuracy (of the turns the fixtures score), coherence (of all replies) and `accuracy_ok` (accuracy >=
    ACCURACY_BAR; False also when nothing was scored), so a fast but wrong configuration shows."""
    groups: dict[str, list[CellSpec]] = {}
    for c in cells:
        if c.cell_id in runs:
            groups.setdefault(c.config_label, []).append(c)
    rows = []
    for label, cs in groups.items():
        far: list[float] = []
        audible = spoken = 0
        has_rev = False
        turns = 0
        correct: list[bool] = []
        coherent: list[bool] = []
        for c in cs:
            try:
                rd = load_run(runs[c.cell_id])
            except AnalysisError:
                continue
            t = rd.turns
            answered = t[t["expect"].fillna("") != "no_interrupt"]
            far += [float(x) for x in answered["far_ms"].dropna()]
            turns += len(t)
            for col, acc in (("answer_correct", correct), ("coherent", coherent)):
                if col in t:
                    acc += [bool(x) for x in t[col].dropna()]
            rev = rd.summary.get("revisions") or {}
            if rev.get("audible") is not None:
                has_rev = True
                audible += int(rev["audible"])
            spoken += int(rev.get("spoken_words") or 0)
        c0 = cs[0]
        rows.append({"label": label, "engine": c0.engine, "sampler": c0.sampler or "default", "policy": c0.policy,
                     "shaper": c0.shaper_label, "cells": len(cs), "turns": turns,
                     "far_p50_ms": float(np.median(far)) if far else math.nan,
                     "audible_per_100_words": (100.0 * audible / spoken) if has_rev and spoken else math.nan,
                     "spoken_words": spoken,
                     "answer_accuracy": float(np.mean(correct)) if correct else math.nan,
                     "answers_scored": len(correct),
                     "coherent": float(np.mean(coherent)) if coherent else math.nan,
                     "accuracy_ok": bool(correct) and float(np.mean(correct)) >= ACCURACY_BAR})
    df = pd.DataFrame(rows, columns=["label", "engine", "sampler", "policy", "shaper", "cells", "turns",
                                     "far_p50_ms", "audible_per_100_words", "spoken_words", "answer_accuracy",
                                     "answers_scored", "coherent", "accuracy_ok"])
    df["pareto"] = _pareto_mask(df)
    return df.sort_values(["far_p50_ms", "audible_per_100_words"], na_position="last").reset_index(drop=True)


def _pareto_mask(df: pd.DataFrame) -> list[bool]:
    pts = list(zip(df["far_p50_ms"], df["audible_per_100_words"], strict=True)) if len(df) else []
    out = []
    for i, (x, y) in enumerate(pts):
        if math.isnan(x) or math.isnan(y):
            out.append(False)
            continue
        beaten = any(j != i and not math.isnan(a) and not math.isnan(b) and a <= x and b <= y and (a < x or b < y)
                     for j, (a, b) in enumerate(pts))
        out.append(not beaten)
    return out


def pareto_figure(df: pd.DataFrame) -> Figure:
    """FAR p50 (x) against audible defects per 100 words (y); the frontier joined, lower-left is better.

    Configurations whose answer accuracy is below ACCURACY_BAR (or not scored) are circled in red: fast but
    wrong; each label carries its accuracy."""
    fig = Figure(figsize=(8, 5))
    ax = fig.subplots()
    ok = df.dropna(subset=["far_p50_ms", "audible_per_100_words"]) if len(df) else df
    if len(ok):
        for policy, sub in ok.groupby("policy"):
            ax.scatter(sub["far_p50_ms"], sub["audible_per_100_words"], s=40, label=str(policy), zorder=3)
        front = ok[ok["pareto"]].sort_values("far_p50_ms")
        ax.step(front["far_p50_ms"], front["audible_per_100_words"], where="post", color="black", linewidth=1,
                label="Pareto frontier")
        wrong = ok[~ok["accuracy_ok"].astype(bool)] if "accuracy_ok" in ok else ok.iloc[0:0]
        if len(wrong):
            ax.scatter(wrong["far_p50_ms"], wrong["audible_per_100_words"], s=160, facecolors="none",
                       edgecolors="red", linewidths=1.5, zorder=4,
                       label=f"answer accuracy < {100 * ACCURACY_BAR:.0f} %")
        for r in ok.to_dict("records"):
            acc = r.get("answer_accuracy", math.nan)
            acc_txt = "acc —" if acc is None or math.isnan(acc) else f"acc {100 * acc:.0f} %"
            ax.annotate(f"{r['engine']}/{r['sampler']}/{r['shaper']} ({acc_txt})",
                        (r["far_p50_ms"], r["audible_per_100_words"]), fontsize=6, xytext=(3, 3),
                        textcoords="offset points")
        ax.legend(fontsize=7, title="policy", title_fontsize=7)
    else:
        ax.text(0.5, 0.5, "no finished configuration with FAR and revision figures", ha="center",
                transform=ax.transAxes)
    ax.set_xlabel("FAR p50 (ms)")
    ax.set_ylabel("audible defects per 100 spoken words")
    ax.grid(alpha=0.3)
    return fig
