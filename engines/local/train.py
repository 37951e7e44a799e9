"""Train the tiny embedded models on the CPU.

Recipe (see engines/tiny/TRAINING.md for the shipped run): the autoregressive model is trained
from scratch on the synthetic corpus; the diffusion model is initialised from it and adapted
with Dream-style shifted logits (position i-1 predicts token i) and a masked-diffusion loss
averaged over masked tokens. A diffusion model trained from scratch at this size never learns
to copy names and numbers (engines/tiny/TRAINING.md); adapting the AR model does.

    python -m engines.local.train --out engines/tiny

`--open-names 0.5` draws half the callers' names from engines/shop/names.py's lists (faker's first names of
many locales and made-up names), so that the models learn to copy a name rather than recognise one of the
shop's 40 (engines/tiny/TRAINING.md: tried, not shipped yet). Training reads the lists from the repository;
rewriting them needs the training-only extra (`pip install -e .[train]`, faker):
`python -m engines.shop.word_lists names`.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from engines.local.checkpoint import load, save
from engines.local.model import LLaDAModel, ModelConfig
from engines.local.open_values import Vocabulary, learn_cues
from engines.local.tokenizer import ChatTokenizer, train_tiny
from engines.shop import business, corpus


@dataclass
class TrainConfig:
    n_train: int = corpus.TRAIN_N  # about 30 % of it out-of-domain and half-understood callers (first weights: 24000)
    n_heldout: int = 500
    corpus_seed: int = corpus.TRAIN_SEED
    open_names: float = corpus.TRAIN_OPEN_NAMES  # share of callers' names beyond the shop's 40 (learn to copy)
    tails: float = corpus.TRAIN_TAILS  # share of requests ending with words that carry no slot
    extra_words: float = corpus.TRAIN_EXTRA_WORDS  # share of caller turns with words the corpus never uses
    twins: float = corpus.TRAIN_TWINS  # share of those (answered requests) followed by their cue-lost twin
    asking: float = corpus.TRAIN_ASKING  # factor on the weights of the clarify and fallback turns
    heldout_seed: int = 1
    vocab_size: int = 1024  # of the BPE tokenizer trained on the corpus (the network's shape: ModelConfig)
    canvas: int = 56  # response positions, EOS-padded (LLaDA SFT layout); 48 before open names: a 5-piece name
    # written twice in a booking's read-back overflowed 48
    batch: int = 64
    ar_steps: int = 1000
    ar_lr: float = 1e-3
    diff_steps: int = 1000
    diff_lr: float = 5e-4
    seed: int = 0
    threads: int = 1  # the machine is shared


@dataclass
class Encoded:
    prompt: list[int]
    response: list[int]  # answer + EOS, padded with EOS to the canvas length
    answer_len: int  # answer tokens + the first EOS


def encode(tok: ChatTokenizer, examples: list[corpus.Example], canvas: int, skip_long: bool = False) -> list[Encoded]:
    """Chats as prompt and EOS-padded answer; an answer longer than the canvas is a ValueError, or with
    `skip_long` is left out (a name of 9+ pieces written twice in a booking: 5 of 16,000 training names)."""
    out = []
    skipped = 0
    for e in examples:
        r = tok.encode(e.reply) + [tok.eos_id]
        if len(r) > canvas:
            if skip_long:
                skipped += 1
                continue
            raise ValueError(f"reply of {len(r)} tokens exceeds the canvas of {canvas}: {e.reply!r}")
        out.append(Encoded(tok.encode_chat(e.messages), r + [tok.eos_id] * (canvas - len(r)), len(r)))
    if skipped:
        print(f"left out {skipped} of {len(examples)} chats whose answer exceeds the canvas of {canvas}", flush=True)
    return out


def collate(batch: list[Encoded], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, int, torch.Tensor]:
    """Left-pad prompts so every response starts at the same position P."""
    P = max(len(b.prompt) for b in batch)
    ids = torch.tensor([[pad_id] * (P - len(b.prompt)) + b.prompt + b.response for b in batch])
    pad = torch.tensor([[False] * (P - len(b.prompt)) + [True] * (len(b.prompt) + len(b.response)) for b in batch])
    alen = torch.tensor([b.answer_len for b in batch])
    return ids, pad, P, alen


def ar_loss(model: LLaDAModel, ids: torch.Tensor, pad: torch.Tensor, P: int, alen: torch.Tensor) -> torch.Tensor:
    # the EOS padding past the longest answer teaches an AR model nothing: cut it off
    L = int(alen.max())
    ids, pad = ids[:, : P + L], pad[:, : P + L]
    logits = model(ids, pad_mask=pad)[:, P - 1:-1]  # position p-1 predicts token p
    target = ids[:, P:]
    keep = torch.arange(L, device=alen.device)[None, :] < alen[:, None]  # the answer and its first EOS only
    return F.cross_entropy(logits[keep], target[keep])


def diffusion_loss(model: LLaDAModel, ids: torch.Tensor, pad: torch.Tensor, P: int, gen: torch.Generator,
                   mask_id: int) -> torch.Tensor:
    B, T = ids.shape
    L = T - P
    # drawn on the CPU generator whatever the device: the same masks on a GPU as on the CPU
    t = torch.rand(B, 1, generator=gen) * (1 - 1e-3) + 1e-3
    masked = (torch.rand(B, L, generator=gen) < t).to(ids.device)
    x = ids.clone()
    x[:, P:][masked] = mask_id
    logits = model(x, pad_mask=pad)
    logits = logits[:, P - 1:-1] if model.config.logits_shift else logits[:, P:]
    return F.cross_entropy(logits[masked], ids[:, P:][masked])


def lr_at(step: int, total: int, peak: float, warmup: int = 100) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup))))


def run_training(model: LLaDAModel, data: list[Encoded], steps: int, lr: float, batch: int, seed: int,
                 kind: str, pad_id: int, mask_id: int, log: list[dict], print_every: int = 100,
                 state: Path | None = None, resume: bool = False, save_every: int = 100) -> float:
    """Train in place; returns the seconds trained (earlier sessions' included on resume). With `state`, the
    model, optimiser, data order and mask draws are saved there every `save_every` steps, so that `resume`
    continues from the last save exactly where an uninterrupted run would be (a stage may be stopped)."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.01)
    r = random.Random(seed)
    # batches of similar prompt length waste less compute on padding
    data = sorted(data, key=lambda e: len(e.prompt))
    gen = torch.Generator().manual_seed(seed)
    first, before_s = 0, 0.0
    dev = next(model.parameters()).device
    if resume and state is not None and state.is_file():
        saved = torch.load(state, weights_only=False, map_location=dev)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        r.setstate(saved["rng"])
        gen.set_state(saved["gen"])
        first, before_s = int(saved["step"]), float(saved["elapsed_s"])
        log[:] = saved["log"]
        print(f"resumed {kind} at step {first} of {steps} from {state}", flush=True)
    model.train()
    t0 = time.monotonic() - before_s
    for step in range(first, steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, lr)
        i = r.randrange(0, len(data) - batch + 1)
        ids, pad, P, alen = collate(data[i:i + batch], pad_id)
        ids, pad, alen = ids.to(dev), pad.to(dev), alen.to(dev)
        if kind == "ar":
            loss = ar_loss(model, ids, pad, P, alen)
        else:
            loss = diffusion_loss(model, ids, pad, P, gen, mask_id)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % print_every == 0 or step == steps - 1:
            row = {"kind": kind, "step": step, "loss": round(loss.item(), 4), "elapsed_s": round(time.monotonic() - t0, 1)}
            log.append(row)
            print(json.dumps(row), flush=True)
        if state is not None and ((step + 1) % save_every == 0 or step == steps - 1):
            tmp = state.with_suffix(".tmp")  # written whole, then renamed: a stop mid-save keeps the last one
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "rng": r.getstate(),
                        "gen": gen.get_state(), "step": step + 1, "elapsed_s": time.monotonic() - t0, "log": log}, tmp)
            tmp.replace(state)
    model.eval()
    return time.monotonic() - t0


def train(cfg: TrainConfig, out: Path, from_ar: Path | None = None) -> dict:
    """Train the AR model (or take it from `from_ar`), adapt the diffusion model from it, save both into
    `out` with train_log.json; returns that log. The network's shape is ModelConfig's default (the tiny
    models' d_model 256, 4 layers, 4 heads); the vocabulary comes from the tokenizer trained here."""
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    train_ex = corpus.generate(cfg.n_train, cfg.corpus_seed, cfg.open_names, cfg.tails, cfg.extra_words, cfg.twins,
                             cfg.asking)
    texts = [m["content"] for e in train_ex for m in e.messages] + [e.reply for e in train_ex]
    prev = load(from_ar) if from_ar else None
    tok = prev.tokenizer if prev else train_tiny(texts, cfg.vocab_size)
    data = encode(tok, train_ex, cfg.canvas, skip_long=True)
    mc = ModelConfig(vocab_size=tok.vocab_size,
                     embedding_size=-(-tok.vocab_size // 64) * 64, max_sequence_length=256,
                     mask_token_id=tok.mask_id, eos_token_id=tok.eos_id, pad_token_id=tok.eos_id, causal=True)
    log: list[dict] = []
    t0 = time.monotonic()
    extra = {"voicelab": {"canvas": cfg.canvas, "block_size": 24, "steps_per_block": 12}}
    if prev is not None:
        ar = prev.model.float()
        prev_log = from_ar.parent / "train_log.json"
        if prev_log.is_file():  # keep the AR half of the earlier run's log
            old = json.loads(prev_log.read_text())
            log = [r for r in old.get("log", []) if r.get("kind") == "ar"]
        ar_s = float(json.loads(prev_log.read_text()).get("ar_train_s", 0.0)) if prev_log.is_file() else 0.0
        if out.resolve() != from_ar.parent.resolve():
            _save(ar, tok, cfg_out(out, "ar"), extra_config=extra)
    else:
        ar = LLaDAModel(mc)
        ar.init_weights(cfg.seed)
        run_training(ar, data, cfg.ar_steps, cfg.ar_lr, cfg.batch, cfg.seed, "ar", tok.tok.token_to_id("<|pad|>"),
                     tok.mask_id, log)
        ar_s = time.monotonic() - t0
        _save(ar, tok, cfg_out(out, "ar"), extra_config=extra)
    mc = ar.config
    # diffusion: same weights, bidirectional attention, shifted logits
    dc = ModelConfig.from_dict(mc.to_dict() | {"causal": False, "logits_shift": True})
    diff = LLaDAModel(dc)
    diff.load_state_dict(ar.state_dict())
    run_training(diff, data, cfg.diff_steps, cfg.diff_lr, cfg.batch, cfg.seed + 1, "diffusion",
                 tok.tok.token_to_id("<|pad|>"), tok.mask_id, log)
    diff_s = time.monotonic() - t0 - (0.0 if prev is not None else ar_s)
    _save(diff, tok, cfg_out(out, "diffusion"), extra_config=extra)
    meta = {"train_config": asdict(cfg), "params": ar.num_params(), "ar_train_s": round(ar_s, 1),
            "diffusion_adapt_s": round(diff_s, 1), "torch": torch.__version__, "log": log}
    (out / "train_log.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"done: AR {ar_s:.0f} s, diffusion adaptation {diff_s:.0f} s -> {out}")
    return meta


def shop_vocabulary() -> Vocabulary:
    """The words the shop's corpus puts in callers' mouths, the 40 names every training copies exactly and
    where the corpus puts them (engines/local/open_values.py): written beside each model this script saves."""
    r = random.Random(99)  # clean chats of every in-domain kind, drawn like corpus.corpus_words draws them
    chats = [corpus.draw(r.choice(corpus.IN_DOMAIN), r, noise=False).messages for _ in range(6000)]
    return Vocabulary(frozenset(w for w in corpus.corpus_words() if w.isalpha()), tuple(business.NAMES),
                      learn_cues(chats, business.NAMES))


def _save(model: LLaDAModel, tok: ChatTokenizer, folder: Path, extra_config: dict) -> None:
    save(model, tok, folder, extra_config=extra_config)
    shop_vocabulary().write(folder)


def finetune(cfg: TrainConfig, src: Path, out: Path, resume: bool = False, device: str = "cpu") -> dict:
    """Continue training one trained model folder (AR or diffusion, read from its config) on the
    current corpus with its own tokenizer: `ar_steps`/`ar_lr` or `diff_steps`/`diff_lr` more steps.
    Cheaper than the whole recipe when the corpus grows and the vocabulary still covers it (byte-level
    BPE always does). Writes the model folder `out` (the source's sampler defaults kept) and
    `out.parent/finetune_<out.name>.json` with the loss curve."""
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    ck = load(src)
    model, tok = ck.model.float().to(device), ck.tokenizer
    kind = "ar" if model.config.causal else "diffusion"
    steps, lr = (cfg.ar_steps, cfg.ar_lr) if kind == "ar" else (cfg.diff_steps, cfg.diff_lr)
    chats = corpus.generate(cfg.n_train, cfg.corpus_seed, cfg.open_names, cfg.tails, cfg.extra_words, cfg.twins,
                             cfg.asking)
    data = encode(tok, chats, cfg.canvas, skip_long=True)
    log: list[dict] = []
    out.mkdir(parents=True, exist_ok=True)
    # a different data order and mask draw than the source's own training
    train_s = run_training(model, data, steps, lr, cfg.batch, cfg.seed + 7, kind, tok.tok.token_to_id("<|pad|>"),
                           tok.mask_id, log, state=out / "training_state.pt", resume=resume)
    vl = json.loads((src / "config.json").read_text()).get("voicelab", {})
    if vl.get("block_size") == vl.get("canvas"):  # one block over the whole canvas stays one block
        vl["block_size"] = cfg.canvas
    extra = {"voicelab": vl | {"canvas": cfg.canvas}}
    _save(model.cpu(), tok, out, extra_config=extra)
    (out / "training_state.pt").unlink(missing_ok=True)  # the stage is done: its weights are the model folder
    meta = {"finetune_of": str(src), "kind": kind, "train_config": asdict(cfg), "train_s": round(train_s, 1),
            "torch": torch.__version__, "device": device, "log": log}
    (out.parent / f"finetune_{out.name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"done: {kind} fine-tune {meta['train_s']:.0f} s -> {out}")
    return meta


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Train the tiny AR and diffusion models on the CPU.")
    ap.add_argument("--out", type=Path, default=Path("engines/tiny"))
    ap.add_argument("--from-ar", type=Path, default=None,
                    help="skip AR training: adapt the diffusion model from this trained AR folder (its tokenizer)")
    ap.add_argument("--vocabulary-only", type=Path, nargs="+", default=None,
                    help="only write open_values.json into these trained model folders")
    ap.add_argument("--finetune", type=Path, default=None,
                    help="continue training this model folder on the current corpus; --out is the new model folder")
    ap.add_argument("--resume", action="store_true",
                    help="with --finetune: continue from OUT/training_state.pt, saved every 100 steps")
    ap.add_argument("--device", default="cpu", help="where to train (cpu, cuda): the same recipe either way")
    for f, v in asdict(TrainConfig()).items():
        ap.add_argument(f"--{f.replace('_', '-')}", type=type(v), default=v)
    a = ap.parse_args(argv)
    cfg = TrainConfig(**{f: getattr(a, f) for f in asdict(TrainConfig())})
    if a.vocabulary_only:
        for folder in a.vocabulary_only:
            shop_vocabulary().write(folder)
        return
    if a.finetune is not None:
        finetune(cfg, a.finetune, a.out, resume=a.resume, device=a.device)
        return
    train(cfg, a.out, a.from_ar)


def cfg_out(root: Path, name: str) -> Path:
    return root / name


if __name__ == "__main__":
    main()
