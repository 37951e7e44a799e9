"""The call's input and output: the fixture player (the caller's end) and the recording speaker (the
bot's end, real-time playout into a stereo WAV)."""
