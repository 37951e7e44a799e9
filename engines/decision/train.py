"""Train the decision model on the CPU, evaluate it on held-out utterances, ship it.

From scratch (a yes/no judgement needs no copying, so no AR warm start): a causal LLaDA-layout
network, a byte-level BPE tokenizer trained on the decision corpus plus the task and answer
tokens, cross-entropy over the two answer tokens at the prompt's last position. Stops after
`steps` or `max_minutes`, whichever comes first. Writes config.json, tokenizer.json,
tokenizer_config.json, model.safetensors (bf16), train_log.json and eval.json into --out.

    # the shop's training (engines/tiny/decision); the shipped model asks it and decision_calls together
    # (engines/tiny/decision_ensemble/ensemble.json)
    nohup python -m engines.decision.train --out engines/tiny/decision > /tmp/decision_train.log 2>&1 &
    python -m engines.decision.train --conversation 1 --vocab-size 1024 --max-minutes 35 \
        --out engines/tiny/decision_conversation        # the candidate trained on callers' real turns
    python -m engines.decision.train --conversation 1 \
        --shares shop=0.4,harper_valley_calls=0.3,taskmaster4=0.15,taskmaster3=0.15 \
        --call-points engines/decision/data/call_points.tsv --threads 2 --max-minutes 15 \
        --out engines/tiny/decision_calls               # learnt from real calls' moments too (ensemble member)
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from engines.decision import conversation
from engines.decision import corpus as dc
from engines.decision import probe as decision_probe
from engines.decision.model import (
    DecisionModel,
    PromptLimits,
    add_decision_tokens,
    answer_ids,
    batch_logits,
    encode_prompt,
    load_decision_model,
)
from engines.decision.transcripts import read as read_turns
from engines.local.checkpoint import save
from engines.local.model import LLaDAModel, ModelConfig
from engines.local.tokenizer import train_tiny
from engines.local.train import lr_at

# a handful of fixed judgements the shipped model must get right (also in the tests)
FIXED: tuple[tuple[str, str, bool], ...] = (
    ("turn_complete", "what time do you open on saturday", True),
    ("turn_complete", "i would like to book a", False),
    ("turn_complete", "thank you goodbye", True),
    ("turn_complete", "my phone number is 5 5 5", False),
    ("interruption", "mm hmm", False),
    ("interruption", "no wait i meant sunday", True),
)


@dataclass
class DecisionTrainConfig:
    n_train: int = 60000
    n_heldout: int = 4000
    train_seed: int = 0
    heldout_seed: int = 1001
    vocab_size: int = 768
    d_model: int = 128
    n_layers: int = 3
    n_heads: int = 4
    mlp_hidden_size: int = 384
    max_text_tokens: int = 48
    max_context_tokens: int = 32
    batch: int = 64
    steps: int = 3000
    lr: float = 2e-3
    max_minutes: float = 10.0
    seed: int = 0
    threads: int = 1
    latency_n: int = 300
    # the typed questions the model learns (comma-separated); the turn model learns turn_complete alone
    tasks: str = "turn_complete,interruption"
    # share of complete turns whose last word is misheard (engines.decision.corpus, module doc)
    last_word_slip: float = 0.0
    # 1: the broad corpus (engines.decision.corpus, module doc; tried, not shipped)
    broad: int = 0
    # 1: turn_complete also from callers' real turns (engines.decision.conversation, module doc)
    conversation: int = 0
    # the derived callers' turns file the conversational examples come from
    conversation_data: str = "engines/decision/data/conversation.tsv"
    # 1: with --conversation 1, prefixes at a sentence end are complete, not left out (engines.decision.conversation)
    stops_complete: int = 0
    # with --conversation 1: the turn_complete sources and their shares, "source=share,..." (empty: the module's)
    shares: str = ""
    # labelled moments of real calls (engines.decision.conversation.read_points), for the harper_valley_calls share
    call_points: str = ""


def train(model: LLaDAModel, prompts: list[list[int]], labels: list[bool], cfg: DecisionTrainConfig,
          answer: tuple[int, int], pad_id: int, log: list[dict]) -> int:
    """Train in place; returns the number of steps taken."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.01)
    r = random.Random(cfg.seed)
    order = list(range(len(prompts)))
    model.train()
    t0 = time.monotonic()
    step = 0
    pending: list[list[int]] = []
    for step in range(cfg.steps):
        if time.monotonic() - t0 > cfg.max_minutes * 60:
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step, cfg.steps, cfg.lr)
        if not pending:
            # draw 4 batches at once and group them by length: far less padding, labels still mixed
            pool = sorted(r.sample(order, 4 * cfg.batch), key=lambda i: len(prompts[i]))
            pending = [pool[k * cfg.batch:(k + 1) * cfg.batch] for k in range(4)]
            r.shuffle(pending)
        idx = pending.pop()
        logits = batch_logits(model, [prompts[i] for i in idx], answer, pad_id)
        loss = F.cross_entropy(logits, torch.tensor([int(labels[i]) for i in idx]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0:
            acc = (logits.argmax(-1) == torch.tensor([int(labels[i]) for i in idx])).float().mean().item()
            row = {"step": step, "loss": round(loss.item(), 4), "batch_acc": round(acc, 3),
                   "elapsed_s": round(time.monotonic() - t0, 1)}
            log.append(row)
            print(json.dumps(row), flush=True)
    model.eval()
    return step + 1


def _rate(xs: list[bool]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def evaluate(dm: DecisionModel, heldout: list[dc.DecisionExample], train_texts: set[tuple[str, str]],
             latency_n: int) -> dict:
    """Accuracy per task and kind on held-out utterances, error rates that matter, latency per judgement."""
    p = dm.p_yes_batch([(u.task, u.text, u.context or None) for u in heldout])
    pairs = list(zip(p, heldout, strict=True))
    ok = [(pi >= 0.5) == u.answer for pi, u in pairs]
    res: dict = {"n": len(heldout), "tasks": {}}
    tasks = [t for t in dc.TASKS if any(u.task == t for u in heldout)]
    for task in tasks:
        rows = [(o, u, pi) for o, (pi, u) in zip(ok, pairs, strict=True) if u.task == task]
        kinds = sorted({u.kind for _, u, _ in rows})
        res["tasks"][task] = {
            "n": len(rows), "accuracy": _rate([o for o, _, _ in rows]),
            # texts never seen in training, and the templates only the held-out split uses
            "accuracy_unseen_text": _rate([o for o, u, _ in rows if (u.task, u.text) not in train_texts]),
            "n_unseen_text": sum((u.task, u.text) not in train_texts for _, u, _ in rows),
            "accuracy_novel_templates": _rate([o for o, u, _ in rows if u.novel]),
            "n_novel_templates": sum(u.novel for _, u, _ in rows),
            "accuracy_by_kind": {k: _rate([o for o, u, _ in rows if u.kind == k]) for k in kinds},
        }
    tc = [(pi >= 0.5) for pi, u in pairs if u.task == "turn_complete" and u.kind.startswith("cut_")]
    res["false_complete_rate_on_cut_offs"] = _rate(tc)
    inc = [(pi >= 0.5) for pi, u in pairs if u.task == "turn_complete" and not u.answer]
    res["false_complete_rate_on_all_incomplete"] = _rate(inc)
    bc = [(pi >= 0.5) for pi, u in pairs if u.task == "interruption" and not u.answer]
    res["false_interruption_rate_on_backchannels_and_noise"] = _rate(bc)
    miss = [(pi < 0.5) for pi, u in pairs if u.task == "interruption" and u.answer]
    res["missed_interruption_rate"] = _rate(miss)
    res["fixed"] = [{"task": t, "text": x, "expected": e, "p_yes": round(dm.ask(t, x).p_yes, 4)}
                    for t, x, e in FIXED if t in tasks]
    # latency of one live judgement (batch 1), as the pipeline will call it
    for u in heldout[:20]:
        dm.ask(u.task, u.text, u.context or None)  # warm-up
    ms = sorted(dm.ask(u.task, u.text, u.context or None).ms for u in heldout[:latency_n])
    res["latency_ms"] = {"n": len(ms), "p50": round(statistics.median(ms), 3),
                         "p95": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 3),
                         "threads": torch.get_num_threads()}
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Train the decision model on the CPU.")
    ap.add_argument("--out", type=Path, default=Path("engines/tiny/decision"))
    for f, v in asdict(DecisionTrainConfig()).items():
        ap.add_argument(f"--{f.replace('_', '-')}", type=type(v), default=v)
    a = ap.parse_args(argv)
    cfg = DecisionTrainConfig(**{f: getattr(a, f) for f in asdict(DecisionTrainConfig())})
    tasks = tuple(t.strip() for t in cfg.tasks.split(",") if t.strip())
    if not tasks or any(t not in dc.TASKS for t in tasks):
        ap.error(f"--tasks {cfg.tasks!r}: expected a comma-separated subset of {', '.join(dc.TASKS)}")
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    if cfg.conversation:
        if not Path(cfg.conversation_data).is_file():
            ap.error(f"--conversation-data {cfg.conversation_data}: no such file")
        if tasks != dc.TASKS:
            ap.error("--conversation 1 trains both tasks: leave --tasks at its default")
        try:
            turns = read_turns(Path(cfg.conversation_data))
        except ValueError as e:
            ap.error(str(e))
        sc = bool(cfg.stops_complete)
        try:
            shares = {k: float(v) for k, v in (x.split("=") for x in cfg.shares.split(",") if x)} or None
            points = conversation.read_points(Path(cfg.call_points)) if cfg.call_points else []
            train_set = conversation.mixed(cfg.n_train, cfg.train_seed, "train", turns, shares, sc, points)
            heldout = conversation.mixed(cfg.n_heldout, cfg.heldout_seed, "heldout", turns, shares, sc, points)
        except (ValueError, OSError) as e:
            ap.error(f"--shares / --call-points: {e}")
    else:
        train_set = dc.generate(cfg.n_train, cfg.train_seed, "train", tasks, cfg.last_word_slip, bool(cfg.broad))
        # held out as the shipped model's figures were measured (no slips), so the two compare
        heldout = dc.generate(cfg.n_heldout, cfg.heldout_seed, "heldout", tasks, broad=bool(cfg.broad))
    tok = train_tiny([u.text for u in train_set] + [u.context for u in train_set if u.context], cfg.vocab_size)
    add_decision_tokens(tok)
    limits = PromptLimits(cfg.max_text_tokens, cfg.max_context_tokens)
    prompts = [encode_prompt(tok, u.task, u.text, u.context or None, limits) for u in train_set]
    labels = [u.answer for u in train_set]
    mc = ModelConfig(d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads, n_kv_heads=cfg.n_heads,
                     mlp_hidden_size=cfg.mlp_hidden_size, vocab_size=tok.vocab_size,
                     embedding_size=-(-tok.vocab_size // 64) * 64, max_sequence_length=128, weight_tying=True,
                     mask_token_id=tok.mask_id, eos_token_id=tok.eos_id, pad_token_id=tok.eos_id, causal=True)
    model = LLaDAModel(mc)
    model.init_weights(cfg.seed)
    log: list[dict] = []
    t0 = time.monotonic()
    steps = train(model, prompts, labels, cfg, answer_ids(tok), tok.tok.token_to_id("<|pad|>"), log)
    train_s = time.monotonic() - t0
    extra = {"voicelab": {"decision": {"tasks": list(tasks), "max_text_tokens": cfg.max_text_tokens,
                                       "max_context_tokens": cfg.max_context_tokens}}}
    save(model, tok, a.out, extra_config=extra)
    # evaluate the shipped (bf16-rounded) weights, exactly as load_decision_model gives them
    dm = load_decision_model(a.out)
    result = evaluate(dm, heldout, {(u.task, u.text) for u in train_set}, cfg.latency_n)
    if "turn_complete" in tasks:  # complete turns with a misheard last word, held out (every one slipped)
        slipped = [u for u in dc.generate(cfg.n_heldout, cfg.heldout_seed + 1, "heldout", ("turn_complete",), 1.0,
                                          bool(cfg.broad)) if u.kind == "misheard_ending"]
        ps = dm.p_yes_batch([(u.task, u.text, u.context or None) for u in slipped])
        result["accuracy_on_misheard_endings"] = _rate([p >= 0.5 for p in ps])
        result["n_misheard_endings"] = len(slipped)
        result["probe"] = decision_probe.score(dm)  # hand-written turns outside the generator
    result["command"] = "python -m engines.decision.train " + " ".join(argv if argv is not None else sys.argv[1:])
    (a.out / "eval.json").write_text(json.dumps(result, indent=1) + "\n")
    meta = {"train_config": asdict(cfg), "params": model.num_params(), "steps_done": steps,
            "train_s": round(train_s, 1), "torch": torch.__version__, "log": log}
    (a.out / "train_log.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(json.dumps({k: result.get(k) for k in ("false_complete_rate_on_cut_offs", "accuracy_on_misheard_endings",
                                                  "probe", "latency_ms")}
                     | {t: result["tasks"][t]["accuracy"] for t in tasks}))


if __name__ == "__main__":
    main()
