"""Errors the engines raise on bad input: one line, naming the file and what is wrong."""


class CheckpointError(Exception):
    """A checkpoint folder is missing, corrupt, or does not match its config."""
