"""Checkpoint folders in the Hugging Face layout LLaDA uses, loaded without remote code.

A folder holds config.json, model.safetensors or sharded model-0000i-of-0000n.safetensors with
model.safetensors.index.json, tokenizer.json and tokenizer_config.json.

Dream (Dream-v0-Instruct-7B; config.json `model_type: "Dream"`) is the Qwen2 layout: its config fields
(hidden_size, num_hidden_layers, ..., rope_theta, rms_norm_eps, mask_token_id, tie_word_embeddings) are
read into ModelConfig (`dream_config`), with q/k/v biases, bidirectional attention and shifted logits
(position i-1 predicts token i); its tensor names (model.layers.N.self_attn.q_proj.weight ...) are
renamed to the module's (`dream_tensor_name`). Its tokenizer may come as vocab.json + merges.txt
(engines/local/tokenizer.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from engines.errors import CheckpointError
from engines.local.model import LLaDAModel, ModelConfig
from engines.local.tokenizer import ChatTokenizer


@dataclass
class Checkpoint:
    model: LLaDAModel
    tokenizer: ChatTokenizer
    folder: Path
    device: torch.device


def pick_device(device: str | None = None) -> torch.device:
    if device:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _read_json(path: Path) -> dict:
    if not path.is_file():
        raise CheckpointError(f"{path}: missing")
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise CheckpointError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{path}: malformed JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(d, dict):
        raise CheckpointError(f"{path}: expected a JSON object, got {type(d).__name__}")
    return d


# Dream's config.json field -> ModelConfig field
_DREAM_FIELDS = {"hidden_size": "d_model", "num_hidden_layers": "n_layers", "num_attention_heads": "n_heads",
                 "num_key_value_heads": "n_kv_heads", "intermediate_size": "mlp_hidden_size",
                 "vocab_size": "vocab_size", "max_position_embeddings": "max_sequence_length",
                 "rope_theta": "rope_theta", "rms_norm_eps": "rms_norm_eps", "mask_token_id": "mask_token_id",
                 "eos_token_id": "eos_token_id", "pad_token_id": "pad_token_id", "tie_word_embeddings": "weight_tying"}
# Dream's tensor names (per layer after model.layers.N.) -> the module's (after model.transformer.blocks.N.)
_DREAM_LAYER = {"self_attn.q_proj": "q_proj", "self_attn.k_proj": "k_proj", "self_attn.v_proj": "v_proj",
                "self_attn.o_proj": "attn_out", "mlp.gate_proj": "ff_proj", "mlp.up_proj": "up_proj",
                "mlp.down_proj": "ff_out", "input_layernorm": "attn_norm", "post_attention_layernorm": "ff_norm"}
_DREAM_TOP = {"model.embed_tokens.weight": "model.transformer.wte.weight",
              "model.norm.weight": "model.transformer.ln_f.weight", "lm_head.weight": "model.transformer.ff_out.weight"}


def is_dream(d: dict) -> bool:
    return str(d.get("model_type", "")).lower() == "dream"


def dream_config(d: dict, path: Path) -> dict:
    """A Dream config.json as ModelConfig fields: Qwen2 layout, bidirectional, shifted logits, q/k/v biases."""
    for key in ("use_sliding_window", "rope_scaling"):
        if d.get(key):
            raise CheckpointError(f"{path}: '{key}' is set; this loader implements neither sliding windows nor "
                                  "RoPE scaling")
    if d.get("hidden_act", "silu") != "silu":
        raise CheckpointError(f"{path}: hidden_act '{d['hidden_act']}' (this loader implements silu)")
    out = {ours: d[theirs] for theirs, ours in _DREAM_FIELDS.items() if theirs in d}
    n_heads = out.get("n_heads")
    if d.get("head_dim") is not None and isinstance(n_heads, int) and n_heads and (
            d["head_dim"] * n_heads != out.get("d_model")):
        raise CheckpointError(f"{path}: head_dim {d['head_dim']} x {n_heads} heads differs from hidden_size "
                              f"{out.get('d_model')} (not supported)")
    out |= {"model_type": d.get("model_type"), "architectures": d.get("architectures") or ["DreamModel"],
            "causal": False, "logits_shift": True, "qkv_bias": bool(d.get("attention_bias", True)),
            "include_bias": False}
    return out


def dream_tensor_name(name: str) -> str:
    """The module's name for one of Dream's tensors (unknown names come back unchanged and are refused later)."""
    if name in _DREAM_TOP:
        return _DREAM_TOP[name]
    parts = name.split(".")
    if len(parts) >= 5 and parts[:2] == ["model", "layers"] and parts[2].isdigit():
        mod = ".".join(parts[3:-1])
        if mod in _DREAM_LAYER:
            return f"model.transformer.blocks.{parts[2]}.{_DREAM_LAYER[mod]}.{parts[-1]}"
    return name


def read_config(folder: Path) -> ModelConfig:
    path = folder / "config.json"
    d = _read_json(path)
    if is_dream(d):
        d = dream_config(d, path)
    for key in ("d_model", "n_layers", "n_heads", "vocab_size"):
        if not isinstance(d.get(key), int):
            raise CheckpointError(f"{path}: field '{key}' missing or not an integer")
    _check_field_types(d, path)
    d.setdefault("embedding_size", d["vocab_size"])
    d.setdefault("n_kv_heads", d["n_heads"])
    if "mlp_hidden_size" not in d:
        d["mlp_hidden_size"] = d.get("mlp_ratio", 4) * d["d_model"]
    return ModelConfig.from_dict(d)


def _check_field_types(d: dict, path: Path) -> None:
    """Every ModelConfig field present has the type of its default (a float field takes an int too)."""
    for f in fields(ModelConfig):
        if f.name not in d:
            continue
        v, default = d[f.name], getattr(ModelConfig(), f.name)
        if isinstance(default, bool):
            ok = isinstance(v, bool)
        elif isinstance(default, int):
            ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
        elif isinstance(default, float):
            ok = isinstance(v, int | float) and not isinstance(v, bool) and v > 0
        else:
            ok = isinstance(v, type(default))
        if not ok:
            want = {bool: "true or false", int: "a whole number >= 0", float: "a number > 0"}.get(
                type(default), type(default).__name__)
            raise CheckpointError(f"{path}: field '{f.name}' is {v!r}, expected {want}")


def weight_files(folder: Path) -> list[Path]:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        wm = _read_json(index).get("weight_map")
        if not isinstance(wm, dict) or not wm:
            raise CheckpointError(f"{index}: field 'weight_map' missing or empty")
        files = [folder / f for f in sorted(set(wm.values()))]
    elif (folder / "model.safetensors").is_file():
        files = [folder / "model.safetensors"]
    else:
        raise CheckpointError(f"{folder}: no model.safetensors or model.safetensors.index.json")
    for f in files:
        if not f.is_file():
            raise CheckpointError(f"{f}: weight shard named in the index is missing")
    return files


META_BYTES = 256 * 1024 * 1024  # weights larger than this: the model is built on the meta device


def load(folder: str | Path, device: str | None = None, dtype: torch.dtype | None = None) -> Checkpoint:
    """Load a checkpoint folder; bf16 on a GPU, fp32 on the CPU unless dtype says otherwise."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{folder}: checkpoint folder not found")
    config = read_config(folder)
    dream = is_dream({"model_type": config.model_type})
    tok = ChatTokenizer.load(folder)
    if tok.mask_id is None and dream:  # Dream's tokenizer_config may not name its mask token: config.json does
        tok.set_mask(config.mask_token_id)
    if tok.vocab_size > config.embedding_size:
        raise CheckpointError(f"{folder / 'tokenizer.json'}: vocabulary of {tok.vocab_size} tokens does not fit "
                              f"the model's embedding_size {config.embedding_size}")
    if tok.mask_id is not None and tok.mask_id != config.mask_token_id:
        raise CheckpointError(f"{folder / 'tokenizer_config.json'}: mask token id {tok.mask_id} differs from "
                              f"config.json mask_token_id {config.mask_token_id}")
    dev = pick_device(device)
    dtype = dtype or (torch.bfloat16 if dev.type == "cuda" else torch.float32)
    files = weight_files(folder)
    if sum(f.stat().st_size for f in files) > META_BYTES:  # a real model: no memory for weights about to be replaced
        with torch.device("meta"):
            model = LLaDAModel(config)
    else:  # a small one initialises in milliseconds, where torch's first use of the meta device takes about 1 s
        model = LLaDAModel(config)
    expected = {n: p.shape for n, p in model.named_parameters()}
    state: dict[str, torch.Tensor] = {}
    for f in files:
        try:
            part = load_file(str(f), device="cpu")
        except (SafetensorError, OSError) as e:
            raise CheckpointError(f"{f}: unreadable safetensors file ({str(e).splitlines()[0][:100]})") from None
        for stored, t in part.items():
            name = dream_tensor_name(stored) if dream else stored
            if name not in expected:
                raise CheckpointError(f"{f}: unexpected tensor '{stored}' for this config.json")
            if tuple(t.shape) != tuple(expected[name]):
                raise CheckpointError(f"{f}: tensor '{stored}' has shape {tuple(t.shape)}, config.json implies "
                                      f"{tuple(expected[name])}")
            state[name] = t
    missing = sorted(set(expected) - set(state))
    if missing:
        raise CheckpointError(f"{folder}: weights missing for {len(missing)} tensors, e.g. '{missing[0]}'")
    model.load_state_dict({k: v.to(dtype) for k, v in state.items()}, assign=True)
    model.to(dev).eval()
    return Checkpoint(model, tok, folder, dev)


def save(model: LLaDAModel, tok: ChatTokenizer, folder: Path, shards: int = 1,
         dtype: torch.dtype = torch.bfloat16, extra_config: dict | None = None) -> None:
    """Write a checkpoint folder; with shards > 1, the index layout of real LLaDA folders."""
    folder.mkdir(parents=True, exist_ok=True)
    cfg = model.config.to_dict() | (extra_config or {})
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    tok.tok.save(str(folder / "tokenizer.json"))
    tc = {"bos_token": tok.bos_token, "eos_token": tok.eos_token, "pad_token": tok.eos_token,
          "mask_token": tok.mask_token, "chat_template": tok.chat_template,
          "tokenizer_class": "PreTrainedTokenizerFast"}
    (folder / "tokenizer_config.json").write_text(json.dumps(tc, indent=2) + "\n")
    state = {k: v.detach().to("cpu", dtype).contiguous() for k, v in model.state_dict().items()}
    names = list(state)
    if shards <= 1:
        save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
        return
    per = -(-len(names) // shards)
    weight_map: dict[str, str] = {}
    for i in range(shards):
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: state[n] for n in names[i * per:(i + 1) * per]}
        save_file(part, str(folder / fname), metadata={"format": "pt"})
        weight_map |= {n: fname for n in part}
    total = sum(t.numel() * t.element_size() for t in state.values())
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2) + "\n")
