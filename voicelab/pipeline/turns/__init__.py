"""Turn-taking in the pipeline: the VAD analyzers, the models behind the turn rules, and the pipecat
user-turn strategies that adapt the pure rules of `voicelab.rules` (turn end, barge-in)."""
