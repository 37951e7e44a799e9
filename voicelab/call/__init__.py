"""`voicelab call`: the lab as the carrier of a telephone media stream, measuring any voice agent from its audio.

Pure logic (no pipecat): `pacing` (the 20 ms clock, arrival jitter), `protocol` (the messages),
`playout_queue` (the carrier's queue: clear, mark), `line` (the line's own figures), `reply_spans` (the
agent's reply spans and turn figures from the recording alone), `readback` (the agent's words and answer
scores); the mu-law codec is the pipeline's (`voicelab/pipeline/transport/mulaw.py`). `carrier` places one call over a WebSocket; `line_run`
plays a fixture list into a run folder. See docs/phone-line.md.
"""
