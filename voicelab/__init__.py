"""voicelab: a voice-agent latency lab for diffusion text engines behind a stable-chunk gate."""

__version__ = "0.1.0"
