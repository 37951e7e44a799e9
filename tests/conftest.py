"""Shared fixtures: tiny random checkpoints written in the real LLaDA folder layout."""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# One thread a process for the models (voicelab.cpu_threads; docs/decisions/suite-ten-minutes.md). The suite runs
# several workers a core, each starting recognisers, a voice and torch: pools sized for the whole machine in every
# process waited for each other by spinning, a fifth of the suite's CPU. Set before any test imports torch, and
# inherited by every command a test starts; a value exported by the caller wins.
os.environ.setdefault("VOICELAB_CPU_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def make_checkpoint(folder: Path, causal: bool = False, shift: bool = True, shards: int = 2, seed: int = 0,
                    d_model: int = 32, n_layers: int = 2) -> Path:
    import torch

    from engines.local.checkpoint import save
    from engines.local.model import LLaDAModel, ModelConfig
    from engines.local.tokenizer import train_tiny
    from engines.shop import corpus

    ex = corpus.generate(300, seed)
    tok = train_tiny([m["content"] for e in ex for m in e.messages] + [e.reply for e in ex], vocab_size=300)
    cfg = ModelConfig(d_model=d_model, n_layers=n_layers, n_heads=4, n_kv_heads=4, mlp_hidden_size=2 * d_model,
                      vocab_size=tok.vocab_size, embedding_size=tok.vocab_size, max_sequence_length=256,
                      mask_token_id=tok.mask_id, eos_token_id=tok.eos_id, pad_token_id=tok.eos_id,
                      causal=causal, logits_shift=shift and not causal)
    model = LLaDAModel(cfg)
    model.init_weights(seed)
    # larger random weights make confident, varied guesses, so samplers take many paths
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(8.0)
    save(model, tok, folder, shards=shards, dtype=torch.float32,
         extra_config={"voicelab": {"canvas": 16, "block_size": 4}})
    return folder


@pytest.fixture(scope="session")
def tiny_diffusion(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_checkpoint(tmp_path_factory.mktemp("ckpt") / "diffusion")


@pytest.fixture(scope="session")
def tiny_ar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_checkpoint(tmp_path_factory.mktemp("ckpt") / "ar", causal=True)


# The files that take longest, in the order the last measured run gave them (docs/decisions/suite-ten-minutes.md):
# collected first, so that `--dist loadfile --no-loadscope-reorder` (pyproject.toml) hands them out before the short
# ones. By default xdist hands out the files with the most tests first, so these one- to three-test files went last,
# and the phone-line examples ran alone on one worker for the suite's last three minutes.
LONG_FILES = (
    "tests/repo/test_doc_examples_own_calls.py",
    "tests/repo/test_doc_examples_line.py",
    "tests/repo/test_doc_examples_agents.py",
    "tests/repo/test_doc_examples_benches.py",
    "tests/repo/test_doc_examples_hosted.py",
    "tests/voicelab/turnbench/test_vs_run.py",
    "tests/repo/test_doc_examples.py",
    "tests/voicelab/turnbench/test_call_timing.py",
)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject.toml): two workers a core. With one thread a process (above) the slow tests mostly wait
    on real-time audio, and a worker a core left the cores a third idle (docs/decisions/suite-ten-minutes.md). At
    most 16: each worker holds its own models (a few hundred MB), and a big machine has cores to spare anyway."""
    return min(2 * len(os.sched_getaffinity(0)), 16)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(LONG_FILES)}

    def first(item: pytest.Item) -> int:
        try:
            return rank.get(item.path.relative_to(config.rootpath).as_posix(), len(LONG_FILES))
        except ValueError:  # a path outside the repository
            return len(LONG_FILES)

    items.sort(key=first)  # stable: a file's tests, and the other files, keep their order


# `pytest --cpu-times FILE`: each test's CPU seconds (its worker's and the child processes it waited for) appended
# to FILE as JSON lines, beside its wall seconds. The suite is CPU-bound at three workers on two cores, so its time
# is set by CPU, not by how long the calls play: this says which tests spend it.
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-times", default=None, help="append each test's CPU and wall seconds to this JSON-lines file")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    path = item.config.getoption("--cpu-times")
    if not path:
        yield
        return
    before = _cpu_s(), time.monotonic()
    yield
    cpu, wall = _cpu_s() - before[0], time.monotonic() - before[1]
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"test": item.nodeid, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}) + "\n")


def _cpu_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
