"""The call's ends as pipecat transports and processors: the fixture player (the caller's end) and the
recording speaker (the bot's end, real-time playout into a stereo WAV) of a recorded call; the browser's
WebRTC output, its playout log and mic recorder; the phone line's media-stream output and codec."""
