"""What the demo server accepts in a request body: JSON only, from its own origin, shallow, and of the shape
of one pydantic model per endpoint. Every refusal is an `ApiError`-style (status, one-line message) pair.

- Content-Type must be application/json (415 otherwise): a form or text/plain POST from another site is a
  "simple request" that skips CORS preflight, so the type check is what keeps such pages out.
- Origin, when the browser sends one, must be the server's own (scheme://host:port of the request) or one of
  `--allow-origin` (403 otherwise): a page elsewhere cannot hold the demo's session slots.
- Nesting deeper than `MAX_DEPTH` is refused (400) before the JSON is parsed: Python's parser recurses, so a
  60 kB body of `[[[[…` would otherwise end in a RecursionError and a 500.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MAX_DEPTH = 32  # the deepest real body (candidates list of objects) is 3


class BodyError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class OfferBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    sdp: str = Field(min_length=1, max_length=60_000)
    type: Literal["offer"]
    pc_id: str | None = Field(default=None, max_length=200)
    restart_pc: bool = False
    request_data: dict[str, Any] | None = None


class Candidate(BaseModel):
    candidate: str = Field(max_length=1024)
    sdp_mid: str | None = None
    sdp_mline_index: int | None = None


class CandidatesBody(BaseModel):
    pc_id: str = Field(max_length=200)
    candidates: list[Candidate] = Field(max_length=64)


class CloseBody(BaseModel):
    pc_id: str | None = Field(default=None, max_length=200)


def json_depth(raw: bytes) -> int:
    """The deepest nesting of [ and { in a JSON text (brackets inside strings do not count)."""
    depth = deepest = 0
    in_string = escaped = False
    for b in raw:
        if in_string:
            if escaped:
                escaped = False
            elif b == 0x5C:  # backslash
                escaped = True
            elif b == 0x22:
                in_string = False
        elif b == 0x22:
            in_string = True
        elif b in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif b in (0x5D, 0x7D):
            depth -= 1
    return deepest


def check_headers(headers: Any, scheme: str, what: str, allowed_origins: Sequence[str]) -> None:
    """Content type JSON, and an Origin that is the server's own or allowed (`headers`: a Starlette Headers)."""
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise BodyError(415, f"{what}: Content-Type must be application/json, got {ctype or 'none'!r}")
    origin = headers.get("origin")
    if origin is None:  # not a browser (curl, tests): nothing to check
        return
    own = f"{scheme}://{headers.get('host', '')}"
    if origin != own and origin not in allowed_origins and "*" not in allowed_origins:
        raise BodyError(403, f"{what}: Origin {origin[:100]!r} is not this server's ({own}); start the server "
                             "with --allow-origin to admit it")


def parse_body(raw: bytes, model: type[BaseModel], what: str) -> Any:
    """The body as `model`, or BodyError(400) with one line naming the first bad field."""
    if json_depth(raw) > MAX_DEPTH:
        raise BodyError(400, f"{what}: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return model.model_validate_json(raw)
    except ValidationError as e:
        err = e.errors()[0]
        if err["type"] in ("json_invalid", "json_type"):
            raise BodyError(400, f"{what}: body is not JSON") from None
        if err["type"] == "model_type":
            raise BodyError(400, f"{what}: body must be a JSON object") from None
        field = ".".join(str(p) for p in err["loc"]) or "body"
        raise BodyError(400, f"{what}: field '{field}': {err['msg']}") from None
