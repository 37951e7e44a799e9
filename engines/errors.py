"""Errors the engines raise on bad input: one line, naming the file and what is wrong."""


class CheckpointError(Exception):
    """A checkpoint folder is missing, corrupt, or does not match its config."""


class EngineSpecError(ValueError):
    """An engine spec, sampler pairing or engine option that cannot work (unknown name, missing key)."""


class EngineStreamError(Exception):
    """A streaming engine's answer failed; the message says which endpoint and what happened."""


class EngineConnectError(EngineStreamError):
    """The server could not be reached (refused, DNS, TLS, connect timeout)."""


class EngineTimeoutError(EngineStreamError):
    """No first byte within the first-byte timeout, or the stream stalled past the stall timeout."""


class EngineRateLimitError(EngineStreamError):
    """The server answered 429 Too Many Requests (after the one retry)."""


class EngineServerError(EngineStreamError):
    """The server answered an error status other than 429 (4xx/5xx), after the one retry for 5xx."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class EngineProtocolError(EngineStreamError):
    """The stream broke its protocol: malformed SSE or JSON, or the connection closed mid-answer."""
