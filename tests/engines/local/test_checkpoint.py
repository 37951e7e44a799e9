"""Checkpoint folders: round trip in the sharded LLaDA layout, and one-line errors naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from engines.errors import CheckpointError
from engines.local import checkpoint
from engines.local.checkpoint import load, weight_files
from tests.conftest import make_checkpoint


def test_sharded_round_trip(tmp_path: Path) -> None:
    folder = make_checkpoint(tmp_path / "ck", shards=2)
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                     "model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json"]
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    assert set(index["weight_map"].values()) == {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
    assert "model.transformer.blocks.0.q_proj.weight" in index["weight_map"]
    assert "model.transformer.ff_out.weight" in index["weight_map"]
    ck = load(folder)
    cfg = json.loads((folder / "config.json").read_text())
    for key in ("d_model", "n_layers", "n_heads", "mlp_hidden_size", "vocab_size", "rope_theta", "mask_token_id"):
        assert getattr(ck.model.config, key) == cfg[key]
    # saving the loaded model again reproduces the same tensors
    again = make_checkpoint(tmp_path / "ck2", shards=2)
    ck2 = load(again)
    for (n1, p1), (n2, p2) in zip(ck.model.state_dict().items(), ck2.model.state_dict().items(), strict=True):
        assert n1 == n2 and torch.equal(p1, p2)
    ids = torch.tensor([ck.tokenizer.encode_chat([{"role": "user", "content": "hello"}])])
    assert torch.equal(ck.model(ids), ck2.model(ids))
    assert ck.device.type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_a_large_checkpoint_is_built_on_the_meta_device_and_loads_the_same(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights over `META_BYTES` are loaded into a model built on the meta device (no memory spent on an
    initialisation they replace); a small model is built on the CPU. Both give the same model."""
    folder = make_checkpoint(tmp_path / "ck", shards=2)
    small = load(folder)
    monkeypatch.setattr(checkpoint, "META_BYTES", 0)  # this one counts as large
    large = load(folder)
    for (n1, p1), (n2, p2) in zip(small.model.state_dict().items(), large.model.state_dict().items(), strict=True):
        assert n1 == n2 and torch.equal(p1, p2) and p2.device.type != "meta"
    ids = torch.tensor([small.tokenizer.encode_chat([{"role": "user", "content": "hello"}])])
    assert torch.equal(small.model(ids), large.model(ids))


def test_single_file_layout_loads(tmp_path: Path) -> None:
    folder = make_checkpoint(tmp_path / "one", shards=1)
    assert [p.name for p in weight_files(folder)] == ["model.safetensors"]
    load(folder)


@pytest.fixture()
def good(tmp_path: Path) -> Path:
    return make_checkpoint(tmp_path / "good", shards=2)


def _err(folder: Path) -> str:
    with pytest.raises(CheckpointError) as ei:
        load(folder)
    msg = str(ei.value)
    assert "\n" not in msg
    return msg


def test_missing_folder(tmp_path: Path) -> None:
    assert "checkpoint folder not found" in _err(tmp_path / "nope")


def test_missing_config(good: Path) -> None:
    (good / "config.json").unlink()
    assert _err(good).startswith(str(good / "config.json"))


def test_corrupt_config(good: Path) -> None:
    (good / "config.json").write_text("{ not json")
    msg = _err(good)
    assert str(good / "config.json") in msg and "malformed JSON" in msg


def test_config_field_missing(good: Path) -> None:
    cfg = json.loads((good / "config.json").read_text())
    del cfg["d_model"]
    (good / "config.json").write_text(json.dumps(cfg))
    assert "'d_model'" in _err(good)


def test_weights_do_not_match_config(good: Path) -> None:
    cfg = json.loads((good / "config.json").read_text())
    cfg["mlp_hidden_size"] += 8
    (good / "config.json").write_text(json.dumps(cfg))
    msg = _err(good)
    assert ".safetensors" in msg and "shape" in msg


def test_missing_shard(good: Path) -> None:
    (good / "model-00002-of-00002.safetensors").unlink()
    msg = _err(good)
    assert "model-00002-of-00002.safetensors" in msg and "missing" in msg


def test_truncated_shard(good: Path) -> None:
    p = good / "model-00001-of-00002.safetensors"
    p.write_bytes(p.read_bytes()[:100])
    assert "model-00001-of-00002.safetensors" in _err(good)


def test_wrong_tokenizer_file(good: Path, tmp_path: Path) -> None:
    (good / "tokenizer.json").write_text('{"version": "1.0", "model": 42}')
    msg = _err(good)
    assert str(good / "tokenizer.json") in msg


def test_tokenizer_of_another_model(good: Path, tmp_path: Path) -> None:
    big = make_checkpoint(tmp_path / "big", shards=1)
    cfg = json.loads((good / "config.json").read_text())
    cfg["vocab_size"] = cfg["embedding_size"] = 200
    (good / "config.json").write_text(json.dumps(cfg))
    shutil.copy(big / "tokenizer.json", good / "tokenizer.json")
    msg = _err(good)
    assert "tokenizer.json" in msg or ".safetensors" in msg


def test_missing_tokenizer(good: Path) -> None:
    (good / "tokenizer.json").unlink()
    assert "tokenizer.json: missing" in _err(good)
