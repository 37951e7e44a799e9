"""What the lab measures, as plain Python: events, the call clock and log, playout, the figures, the WAV
truth."""
