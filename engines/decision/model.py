"""The decision model: a typed yes/no question about a caller's words, answered in one forward pass.

A tiny causal network in the LLaDA layout (engines/local/model.py) reads

    <|bos|> <|task|> [<|assistant|> bot's line <|eos|>] <|user|> caller's words <|assistant|>

and the logits of its last position over the two answer tokens <|yes|> / <|no|> give the answer
and its confidence. Tasks (engines/decision/corpus.py):

- `turn_complete`: is the caller's turn finished (yes) or cut off mid-sentence (no)?
- `interruption`: while the bot talks, are these words a real interruption (yes) or a
  backchannel / noise (no)?

    from engines.decision.model import load_decision_model
    dm = load_decision_model()                      # engines/tiny/decision_ensemble
    d = dm.ask("turn_complete", "i would like to book a")   # d.answer, d.confidence, d.ms
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from engines.errors import CheckpointError
from engines.local.checkpoint import load, read_config
from engines.local.input_norm import normalize
from engines.local.model import LLaDAModel
from engines.local.tokenizer import ChatTokenizer

TASK_TOKENS = {"turn_complete": "<|turn_complete|>", "interruption": "<|interruption|>"}
YES, NO = "<|yes|>", "<|no|>"
DECISION_TOKENS = [*TASK_TOKENS.values(), YES, NO]
# the shipped decision model: the shop's training and the real-call-moments training asked together about turn
# ends, the shop's alone about interruptions (engines/tiny/decision_ensemble/ensemble.json;
# docs/decisions/decision-real-call-moments.md)
DEFAULT_FOLDER = Path(__file__).resolve().parents[1] / "tiny" / "decision_ensemble"
SHOP_FOLDER = Path(__file__).resolve().parents[1] / "tiny" / "decision"  # the shop's training, one network


def installed(folder: Path) -> bool:
    """A decision model's weights (config.json) or an ensemble of them (ensemble.json) are in `folder`."""
    return (folder / "config.json").is_file() or (folder / "ensemble.json").is_file()


@dataclass(frozen=True)
class Decision:
    answer: bool
    confidence: float  # probability of the answer given, 0.5 to 1
    ms: float  # wall time of the judgement: normalising, tokenising and the forward pass

    @property
    def p_yes(self) -> float:
        return self.confidence if self.answer else 1.0 - self.confidence


@dataclass(frozen=True)
class PromptLimits:
    """Token budgets: the caller's words keep their end, the bot's line its end (what was said last)."""

    max_text_tokens: int = 48
    max_context_tokens: int = 32


def add_decision_tokens(tok: ChatTokenizer) -> None:
    """Give a copy of the tiny tokenizer the task tags and the two answer tokens."""
    tok.tok.add_special_tokens(DECISION_TOKENS)


def encode_prompt(tok: ChatTokenizer, task: str, text: str, context: str | None,
                  limits: PromptLimits = PromptLimits()) -> list[int]:
    if task not in TASK_TOKENS:
        raise ValueError(f"decision task {task!r}: expected one of {sorted(TASK_TOKENS)}")
    tid = tok.tok.token_to_id
    ids = [tid("<|bos|>"), tid(TASK_TOKENS[task])]
    ctx = normalize(context or "")
    if ctx:
        ids += [tid("<|assistant|>"), *tok.encode(ctx)[-limits.max_context_tokens:], tok.eos_id]
    words = normalize(text)
    body = tok.encode(words)[-limits.max_text_tokens:] if words else []
    return ids + [tid("<|user|>"), *body, tid("<|assistant|>")]


def answer_ids(tok: ChatTokenizer) -> tuple[int, int]:
    """(no, yes) token ids."""
    no, yes = tok.tok.token_to_id(NO), tok.tok.token_to_id(YES)
    if no is None or yes is None:
        raise CheckpointError(f"{tok.path or 'tokenizer'}: tokenizer.json lacks the answer tokens {NO} {YES}")
    return no, yes


def batch_logits(model: LLaDAModel, prompts: list[list[int]], answer: tuple[int, int],
                 pad_id: int) -> torch.Tensor:
    """(B, 2) logits of (no, yes) at each prompt's last position; prompts left-padded."""
    P = max(len(p) for p in prompts)
    ids = torch.tensor([[pad_id] * (P - len(p)) + p for p in prompts], device=model.t.wte.weight.device)
    pad = torch.tensor([[False] * (P - len(p)) + [True] * len(p) for p in prompts], device=ids.device)
    logits = model(ids, pad_mask=pad)[:, -1]
    return logits[:, list(answer)].float()


class DecisionModel:
    """Answers typed yes/no questions about a transcript; one forward pass per question."""

    def __init__(self, model: LLaDAModel, tok: ChatTokenizer, limits: PromptLimits = PromptLimits()) -> None:
        self.model = model
        self.tok = tok
        self.limits = limits
        self.answer = answer_ids(tok)
        self.pad_id = tok.tok.token_to_id("<|pad|>")

    def prompt(self, task: str, text: str, context: str | None = None) -> list[int]:
        return encode_prompt(self.tok, task, text, context, self.limits)

    @torch.inference_mode()
    def ask(self, task: str, text: str, context: str | None = None) -> Decision:
        """Answer `task` about `text` (a transcript, any casing/punctuation); context: the bot's line."""
        t0 = time.perf_counter()
        ids = torch.tensor([self.prompt(task, text, context)], device=self.model.t.wte.weight.device)
        logits = self.model(ids)[0, -1, list(self.answer)].float()
        p_yes = float(torch.softmax(logits, -1)[1])
        ms = (time.perf_counter() - t0) * 1000
        return Decision(p_yes >= 0.5, max(p_yes, 1.0 - p_yes), ms)

    @torch.inference_mode()
    def p_yes_batch(self, items: list[tuple[str, str, str | None]], batch: int = 256) -> list[float]:
        """P(yes) for many (task, text, context) at once: for evaluation, not for the live path."""
        out: list[float] = []
        for i in range(0, len(items), batch):
            prompts = [self.prompt(*it) for it in items[i:i + batch]]
            out += torch.softmax(batch_logits(self.model, prompts, self.answer, self.pad_id), -1)[:, 1].tolist()
        return out


POOLS = ("logit", "probability")


class EnsembleDecisionModel:
    """Several trainings of the decision model asked together: per task, the members' P("yes") pooled (a folder
    with `ensemble.json`: {"members": {task: [member folder, ...]}, "pool": "probability" or "logit"}, paths
    relative to it). Trainings on different sources err on different texts. `probability` (the linear pool, the
    mean of the probabilities) keeps a member that is confidently wrong outside its own sources from deciding
    alone; `logit` (the mean of the logits) lets a confident doubt of one outweigh the other's mild belief. A task
    may name one member only (the barge-in's `interruption` keeps the shop's training)."""

    def __init__(self, members: dict[str, list[DecisionModel]], pool: str = "logit") -> None:
        if pool not in POOLS:
            raise ValueError(f"pool {pool!r}: expected one of {', '.join(POOLS)}")
        self.members = members
        self.pool = pool

    @staticmethod
    def _logit(p: float) -> float:
        q = min(1.0 - 1e-6, max(1e-6, p))
        return math.log(q / (1.0 - q))

    def _mean(self, ps: list[float]) -> float:
        if self.pool == "probability":
            return sum(ps) / len(ps)
        z = sum(self._logit(p) for p in ps) / len(ps)
        return 1.0 / (1.0 + math.exp(-z))

    def _of(self, task: str) -> list[DecisionModel]:
        if task not in self.members:
            raise ValueError(f"decision task {task!r}: this ensemble answers {sorted(self.members)}")
        return self.members[task]

    def ask(self, task: str, text: str, context: str | None = None) -> Decision:
        answers = [m.ask(task, text, context) for m in self._of(task)]
        p_yes = self._mean([d.confidence if d.answer else 1.0 - d.confidence for d in answers])
        return Decision(p_yes >= 0.5, max(p_yes, 1.0 - p_yes), sum(d.ms for d in answers))

    def p_yes_batch(self, items: list[tuple[str, str, str | None]], batch: int = 256) -> list[float]:
        out = [0.0] * len(items)
        for task in {t for t, _, _ in items}:
            idx = [i for i, it in enumerate(items) if it[0] == task]
            per = [m.p_yes_batch([items[i] for i in idx], batch) for m in self._of(task)]
            for k, i in enumerate(idx):
                out[i] = self._mean([ps[k] for ps in per])
        return out


def _load_ensemble(folder: Path, device: str) -> EnsembleDecisionModel:
    path = folder / "ensemble.json"
    try:
        doc = json.loads(path.read_text())
        spec, pool = doc["members"], doc.get("pool", "logit")
        named = {task: [(folder / m).resolve() for m in ms] for task, ms in spec.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise CheckpointError(f"{path}: expected {{\"members\": {{task: [folder, ...]}}}}: {e}") from None
    if pool not in POOLS:
        raise CheckpointError(f"{path}: pool {pool!r}: expected one of {', '.join(POOLS)}")
    if not named or any(not ms for ms in named.values()):
        raise CheckpointError(f"{path}: every task needs at least one member folder")
    loaded: dict[Path, DecisionModel] = {}
    for m in {m for ms in named.values() for m in ms}:
        if (m / "ensemble.json").is_file():
            raise CheckpointError(f"{path}: member {m} is itself an ensemble")
        loaded[m] = load_decision_model(m, device)
    return EnsembleDecisionModel({task: [loaded[m] for m in ms] for task, ms in named.items()}, pool)


def load_decision_model(folder: str | Path | None = None, device: str = "cpu") -> DecisionModel:
    """The shipped decision model (engines/tiny/decision) or another folder of the same layout, or a folder with
    an `ensemble.json` (`EnsembleDecisionModel`, which answers like one)."""
    folder = Path(folder) if folder is not None else DEFAULT_FOLDER
    if (folder / "ensemble.json").is_file():
        return _load_ensemble(folder, device)  # type: ignore[return-value]  # answers as a DecisionModel does
    ck = load(folder, device=device, dtype=torch.float32)
    answer_ids(ck.tokenizer)
    cfg = read_config(folder)
    if not cfg.causal:
        raise CheckpointError(f"{folder / 'config.json'}: a decision model must be causal (field 'causal')")
    extra = _decision_section(folder)
    limits = PromptLimits(int(extra.get("max_text_tokens", 48)), int(extra.get("max_context_tokens", 32)))
    return DecisionModel(ck.model, ck.tokenizer, limits)


def _decision_section(folder: Path) -> dict:
    d = json.loads((folder / "config.json").read_text()).get("voicelab", {}).get("decision")
    if not isinstance(d, dict):
        raise CheckpointError(f"{folder / 'config.json'}: no 'voicelab.decision' section: not a decision model")
    return d
