"""The voice pipeline: pipecat processors (one per file), every custom frame, the config and the assembly."""
