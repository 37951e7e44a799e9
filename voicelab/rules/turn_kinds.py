"""The turn-end kinds (`--turn`) and the barge-in kinds (`--barge-in`): one table each, the one place their names
are matched.

Plain Python (no pipecat, no torch): the configuration validates a spec here, the resource pool reads which
models a kind needs, the pipecat factory (`voicelab.pipeline.turns.factory.turn_strategies`) builds a kind's
strategies, and the turn bench (`voicelab.turnbench.replay.builtin_strategies`) replays it. A kind's pipecat
strategies and bench replays are named by `"module:attribute"` and imported on first use, so this module (and the
command line, which reads the help from it) loads neither pipecat nor the bench.

An entry of `TURN_KINDS`:
- `name`, matched against the spec before any `:` (`timeout:600` is kind `timeout`);
- `help`, its clause of `--turn`'s help;
- `parse(spec, arg)`: the spec's argument (after `:`, '' without one) as the turn's silence in seconds (None:
  the kind takes none); the spec gives milliseconds, like every duration the lab takes;
- `models`: the shared models its strategies need (`SMART_TURN`, `DECISION`), loaded before a call starts;
- `stop_strategies`: `(TurnParts) -> [pipecat user-turn stop strategy, ...]`;
- `replays`: `() -> bench Strategy` (a replay class), or `() -> [bench Strategy, ...]`: the kind's own replay
  first, named as the kind (the bench's row), then any variants the bench reports.

Adding a turn-end strategy: one module (its pure rule, a pipecat stop strategy around it, a bench replay around
it, and the factory that builds the stop strategy) and one entry, in `TURN_KINDS` or through `register`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from voicelab.rules.listen_through import ListenPolicyError, parse_policy

SMART_TURN = "smart_turn"  # smart-turn v3's ONNX session (`TurnModels.smart_turn_session`)
DECISION = "decision"  # the tiny decision model (`engines.decision.model`), one per configuration or pool
INTERRUPTION_JUDGE = "interruption_judge"  # the pause barge-in's judge (`TurnModels.interruption_judge`)

MIN_TURN_MS = 50  # a turn silence below this is a value given in seconds

# an object, or where to import it from: "package.module:attribute"
Ref = str | Callable[..., Any]


def resolve(ref: Ref) -> Any:
    """The object a `Ref` names (imported on first use)."""
    if not isinstance(ref, str):
        return ref
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


class TurnSpecError(ValueError):
    """A bad `--turn` or `--barge-in` spec; the message names the option's field."""


# ---- turn end ----------------------------------------------------------------------------------------------

SpecParser = Callable[[str, str], Any]  # (the whole spec, its argument after ':' or '') -> the parsed setting


@dataclass(frozen=True)
class TurnKind:
    """One turn-end strategy (the module doc lists the fields)."""

    name: str
    help: str
    parse: SpecParser
    models: frozenset[str]
    stop_strategies: Ref
    replays: Ref | None = None  # None: the bench does not replay this kind

    def build_stop_strategies(self, parts: Any) -> list[Any]:
        """The pipecat stop strategies of this kind (`parts`: `voicelab.pipeline.turns.factory.TurnParts`)."""
        return list(resolve(self.stop_strategies)(parts))

    def bench_replays(self) -> list[Any]:
        """The turn bench's replays of this kind (`voicelab.turnbench.replay.Strategy`); the first, the kind's
        own, names its bench row after the kind (checked here, the one place the two names meet)."""
        if self.replays is None:
            return []
        made = resolve(self.replays)()
        replays = [made] if hasattr(made, "declarations") else list(made)  # one replay (a class), or a list
        if not replays or replays[0].name != self.name:
            got = replays[0].name if replays else None
            raise ValueError(f"turn kind {self.name!r}: its own replay (the first) must be named "
                             f"{self.name!r}, not {got!r}")
        return replays


@dataclass(frozen=True)
class TurnSpec:
    """A parsed `--turn`: its kind and the silence its spec gives, in seconds (None: the kind takes none)."""

    kind: str
    silence_s: float | None = None

    @property
    def entry(self) -> TurnKind:
        return TURN_KINDS[self.kind]


def turn_help() -> str:
    """`--turn`'s help: each kind's clause, in table order."""
    return _one_of([k.help for k in TURN_KINDS.values()])


def no_argument(spec: str, arg: str) -> None:
    """A kind that takes no argument (`decide`)."""
    if arg:
        raise TurnSpecError(f"turn: '{spec}' is not {turn_help()}")


def silence_argument(default_ms: float | None = None) -> SpecParser:
    """A kind that takes a silence in milliseconds, `NAME:MS` (with `default_ms`, `NAME` alone too)."""

    def parse(spec: str, arg: str) -> float:
        if not arg and default_ms is not None:
            return default_ms / 1000.0
        try:
            value = float(arg)
        except ValueError:
            value = -1.0
        if not value > 0 or not math.isfinite(value):
            raise TurnSpecError(f"turn: '{spec}' is not {turn_help()}")
        if value < MIN_TURN_MS:
            kind = spec.partition(":")[0]
            raise TurnSpecError(f"turn: '{spec}': the silence is in milliseconds ({kind}:{value * 1000:g} for "
                                f"{value:g} s)")
        return value / 1000.0

    return parse


def parse_turn(spec: str) -> TurnSpec:
    """`--turn`'s spec, NAME or NAME:ARGUMENT, by the table."""
    name, _, arg = spec.partition(":")
    kind = TURN_KINDS.get(name)
    if kind is None:
        raise TurnSpecError(f"turn: '{spec}' is not {turn_help()}")
    return TurnSpec(name, kind.parse(spec, arg))


def listen_argument(spec: str, arg: str) -> None:
    """`listen[:THRESHOLD:ACTION_DELAY_MS:TIMEOUT_MS]`: checked here, read by the kind's factory (no silence)."""
    try:
        parse_policy(arg)
    except ListenPolicyError as e:
        raise TurnSpecError(f"turn: '{spec}': {e}") from None


_LISTEN = "voicelab.pipeline.turns.listen_through_strategy"
_FACTORY = "voicelab.pipeline.turns.factory"
_REPLAY = "voicelab.turnbench.replay"

TURN_KINDS: dict[str, TurnKind] = {k.name: k for k in (
    TurnKind("timeout", "timeout:MS (a fixed silence)", silence_argument(), frozenset(),
             f"{_FACTORY}:timeout_stop", f"{_REPLAY}:TimeoutReplay"),
    TurnKind("smart", "smart[:MS] (smart-turn v3 after the VAD stop; an unfinished-sounding turn ends after MS of "
                      "silence, default 2000)", silence_argument(2000.0), frozenset({SMART_TURN}),
             f"{_FACTORY}:smart_stop", f"{_REPLAY}:SmartReplay"),
    TurnKind("decide", "decide (smart-turn on the audio and the tiny decision model on the words, re-scored as the "
                       "silence grows)", no_argument, frozenset({SMART_TURN, DECISION}),
             f"{_FACTORY}:decide_stop", f"{_REPLAY}:decide_replays"),
    TurnKind("fuse", "fuse (the same scores weighed by fitted weights, voicelab.rules.turn_fusion)", no_argument,
             frozenset({SMART_TURN, DECISION}), f"{_FACTORY}:fuse_stop", f"{_REPLAY}:FusedReplay"),
    TurnKind("listen", "listen[:P:DELAY_MS:TIMEOUT_MS] (smart-turn re-run every 100 ms of silence after the VAD "
                       "stop: end once P(complete) >= P after DELAY_MS, or at TIMEOUT_MS; default 0.85:700:1500)",
             listen_argument, frozenset({SMART_TURN}), f"{_LISTEN}:listen_stop", f"{_LISTEN}:ListenReplay"),
)}
# the order is that of the help and of the bench's rows; the default, `decide`, is PipelineConfig.turn's


def register(kind: TurnKind) -> None:
    """Add a turn-end kind to the table (a name already there is refused: replace it in `TURN_KINDS` itself)."""
    if not kind.name.isidentifier() or kind.name in TURN_KINDS:
        raise ValueError(f"turn kind {kind.name!r}: not a new name")
    TURN_KINDS[kind.name] = kind


# ---- barge-in ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BargeInKind:
    """One barge-in rule (how the caller's speech over the bot starts their turn): `name`, `help`, `parse(spec,
    arg)` (its word count, or None), the shared `models` it needs and `start_strategies`: `(TurnParts) -> [pipecat
    user-turn start strategy, ...]`."""

    name: str
    help: str
    parse: SpecParser
    models: frozenset[str]
    start_strategies: Ref

    def build_start_strategies(self, parts: Any) -> list[Any]:
        return list(resolve(self.start_strategies)(parts))


@dataclass(frozen=True)
class BargeInSpec:
    """A parsed `--barge-in`: its kind and the word count its spec gives (None: the kind takes none)."""

    kind: str
    words: int | None = None

    @property
    def entry(self) -> BargeInKind:
        return BARGE_IN_KINDS[self.kind]


def barge_in_help() -> str:
    return _one_of([k.help for k in BARGE_IN_KINDS.values()])


def _barge_no_argument(spec: str, arg: str) -> None:
    if arg:
        raise TurnSpecError(f"barge_in: '{spec}' is not {barge_in_help()}")


def _barge_word_count(spec: str, arg: str) -> int:
    if not arg.isdigit() or int(arg) < 1:
        raise TurnSpecError(f"barge_in: '{spec}' is not {barge_in_help()}")
    return int(arg)


def parse_barge_in(spec: str) -> BargeInSpec:
    """`--barge-in`'s spec, NAME or NAME:ARGUMENT, by the table."""
    name, sep, arg = spec.partition(":")
    kind = BARGE_IN_KINDS.get(name)
    if kind is None or (sep and not arg):
        raise TurnSpecError(f"barge_in: '{spec}' is not {barge_in_help()}")
    return BargeInSpec(name, kind.parse(spec, arg))


BARGE_IN_KINDS: dict[str, BargeInKind] = {k.name: k for k in (
    BargeInKind("pause", "pause (the VAD pauses the bot, then its words decide: stop for good or resume)",
                _barge_no_argument, frozenset({INTERRUPTION_JUDGE}), f"{_FACTORY}:pause_start"),
    BargeInKind("vad", "vad (any speech stops the bot)", _barge_no_argument, frozenset(), f"{_FACTORY}:vad_start"),
    BargeInKind("words", "words:N (N recognised words while the bot talks)", _barge_word_count, frozenset(),
                f"{_FACTORY}:words_start"),
)}


def _one_of(clauses: Sequence[str]) -> str:
    return clauses[0] if len(clauses) == 1 else f"{', '.join(clauses[:-1])} or {clauses[-1]}"


TURN_HELP = turn_help()
BARGE_IN_HELP = barge_in_help()


def models_needed(turn: str, barge_in: str) -> frozenset[str]:
    """The shared models the kinds of `turn` and `barge_in` need."""
    return parse_turn(turn).entry.models | parse_barge_in(barge_in).entry.models
