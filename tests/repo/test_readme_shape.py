"""The README stays a five-minute read: at most 150 lines of at most 100 characters."""

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_is_short_and_narrow() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, len(lines)
    wide = [(i, len(line)) for i, line in enumerate(lines, 1) if len(line) > 100]
    assert not wide, wide
