"""Runs: the run folder (its one writer), `voicelab run` over fixtures, matrices and sweeps, synthetic runs."""
