"""Dream checkpoints (Dream-v0-Instruct-7B's layout) load without remote code: a tiny random folder written with
Dream's exact tensor names, config fields and tokenizer files round-trips through engines.local.checkpoint.load, gives
the logits of an independent Qwen2-style reference forward, shifts its logits, and generates with a diffusion
sampler."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from engines.errors import CheckpointError
from engines.local.checkpoint import load
from engines.local.engine import Engine
from engines.local.samplers.base import Canvas, SamplerConfig, Special

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|mask|>"]
# Dream-v0-Instruct-7B's chat template (ChatML with a default system turn)
CHAT_TEMPLATE = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
                 "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
                 "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
                 "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
H, LAYERS, HEADS, KV_HEADS, FF = 64, 2, 4, 2, 128
THETA, EPS = 1_000_000.0, 1e-6


def _tokenizer(folder: Path) -> Tokenizer:
    """A byte-level BPE saved as Dream ships its tokenizer: vocab.json + merges.txt (no tokenizer.json)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["what time do you open on saturday", "we open at nine am", "you are a helpful "
                             "assistant", "system user assistant"] * 20, trainer)
    tok.model.save(str(folder))
    return tok


def write_dream(folder: Path, seed: int = 0) -> dict[str, torch.Tensor]:
    """config.json, tokenizer files and model.safetensors with Dream's names; returns the tensors written."""
    folder.mkdir(parents=True)
    tok = _tokenizer(folder)
    ids = {s: tok.token_to_id(s) for s in SPECIALS}
    vocab = -(-tok.get_vocab_size() // 64) * 64  # padded rows, as Dream's 152064 > its tokenizer's vocabulary
    config = {"architectures": ["DreamModel"], "attention_dropout": 0.0,
              "auto_map": {"AutoConfig": "configuration_dream.DreamConfig", "AutoModel": "modeling_dream.DreamModel"},
              "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|endoftext|>"],
              "pad_token_id": ids["<|endoftext|>"], "mask_token_id": ids["<|mask|>"], "hidden_act": "silu",
              "hidden_size": H, "initializer_range": 0.02, "intermediate_size": FF, "max_position_embeddings": 256,
              "max_window_layers": LAYERS, "model_type": "Dream", "num_attention_heads": HEADS,
              "num_hidden_layers": LAYERS, "num_key_value_heads": KV_HEADS, "rms_norm_eps": EPS,
              "rope_scaling": None, "rope_theta": THETA, "sliding_window": None, "tie_word_embeddings": False,
              "torch_dtype": "bfloat16", "transformers_version": "4.46.2", "use_cache": False,
              "use_sliding_window": False, "vocab_size": vocab}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    added = {str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                      "special": True} for s, i in ids.items()}
    # no "mask_token" entry: the loader takes the mask from config.json's mask_token_id
    tc = {"added_tokens_decoder": added, "bos_token": None, "chat_template": CHAT_TEMPLATE,
          "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "model_max_length": 131072,
          "tokenizer_class": "DreamTokenizer"}
    (folder / "tokenizer_config.json").write_text(json.dumps(tc, indent=2))
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape: int, scale: float = 0.05) -> torch.Tensor:
        return (torch.randn(shape, generator=g) * scale).to(torch.bfloat16)

    hd = H // HEADS
    w = {"model.embed_tokens.weight": rnd(vocab, H, scale=0.5), "model.norm.weight": 1 + rnd(H),
         "lm_head.weight": rnd(vocab, H, scale=0.2)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        w |= {p + "self_attn.q_proj.weight": rnd(HEADS * hd, H), p + "self_attn.q_proj.bias": rnd(HEADS * hd, scale=0.5),
              p + "self_attn.k_proj.weight": rnd(KV_HEADS * hd, H), p + "self_attn.k_proj.bias": rnd(KV_HEADS * hd, scale=0.5),
              p + "self_attn.v_proj.weight": rnd(KV_HEADS * hd, H), p + "self_attn.v_proj.bias": rnd(KV_HEADS * hd, scale=0.5),
              p + "self_attn.o_proj.weight": rnd(H, HEADS * hd), p + "mlp.gate_proj.weight": rnd(FF, H),
              p + "mlp.up_proj.weight": rnd(FF, H), p + "mlp.down_proj.weight": rnd(H, FF),
              p + "input_layernorm.weight": 1 + rnd(H), p + "post_attention_layernorm.weight": 1 + rnd(H)}
    save_file(w, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return w


def reference_logits(w: dict[str, torch.Tensor], ids: torch.Tensor) -> torch.Tensor:
    """Qwen2's forward written out from Dream's tensors, bidirectional (no causal mask), fp32."""
    f = {k: v.float() for k, v in w.items()}
    hd, rep, T = H // HEADS, HEADS // KV_HEADS, ids.shape[1]
    inv = 1.0 / (THETA ** (torch.arange(0, hd, 2).float() / hd))
    ang = torch.arange(T).float()[:, None] * inv
    cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()

    def rms(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS))

    def rope(x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, -1)
        return x * cos + torch.cat([-x2, x1], -1) * sin

    x = f["model.embed_tokens.weight"][ids[0]]
    for i in range(LAYERS):
        p = f"model.layers.{i}.self_attn."
        h = rms(x, f[f"model.layers.{i}.input_layernorm.weight"])
        q = (h @ f[p + "q_proj.weight"].T + f[p + "q_proj.bias"]).view(T, HEADS, hd).transpose(0, 1)
        k = (h @ f[p + "k_proj.weight"].T + f[p + "k_proj.bias"]).view(T, KV_HEADS, hd).transpose(0, 1)
        v = (h @ f[p + "v_proj.weight"].T + f[p + "v_proj.bias"]).view(T, KV_HEADS, hd).transpose(0, 1)
        q, k = rope(q), rope(k).repeat_interleave(rep, 0)
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(hd), -1) @ v.repeat_interleave(rep, 0)
        x = x + att.transpose(0, 1).reshape(T, H) @ f[p + "o_proj.weight"].T
        m = f"model.layers.{i}.mlp."
        h = rms(x, f[f"model.layers.{i}.post_attention_layernorm.weight"])
        x = x + (F.silu(h @ f[m + "gate_proj.weight"].T) * (h @ f[m + "up_proj.weight"].T)) @ f[m + "down_proj.weight"].T
    return rms(x, f["model.norm.weight"]) @ f["lm_head.weight"].T


@pytest.fixture(scope="module")
def dream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, torch.Tensor]]:
    folder = tmp_path_factory.mktemp("dream") / "Dream-v0-Instruct-tiny"
    return folder, write_dream(folder)


def test_dream_folder_round_trips(dream: tuple[Path, dict[str, torch.Tensor]]) -> None:
    folder, w = dream
    assert not (folder / "tokenizer.json").exists()
    ck = load(folder, device="cpu")
    c = ck.model.config
    assert (c.d_model, c.n_layers, c.n_heads, c.n_kv_heads, c.mlp_hidden_size) == (H, LAYERS, HEADS, KV_HEADS, FF)
    assert (c.rope_theta, c.rms_norm_eps, c.model_type) == (THETA, EPS, "Dream")
    assert c.qkv_bias and c.logits_shift and not c.causal and not c.weight_tying
    mask = ck.tokenizer.tok.token_to_id("<|mask|>")
    assert c.mask_token_id == mask and ck.tokenizer.mask_id == mask and ck.tokenizer.mask_token == "<|mask|>"
    assert ck.tokenizer.tok.token_to_id("<|im_end|>") in ck.tokenizer.stop_ids  # ChatML's end of turn ends answers
    state = ck.model.state_dict()
    assert len(state) == len(w)  # every stored tensor landed somewhere, nothing is left unset
    assert torch.equal(state["model.transformer.blocks.1.q_proj.bias"], w["model.layers.1.self_attn.q_proj.bias"].float())
    assert torch.equal(state["model.transformer.blocks.0.ff_out.weight"], w["model.layers.0.mlp.down_proj.weight"].float())
    assert torch.equal(state["model.transformer.ff_out.weight"], w["lm_head.weight"].float())
    chat = [{"role": "user", "content": "what time do you open on saturday"}]
    text = ck.tokenizer.render(chat)
    assert text.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n")
    assert text.endswith("<|im_start|>assistant\n")
    ids = torch.tensor([ck.tokenizer.encode_chat(chat)])
    assert ck.tokenizer.decode(ck.tokenizer.encode("we open at nine am")) == "we open at nine am"
    with torch.no_grad():
        ours = ck.model(ids)[0]
    assert torch.allclose(ours, reference_logits(w, ids)[:, : c.vocab_size], atol=1e-4, rtol=1e-4)


def test_dream_logits_are_shifted(dream: tuple[Path, dict[str, torch.Tensor]]) -> None:
    folder, _ = dream
    ck = load(folder, device="cpu")
    prompt = ck.tokenizer.encode_chat([{"role": "user", "content": "hello"}])
    special = Special(ck.tokenizer.mask_id, frozenset(ck.tokenizer.stop_ids))
    canvas = Canvas(ck.model, prompt, special, SamplerConfig(canvas=8, cache="none"))
    with torch.no_grad():
        full = ck.model(canvas.x)[0].float()
    P = len(prompt)
    assert torch.equal(canvas.logits(0, 8, refresh=True), full[P - 1:P + 7])  # position i-1 predicts token i


@pytest.mark.parametrize("sampler", ["low_confidence", "threshold"])
def test_dream_generates_with_a_diffusion_sampler(dream: tuple[Path, dict[str, torch.Tensor]], sampler: str) -> None:
    folder, _ = dream
    eng = Engine(load(folder, device="cpu"), sampler, SamplerConfig(canvas=16, block_size=8, steps_per_block=4))
    rows = eng.ckpt.model.config.vocab_size
    try:
        snaps = list(eng.generate([{"role": "user", "content": "what time do you open"}]))
    finally:
        eng.close()
    last = snaps[-1]
    assert last.done and len(snaps) > 1 and eng.kind == "diffusion"
    assert sum(snaps[0].masked) > sum(last.masked)  # the canvas starts masked and resolves
    n = last.eos if last.eos is not None else len(last.tokens)
    assert not any(last.masked[:n]) and all(0 <= t < rows for t in last.tokens)


def test_dream_features_it_cannot_run_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "sliding"
    write_dream(folder)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(cfg | {"use_sliding_window": True}))
    with pytest.raises(CheckpointError, match="use_sliding_window"):
        load(folder, device="cpu")
    (folder / "config.json").write_text(json.dumps(cfg))
    w = {"model.layers.0.self_attn.q_proj.weight": torch.zeros(H, H)}  # a stray bias-less shard: biases missing
    save_file(w, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match="weights missing"):
        load(folder, device="cpu")
