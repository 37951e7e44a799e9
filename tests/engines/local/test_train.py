"""Training on a micro config lowers the loss; the shipped tiny engines answer in text."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engines.eval.evaluate import parse_answer
from engines.local.engine import TINY_MODELS, open_engine
from engines.local.model import LLaDAModel, ModelConfig
from engines.local.tokenizer import train_tiny
from engines.local.train import encode, run_training
from engines.shop import corpus


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["ar", "diffusion"])
def test_a_few_training_steps_lower_the_loss(kind: str) -> None:
    torch.manual_seed(0)
    ex = corpus.generate(400, 3)
    tok = train_tiny([m["content"] for e in ex for m in e.messages] + [e.reply for e in ex], vocab_size=300)
    data = encode(tok, ex, 128)
    cfg = ModelConfig(d_model=32, n_layers=1, n_heads=2, n_kv_heads=2, mlp_hidden_size=64, vocab_size=tok.vocab_size,
                      embedding_size=tok.vocab_size, mask_token_id=tok.mask_id, eos_token_id=tok.eos_id,
                      causal=kind == "ar", logits_shift=kind == "diffusion")
    model = LLaDAModel(cfg)
    model.init_weights(0)
    log: list[dict] = []
    run_training(model, data, steps=60, lr=1e-2, batch=16, seed=0, kind=kind, pad_id=0, mask_id=tok.mask_id,
                 log=log, print_every=59)
    assert log[-1]["loss"] < 0.7 * log[0]["loss"]


def test_corpus_is_reproducible_and_covers_the_intents() -> None:
    a, b = corpus.generate(3000, 7), corpus.generate(3000, 7)
    assert [e.to_json() for e in a] == [e.to_json() for e in b]
    intents = {e.intent for e in a}
    assert len(intents) >= 8 and {"hours", "address", "book", "reschedule", "cancel", "order_status",
                                  "readback_phone", "small_talk", "fallback"} <= intents
    assert any(len(e.messages) > 1 for e in a), "some pairs carry earlier turns"
    held = corpus.heldout(200, 1, a)
    seen = {(e.intent, tuple(sorted(e.slots.items()))) for e in a if e.slots}
    assert all((e.intent, tuple(sorted(e.slots.items()))) not in seen for e in held if e.slots)


@pytest.mark.skipif(not (TINY_MODELS["diffusion"] / "config.json").exists(), reason="tiny weights not trained")
@pytest.mark.parametrize("model", ["diffusion", "ar"])
def test_shipped_tiny_engine_answers_a_corpus_prompt(model: str) -> None:
    eng = open_engine(model)
    text = eng.answer([{"role": "user", "content": "hi what time do you open on saturday"}])
    assert parse_answer(text) == ("hours", {"day": "saturday"}), text
    text = eng.answer([{"role": "user", "content": "can you check my order 4 7 1 2 9"}])
    assert parse_answer(text) == ("order_status", {"number": "47129"}), text


def test_shipped_weights_fit_the_budget() -> None:
    root = Path(TINY_MODELS["diffusion"]).parent
    if not root.exists():
        pytest.skip("tiny weights not trained")
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert total <= 40 * 2**20


@pytest.mark.slow
@pytest.mark.parametrize("causal", [True, False])
def test_finetune_continues_a_checkpoint_and_keeps_its_sampler_defaults(tmp_path: Path, causal: bool) -> None:
    import json

    from engines.local.checkpoint import load
    from engines.local.train import TrainConfig, finetune
    from tests.conftest import make_checkpoint

    src = make_checkpoint(tmp_path / "src", causal=causal, shards=1)
    before = {k: v.clone() for k, v in load(src).model.state_dict().items()}
    cfg = TrainConfig(n_train=200, canvas=128, batch=8, ar_steps=3, diff_steps=3, threads=1)
    meta = finetune(cfg, src, tmp_path / "out" / "model")
    assert meta["kind"] == ("ar" if causal else "diffusion") and [row["step"] for row in meta["log"]] == [0, 2]
    out = load(tmp_path / "out" / "model")
    assert out.model.config.causal == causal
    assert any(not torch.equal(before[k], v) for k, v in out.model.state_dict().items())
    assert json.loads((tmp_path / "out" / "model" / "config.json").read_text())["voicelab"]["block_size"] == 4
    assert (tmp_path / "out" / "finetune_model.json").is_file()


def _micro(tok_size: int, mask_id: int, eos_id: int) -> LLaDAModel:
    cfg = ModelConfig(d_model=16, n_layers=1, n_heads=2, n_kv_heads=2, mlp_hidden_size=32, vocab_size=tok_size,
                      embedding_size=tok_size, mask_token_id=mask_id, eos_token_id=eos_id, causal=False,
                      logits_shift=True)
    model = LLaDAModel(cfg)
    model.init_weights(0)
    return model


def test_a_stopped_stage_resumes_where_an_uninterrupted_one_would_be(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import engines.local.train as train_mod

    ex = corpus.generate(120, 3)
    tok = train_tiny([m["content"] for e in ex for m in e.messages] + [e.reply for e in ex], vocab_size=200)
    data = encode(tok, ex, 128, skip_long=True)
    args = dict(steps=6, lr=1e-2, batch=4, seed=0, kind="diffusion", pad_id=0, mask_id=tok.mask_id,
                print_every=1, save_every=2)
    whole = _micro(tok.vocab_size, tok.mask_id, tok.eos_id)
    whole_log: list[dict] = []
    run_training(whole, data, log=whole_log, **args)

    state = tmp_path / "training_state.pt"
    collate, calls = train_mod.collate, []

    def stop_at_the_fifth_batch(*a, **k):  # a stop between saves: steps 4 and 5 are lost and redone
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return collate(*a, **k)

    monkeypatch.setattr(train_mod, "collate", stop_at_the_fifth_batch)
    stopped = _micro(tok.vocab_size, tok.mask_id, tok.eos_id)
    with pytest.raises(KeyboardInterrupt):
        run_training(stopped, data, log=[], state=state, **args)
    assert torch.load(state, weights_only=False)["step"] == 4
    monkeypatch.setattr(train_mod, "collate", collate)
    resumed = _micro(tok.vocab_size, tok.mask_id, tok.eos_id)  # a fresh process: the start weights again
    log: list[dict] = []
    run_training(resumed, data, log=log, state=state, resume=True, **args)
    assert [r["loss"] for r in log] == [r["loss"] for r in whole_log]
    for k, v in whole.state_dict().items():
        assert torch.allclose(v, resumed.state_dict()[k], atol=1e-6), k
