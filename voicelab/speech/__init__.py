"""Speech recognition without pipecat: Whisper-family recognisers, streaming passes, word error rate.

Pure Python + numpy + the recogniser libraries, so that it runs and tests without the pipeline; the
pipecat STT service wraps `StreamingWhisper`.
"""
