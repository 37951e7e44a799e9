"""The machine's verdict from made-up readings: /proc texts parsed, shares of the cores, the loop's lag, quiet or
busy, and when two runs cannot be compared. Never the real machine's load."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voicelab.measure.machine_load import (
    BUSY,
    IDLE_MIN_CORES,
    LAG_P95_MS,
    OTHERS_MIN_CORES,
    QUIET,
    CpuTicks,
    CpuUse,
    LoopLag,
    MachineLoad,
    ProcStatError,
    busiest,
    cpu_ticks,
    cpu_use,
    loop_lag,
    machine_text,
    mismatch,
    parse_proc_stat,
    parse_self_stat,
    verdict_of,
)

PROC_STAT = ("cpu  100 20 30 800 40 5 6 7 9 0\n"
             "cpu0 50 10 15 400 20 2 3 3 4 0\nintr 12345\n")
SELF_STAT = "4242 (python -m x) S 1 4242 4242 0 -1 4194304 98 0 0 0 11 12 13 14 20 0 9 0 435491 3133440 392\n"


def _lag(p95: float) -> LoopLag:
    return LoopLag(p50_ms=p95 / 4, p95_ms=p95, max_ms=p95 * 2, n=500)


def _load(others: float, own: float, cores: int = 2, p95: float = 1.0) -> MachineLoad:
    return MachineLoad(lag=_lag(p95), cpu=CpuUse(others=others, own=own, cores=cores), seconds=60.0)


# ---- the kernel's counters ------------------------------------------------------------------------------------

def test_proc_stat_busy_is_all_but_idle_and_iowait_and_leaves_guest_out() -> None:
    busy, total = parse_proc_stat(PROC_STAT)
    assert (busy, total) == (100 + 20 + 30 + 5 + 6 + 7, 100 + 20 + 30 + 800 + 40 + 5 + 6 + 7)


def test_self_stat_counts_after_a_command_name_with_spaces_and_parentheses() -> None:
    assert parse_self_stat(SELF_STAT) == 11 + 12 + 13 + 14
    assert parse_self_stat(SELF_STAT.replace("(python -m x)", "(a) b (c)")) == 50


@pytest.mark.parametrize("text", ["", "intr 1 2 3\n", "cpu  1 2 x 4\n", "cpu 1 2\n"])
def test_a_proc_stat_without_the_cpu_line_is_one_clear_error(text: str) -> None:
    with pytest.raises(ProcStatError, match="/proc/stat"):
        parse_proc_stat(text)


def test_a_short_self_stat_is_one_clear_error() -> None:
    with pytest.raises(ProcStatError, match="/proc/self/stat"):
        parse_self_stat("4242 (python) S 1 2 3")


@given(st.lists(st.integers(0, 10**9), min_size=8, max_size=10))
def test_proc_stat_reads_back_what_was_written(fields: list[int]) -> None:
    busy, total = parse_proc_stat("cpu  " + " ".join(map(str, fields)) + "\n")
    assert total == sum(fields[:8])
    assert busy == total - fields[3] - fields[4]


def test_shares_of_the_machine_between_two_readings() -> None:
    start = cpu_ticks(PROC_STAT, SELF_STAT)
    end = CpuTicks(busy=start.busy + 120, total=start.total + 200, own=start.own + 20)
    use = cpu_use(start, end, cores=2)
    assert use is not None
    assert use.own == pytest.approx(0.1) and use.others == pytest.approx(0.5)
    assert use.others_cores == pytest.approx(1.0) and use.idle_cores == pytest.approx(0.8)


def test_no_tick_between_readings_says_nothing() -> None:
    t = CpuTicks(10, 100, 1)
    assert cpu_use(t, t, 2) is None


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6), st.integers(1, 64))
def test_shares_stay_between_zero_and_one(d_total: int, d_busy: int, d_own: int, cores: int) -> None:
    use = cpu_use(CpuTicks(0, 0, 0), CpuTicks(d_busy, d_total, d_own), cores)
    if d_total == 0:
        assert use is None
        return
    assert use is not None
    assert 0.0 <= use.others <= 1.0 and 0.0 <= use.own <= 1.0
    assert use.others + use.own <= 1.0 + 1e-9


# ---- the loop's lag ---------------------------------------------------------------------------------------------

def test_lag_percentiles_interpolate_between_order_statistics() -> None:
    lag = loop_lag([float(x) for x in range(101)])  # 0 .. 100 ms
    assert lag == LoopLag(p50_ms=50.0, p95_ms=95.0, max_ms=100.0, n=101)
    assert loop_lag([]) is None
    assert loop_lag([3.0]) == LoopLag(3.0, 3.0, 3.0, 1)


@given(st.lists(st.floats(-5.0, 1e4, allow_nan=False), min_size=1, max_size=300))
def test_lag_is_ordered_and_never_negative(late: list[float]) -> None:
    lag = loop_lag(late)
    assert lag is not None and lag.n == len(late)
    assert 0.0 <= lag.p50_ms <= lag.p95_ms <= lag.max_ms == max(0.0, max(late))


# ---- the verdict ------------------------------------------------------------------------------------------------

def test_one_busy_loop_beside_a_run_on_two_cores_is_busy() -> None:
    assert _load(others=0.5, own=0.4).verdict == BUSY  # others: one core; idle 0.2 of a core
    # the main job's own readings beside one busy loop (benchmarks/results/busy_machine.json): 0.7 of a core idle
    assert _load(others=0.48, own=0.169).verdict == BUSY


def test_a_quiet_machine_is_quiet_whatever_the_run_itself_costs() -> None:
    assert _load(others=0.02, own=0.3).verdict == QUIET
    assert _load(others=0.02, own=0.98, p95=80.0).verdict == QUIET  # its own work: part of what it costs


def test_one_busy_loop_on_sixteen_cores_leaves_room_and_stays_quiet() -> None:
    assert _load(others=1 / 16, own=0.06, cores=16).verdict == QUIET
    assert _load(others=1 / 16, own=0.06, cores=16, p95=LAG_P95_MS).verdict == BUSY  # unless the loop felt it


def test_the_thresholds_are_where_the_record_puts_them() -> None:
    at = OTHERS_MIN_CORES / 2  # a share of 2 cores that is exactly the threshold's cores
    crowded_own = 1.0 - at - IDLE_MIN_CORES / 2 + 0.01
    assert _load(others=at, own=crowded_own).verdict == BUSY
    assert _load(others=at - 0.01, own=crowded_own).verdict == QUIET
    assert _load(others=0.2, own=0.2, p95=LAG_P95_MS - 0.1).verdict == QUIET  # 1.2 cores idle, loop on time
    assert _load(others=0.2, own=0.2, p95=LAG_P95_MS).verdict == BUSY


def test_without_the_kernels_counters_the_lag_decides() -> None:
    assert MachineLoad(_lag(LAG_P95_MS), None, 1.0).verdict == BUSY
    assert MachineLoad(_lag(1.0), None, 1.0).verdict == QUIET
    assert MachineLoad(None, None, 1.0).verdict is None


shares = st.floats(0.0, 1.0, allow_nan=False)


@given(shares, shares, shares, st.integers(1, 64), st.floats(0.0, 200.0, allow_nan=False))
def test_more_taken_by_others_never_turns_busy_into_quiet(a: float, b: float, own: float, cores: int,
                                                          p95: float) -> None:
    lo, hi = sorted((a, b))
    own = min(own, 1.0 - hi)
    if _load(lo, own, cores, p95).verdict == BUSY:
        assert _load(hi, own, cores, p95).verdict == BUSY


@given(shares, shares, st.integers(1, 64), st.floats(0.0, 200.0, allow_nan=False))
def test_busy_always_names_others_and_a_felt_effect(others: float, own: float, cores: int, p95: float) -> None:
    own = min(own, 1.0 - others)
    load = _load(others, own, cores, p95)
    if load.verdict == BUSY:
        assert others * cores >= OTHERS_MIN_CORES
        assert load.cpu is not None and (load.cpu.idle_cores < IDLE_MIN_CORES or p95 >= LAG_P95_MS)
    assert verdict_of(load.to_json()) == load.verdict


# ---- in summary.json, and two runs side by side ---------------------------------------------------------------

def test_the_summary_value_and_its_line() -> None:
    j = _load(others=0.52, own=0.4, p95=14.0).to_json()
    assert j["verdict"] == BUSY and j["cores"] == 2 and j["loop_lag_ms"]["p95"] == 14.0
    assert machine_text(j) == "busy: loop lag p95 14 ms (max 28), others took 52 % of 2 cores"
    assert machine_text(None) == machine_text({"verdict": "unknown"}) == "not measured"


def test_busy_against_quiet_cannot_be_compared_either_way_round() -> None:
    busy, quiet = _load(0.5, 0.4, p95=14.0).to_json(), _load(0.01, 0.4).to_json()
    line = mismatch(quiet, busy, "runs/a", "runs/b")
    assert line is not None and line.startswith("runs/b ran on a busy machine (loop lag p95 14 ms")
    assert "runs/a on a quiet one" in line and "--allow-busy" in line and "\n" not in line
    assert (mismatch(busy, quiet, "runs/a", "runs/b") or "").startswith("runs/a ran on a busy machine")


def test_like_against_like_or_an_unmeasured_run_can_be_compared() -> None:
    busy, quiet = _load(0.5, 0.4).to_json(), _load(0.01, 0.4).to_json()
    assert mismatch(busy, busy, "a", "b") is None
    assert mismatch(quiet, quiet, "a", "b") is None
    assert mismatch(None, busy, "a", "b") is None  # a run from before the probe
    assert mismatch(quiet, {"verdict": None}, "a", "b") is None


def test_a_run_of_ray_tasks_reads_as_its_busiest_call() -> None:
    quiet, crowded, laggy = _load(0.02, 0.3), _load(0.6, 0.3), _load(0.3, 0.3, p95=40.0)
    assert busiest([]) is None and busiest([None, MachineLoad(None, None, 0.0)]) is None
    assert busiest([quiet, None]) is quiet
    assert busiest([quiet, crowded, quiet]) is crowded and crowded.verdict == BUSY
    # among busy calls, the one others crowded most; among quiet ones, the one whose loop lagged most
    assert busiest([laggy, crowded]) is crowded
    assert busiest([quiet, _load(0.02, 0.3, p95=5.0)]).lag.p95_ms == 5.0


@given(st.lists(st.tuples(st.floats(0, 0.9), st.floats(0, 40)), min_size=1, max_size=8))
def test_the_busiest_call_is_busy_whenever_any_call_is(readings: list[tuple[float, float]]) -> None:
    loads = [_load(o, 0.1, p95=p) for o, p in readings]
    assert (busiest(loads).verdict == BUSY) == any(m.verdict == BUSY for m in loads)
