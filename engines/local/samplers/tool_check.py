"""Check a tool call before it is shown: the model must be sure of every token of it, or the answer asks instead.

A tool call is an action the caller cannot take back, and a misheard request ("could we moo the visit for irene
to tuesday 1 30 pm", "did order number 7 1 3 heaven 1 arrive") still reads like one: the shop's tiny models call
the tool on a few such requests in a hundred. What tells them apart is in the model's own probabilities. Each
token of the answer's leading tool span (from "[" to the "]" that closes it, engines/tool_span.py) is scored by
the model:

- a causal (autoregressive) model: the probability it gave the token when it wrote it, given the tokens before;
- a bidirectional (diffusion) model: the probability of the token with that position masked again and every
  other position as decoded (a row per token of the span, in one batch). The threshold sampler commits
  tokens above its bar whatever the rest of the canvas says later; this asks again once the call is whole,
  the masked model's own conditional (the pseudo-likelihood of Wang and Cho, "BERT has a mouth, and it must
  speak", 2019).

A call whose least probable token falls below `SamplerConfig.tool_floor` is vetoed, and the engine says its
reprompt instead (`Special.reprompt`, from the model folder's config.json: for the shop's models the clarifying
question their corpus answers a half-understood request with), the low-confidence reprompt of spoken dialogue
systems. A folder without one has the answer decoded again from the model's best first token that opens no tool
call, a bidirectional model in blocks of at most `VETO_BLOCK` tokens so that each block reads the words before
it. That mostly works for a causal model and often not for a bidirectional one, whose canvas falls back into the
vetoed call around the new first word ("sorry, iday=wednesday, time=5 pm ..."): hence the reprompt.

Streaming: until the span closes and passes, its positions are reported masked, so no gate releases or pins any
of it and a veto revises nothing anyone was shown. The check costs a causal model nothing, a bidirectional model
one forward over the sequence and one over the span's rows per tool call (on this project's CPU, half the tiny
diffusion engine's tokens/s, which is why its folder ships the check off), and a veto a new decode. The floor is
chosen on the validation split (`python -m engines.eval.tool_floor`; docs/decisions/tool-call-check.md); 0 turns
the check off.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import torch

from engines.local.model import KVCache, LLaDAModel
from engines.local.samplers.base import Control, Sampler, SamplerConfig, Special, Step

VETO_BLOCK = 4


def checked(inner: Sampler) -> Sampler:
    """`inner` with the tool-call check of `SamplerConfig.tool_floor` (a pass-through when it is 0)."""

    def sample(model: LLaDAModel, prompt: list[int], special: Special, cfg: SamplerConfig,
               ctl: Control) -> Iterator[Step]:
        if cfg.tool_floor <= 0 or not special.tool_open or not special.tool_close:
            yield from inner(model, prompt, special, cfg, ctl)
            return
        commit: dict[int, float] = {}  # position -> probability of its token when it was committed
        steps = inner(model, prompt, special, cfg, ctl)
        for st in steps:
            for i, m in enumerate(st.masked):
                if not m and i not in commit:
                    commit[i] = st.confidence[i]
            held = _held(st, special)
            if held is None:  # no leading tool span: nothing to check from here on
                yield st
                continue
            end, closed = held
            if not closed:
                if st.done:  # the answer ended inside an unclosed span: shown as it is, the gate's concern
                    yield st
                    return
                yield _hide(st, end, special)
                continue
            score = span_score(model, prompt, st, end, commit, special)
            ctl.tool_scores.append(score)
            if score >= cfg.tool_floor:
                # shown with the probabilities its tokens were committed with, as if never held (what a consumer
                # that reads commit-time confidence, voicelab's `--tool-reason confidence`, expects)
                yield replace(st, confidence=[commit[i] if i < end else c for i, c in enumerate(st.confidence)])
                yield from steps  # checked: the rest of the answer as the sampler writes it
                return
            if ctl.cancelled.is_set():
                return
            yield from _veto(inner, model, prompt, special, cfg, ctl, st.forwards + (0 if model.config.causal else 1))
            return

    return sample


def span_score(model: LLaDAModel, prompt: list[int], st: Step, end: int, commit: dict[int, float],
               special: Special) -> float:
    """The least probability the model gives a token of the closed span st.tokens[:end] (module docstring).

    Every token counts, the grammar's too: where a "," or the closing ")]" falls says how long a value is (a
    fifth digit, or none), and the opening "[" is the decision to call a tool at all."""
    if model.config.causal:
        return min(commit[i] for i in range(end))
    return _pseudo_likelihood(model, prompt, st, end, special)


def _held(st: Step, special: Special) -> tuple[int, bool] | None:
    """(positions to hold, whether the span is closed) while the answer opens with a tool span, else None."""
    if st.masked[0]:
        return 0, False
    if st.tokens[0] not in special.tool_open:
        return None
    for i, (tok, m) in enumerate(zip(st.tokens, st.masked, strict=True)):
        if m:
            return i, False
        if tok in special.tool_close:
            return i + 1, True
    return len(st.tokens), False


def _hide(st: Step, n: int, special: Special) -> Step:
    """The step with its first n positions reported masked (their guesses kept)."""
    if n == 0:
        return st
    tokens = [special.mask_id] * n + st.tokens[n:]
    return replace(st, tokens=tokens, masked=[True] * n + st.masked[n:],
                   confidence=[0.0] * n + st.confidence[n:], guesses=st.tokens[:n] + st.guesses[n:], done=False)


@torch.no_grad()
def _pseudo_likelihood(model: LLaDAModel, prompt: list[int], st: Step, end: int, special: Special) -> float:
    """The least probability of span tokens 0..end-1, each masked alone, everything else as it stands.

    One forward over prompt and answer fills a key/value cache; then a row per span token recomputes only the
    span (from the position before it, which predicts its first token) against that cache, its own token masked:
    the rest of the sequence keeps the keys and values it had with the token visible, the approximation Fast-dLLM's
    dual cache makes. On the validation split it separates right and wrong calls as masking each token in a whole
    forward does, for less. The forward must be fresh: the sampler's own cache holds the prompt as it was read beside
    a masked answer, and scores a misheard order number ("9 2 for 3 8" as 92238) among the right calls
    (docs/decisions/tool-call-check.md).
    """
    dev = next(model.parameters()).device
    P, total = len(prompt), len(prompt) + len(st.tokens)
    shift = 1 if model.config.logits_shift else 0
    x = torch.tensor(prompt + st.tokens, device=dev)[None]
    cache = KVCache(model.config.n_layers)
    model(x, cache=cache, kv_len=total)
    cache.k = [k.repeat(end, 1, 1, 1) for k in cache.k if k is not None]
    cache.v = [v.repeat(end, 1, 1, 1) for v in cache.v if v is not None]
    a = P - shift
    rows = torch.arange(end, device=dev)
    window = x[:, a:P + end].repeat(end, 1)
    window[rows, shift + rows] = special.mask_id
    logits = model(window, start=a, cache=cache, kv_len=total)[rows, rows].float()
    logits[:, special.mask_id] = float("-inf")
    probs = torch.softmax(logits, -1)
    return float(probs[rows, torch.tensor(st.tokens[:end], device=dev)].min())


@torch.no_grad()
def first_token(model: LLaDAModel, prompt: list[int], special: Special, canvas: int) -> int:
    """The model's best first answer token that opens no tool span (and ends nothing: an empty answer is no
    answer)."""
    dev = next(model.parameters()).device
    if model.config.causal:
        logits = model(torch.tensor([prompt], device=dev))[0, -1].float()
    else:
        shift = 1 if model.config.logits_shift else 0
        x = torch.tensor(prompt + [special.mask_id] * canvas, device=dev)[None]
        logits = model(x)[0, len(prompt) - shift].float()
    banned = [special.mask_id, *special.tool_open, *special.stop_ids]
    logits[torch.tensor(banned, device=dev)] = float("-inf")
    return int(logits.argmax())


def _veto(inner: Sampler, model: LLaDAModel, prompt: list[int], special: Special, cfg: SamplerConfig,
          ctl: Control, forwards: int) -> Iterator[Step]:
    if special.reprompt:
        said = list(special.reprompt[:cfg.canvas])
        tokens = said + [said[-1]] * (cfg.canvas - len(said))  # the end token fills the canvas, as in training
        yield Step(tokens, [False] * cfg.canvas, [1.0] * cfg.canvas, tokens, cfg.block_size, cfg.canvas,
                   ctl.pinned, forwards, True)
        return
    tok = first_token(model, prompt, special, cfg.canvas)
    again = replace(cfg, tool_floor=0.0, first_token=tok)
    if not model.config.causal and cfg.block_size > VETO_BLOCK and cfg.canvas % VETO_BLOCK == 0:
        again = replace(again, block_size=VETO_BLOCK)
    for st in inner(model, prompt, special, again, ctl):
        yield replace(st, forwards=st.forwards + forwards + 1)
