"""Engines that run here: the LLaDA-layout network, its checkpoints and tokenizer, one file per sampler,
the async engine, the tiny models' training, and their input normaliser. Imports the contract only
(training also reads the shop's corpus).
"""

from pathlib import Path

TINY = Path(__file__).resolve().parents[1] / "tiny"  # the shipped weights (data, not a module)
TINY_MODELS = {"diffusion": TINY / "diffusion", "ar": TINY / "ar"}
