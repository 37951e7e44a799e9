"""What the lab measures, as plain Python: events, the call clock and log, playout, metrics, the WAV truth."""
