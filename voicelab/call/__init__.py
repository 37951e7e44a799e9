"""`voicelab call`: the lab as the carrier of a telephone media stream, measuring any voice agent from its audio.

Pure logic (no pipecat): `mulaw` (the codec), `pacing` (the 20 ms clock, arrival jitter), `protocol` (the
messages), `playout` (the carrier's queue: clear, mark), `line` (the line's own figures), `figures` (turn figures
from the recording alone), `readback` (the agent's words and answer scores). `carrier` places one call over a
WebSocket; `run` plays a fixture list into a run folder. See docs/phone-line.md.
"""
