"""Engines that run here: the LLaDA-layout network, its checkpoints and tokenizer, one file per sampler,
the async engine, the tiny models' training, and their input normaliser. Imports the contract only
(training also reads the shop's corpus).
"""

from pathlib import Path

TINY = Path(__file__).resolve().parents[1] / "tiny"  # the shipped weights (data, not a module)
TINY_MODELS = {"diffusion": TINY / "diffusion", "ar": TINY / "ar"}
# the tool-call check's floor each was given on the validation split (`python -m engines.eval.tool_floor`, results in
# tiny/stages/tool_floor_*.json); the AR model's config.json ships it on, the diffusion model's ships 0 (off)
TINY_TOOL_FLOORS = {"diffusion": 0.83, "ar": 0.9}
