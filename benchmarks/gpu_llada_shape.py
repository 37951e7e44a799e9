"""Denoising step latency of a LLaDA-8B-shaped model at batch 1, against the bandwidth floor.

Builds a random-weight model of LLaDA-8B-Instruct's shape (engines/local/model.py, bf16 on a GPU),
times one full denoising forward (no cache, as LLaDA's generate.py) and one block step with the
dual block cache (Fast-dLLM), and compares both with the floor every batch-1 step must pay:
weight bytes / measured device copy bandwidth.

    python benchmarks/gpu_llada_shape.py                  # 8B shape, needs a GPU
    python benchmarks/gpu_llada_shape.py --shape tiny     # runs anywhere (tested on the CPU)
    python benchmarks/gpu_llada_shape.py --out benchmarks/results/gpu_llada_shape.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engines.local.model import KVCache, LLaDAModel, ModelConfig  # noqa: E402

SHAPES = {
    # LLaDA-8B-Instruct config.json
    "llada-8b": dict(d_model=4096, n_layers=32, n_heads=32, n_kv_heads=32, mlp_hidden_size=12288,
                     vocab_size=126464, embedding_size=126464, max_sequence_length=4096, rope_theta=500000.0,
                     mask_token_id=126336, eos_token_id=126081, pad_token_id=126081),
    "tiny": dict(d_model=64, n_layers=2, n_heads=4, n_kv_heads=4, mlp_hidden_size=128, vocab_size=512,
                 embedding_size=512, max_sequence_length=512, mask_token_id=1, eos_token_id=2, pad_token_id=2),
}


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def timed(fn, dev: torch.device, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        sync(dev)
        t0 = time.perf_counter()
        fn()
        sync(dev)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def copy_bandwidth(dev: torch.device, mb: int, repeats: int) -> float:
    """Bytes per second of a device-to-device copy (read + write counted)."""
    x = torch.empty(mb * 2**20, dtype=torch.uint8, device=dev)
    y = torch.empty_like(x)
    ms = timed(lambda: y.copy_(x), dev, repeats)
    return 2 * x.numel() / (statistics.median(ms[1:] or ms) / 1000)


@torch.no_grad()
def run(shape: str, prompt: int, gen: int, block: int, repeats: int, device: str | None) -> dict:
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    cfg = ModelConfig(**SHAPES[shape])
    with torch.device(dev):
        model = LLaDAModel(cfg).to(dtype)
    for p in model.parameters():  # random weights on the device itself: no 16 GB host round trip
        p.normal_(0.0, 0.02)
    model.eval()
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    T = prompt + gen
    x = torch.randint(0, cfg.vocab_size, (1, T), device=dev)
    full = timed(lambda: model(x), dev, repeats)
    cache = KVCache(cfg.n_layers)
    model(x, cache=cache)
    s = prompt  # the first block of the answer
    blk = timed(lambda: model(x[:, s:s + block], start=s, cache=cache, kv_len=T), dev, repeats)
    bw = copy_bandwidth(dev, 1024 if dev.type == "cuda" else 64, max(3, repeats))
    floor_ms = weight_bytes / bw * 1000
    med = lambda v: round(statistics.median(v[1:] or v), 3)  # noqa: E731  (first call warms up)
    return {
        "shape": shape, "device": str(dev), "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda"
        else platform.processor() or platform.machine(), "dtype": str(dtype).replace("torch.", ""),
        "params": model.num_params(), "weight_bytes": weight_bytes, "prompt": prompt, "gen_length": gen,
        "block": block, "repeats": repeats,
        "step_ms_no_cache": med(full), "step_ms_block_cache": med(blk),
        "copy_bandwidth_gb_s": round(bw / 1e9, 1), "bandwidth_floor_ms": round(floor_ms, 3),
        "no_cache_over_floor": round(med(full) / floor_ms, 2), "block_cache_over_floor": round(med(blk) / floor_ms, 2),
        "torch": torch.__version__,
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="llada-8b")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.shape == "llada-8b" and not (a.device or torch.cuda.is_available()):
        print("gpu_llada_shape: the 8B shape needs a GPU; use --shape tiny on a CPU", file=sys.stderr)
        raise SystemExit(2)
    res = run(a.shape, a.prompt, a.gen, a.block, a.repeats, a.device)
    print(json.dumps(res, indent=1))
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1) + "\n")
    return res


if __name__ == "__main__":
    main()
