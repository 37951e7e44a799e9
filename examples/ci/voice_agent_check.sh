#!/usr/bin/env bash
# The CI job's steps (examples/ci/voice-agent.yml runs this; so can you, from the repository root):
# start the reference agent, call it with examples/ci/fixtures, compare the run with examples/ci/baseline.
#
#   bash examples/ci/voice_agent_check.sh                    # results in ci-out/: call.xml, compare.xml, runs/
#   RECORD_BASELINE=1 bash examples/ci/voice_agent_check.sh  # the same call, kept as the new baseline
#   FAULT=mute-turn bash examples/ci/voice_agent_check.sh    # the agent with a planted fault: the gate fails
#
# Exit status: 0 when every expectation check passed and every gate passed; otherwise the first non-zero
# status of `voicelab call` (1: a check failed or a call failed, 3: no checks) or `voicelab compare`
# (1: a regression, 3: a gate the runs cannot decide); 2 for bad input; 4 when the agent never listened.
set -uo pipefail

OUT=${OUT:-ci-out}
PORT=${PORT:-8765}
REPEAT=${REPEAT:-6}              # the baseline was recorded with the same number of plays (pairing needs it)
FAIL_ON=${FAIL_ON:-far_p50:+200ms}
AGENT=${AGENT:-examples/pipecat_phone_agent.py}
BASELINE=${BASELINE:-examples/ci/baseline}
VOICELAB=${VOICELAB:-.venv/bin/voicelab}
PYTHON=${PYTHON:-.venv/bin/python}
FAULT=${FAULT:-none}             # a planted fault of the reference agent (examples/fault_rules.py); none: clean

mkdir -p "$OUT"
if [ "$FAULT" = none ]; then
    "$PYTHON" "$AGENT" --port "$PORT" >"$OUT/agent.log" 2>&1 &
else
    "$PYTHON" "$AGENT" --port "$PORT" --fault "$FAULT" >"$OUT/agent.log" 2>&1 &
fi
agent=$!
trap 'kill "$agent" 2>/dev/null; wait "$agent" 2>/dev/null' EXIT

# the agent loads Whisper and Piper first: wait until it accepts a connection (at most 4 minutes)
if ! "$PYTHON" - "$PORT" "$agent" <<'EOF'
import os, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
end = time.monotonic() + 240
while time.monotonic() < end:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(f"the agent exited before it listened on {port}")
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:
            sys.exit(0)
    time.sleep(0.5)
sys.exit(f"the agent did not listen on {port} within 240 s")
EOF
then
    tail -20 "$OUT/agent.log" >&2
    exit 4
fi

"$VOICELAB" call "ws://127.0.0.1:$PORT/media-stream" examples/ci/fixtures --repeat "$REPEAT" \
    --out "$OUT/runs" --junit "$OUT/call.xml" --fail-on-expectations
call_rc=$?
run=$(ls -d "$OUT"/runs/*/ 2>/dev/null | tail -1)
if [ -z "$run" ]; then
    echo "error: voicelab call made no run folder under $OUT/runs" >&2
    exit "$(( call_rc ? call_rc : 2 ))"
fi

if [ "${RECORD_BASELINE:-0}" = 1 ]; then
    # the run folder without its recordings (compare reads the tables, the summary and calls/*.json)
    rm -rf "$BASELINE"
    mkdir -p "$BASELINE/calls"
    cp "$run"/config.json "$run"/summary.json "$run"/*.parquet "$run"/turns.csv "$BASELINE/"
    cp "$run"/calls/*.json "$BASELINE/calls/"
    echo "baseline: $BASELINE (from $run)"
    exit "$call_rc"
fi

"$VOICELAB" compare "$BASELINE" "$run" --fail-on "$FAIL_ON" --junit "$OUT/compare.xml"
compare_rc=$?
echo "voicelab call: exit $call_rc; voicelab compare: exit $compare_rc"
exit "$(( call_rc ? call_rc : compare_rc ))"
