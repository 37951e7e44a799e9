"""The agent's words read back from the recorded line by the lab's recogniser, and answers scored from them.

Runs after every call of a run has ended, so the agent under test never shares the CPU with the lab's
recogniser. Each caller turn's reply (the agent's speech stretches attributed to it, `voicelab.call.reply_spans`)
is resampled to 16 kHz and read by Whisper base (`voicelab.speech.recognizers`).

Scoring: the shop's replies form a grammar (`engines.shop.corpus.REPLIES`) that `engines.shop.answers.score_reply`
reads exactly, punctuation and tool span included. Heard words have neither, so each template's spoken part
is matched against the recogniser's normalised words (`recognizer_text` applied to the template's literal
words, slots as patterns); a match is rendered back to the template's full text (the tool span rebuilt from
the slots heard) and scored. Whether a tool call was made cannot be heard: audio-only runs do not report
tool calls. Words that fit no template score incoherent and not correct. Only the shop's part of a fixture's
expect_reply is scored so; its checks of the words (`says_any`, `says_all`, `matches`, `not_says`: any agent's
words, `voicelab.measure.expectations`) are scored on the same read-back text.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import soxr

from engines.shop import corpus
from engines.shop.answers import score_reply
from engines.tool_span import strip_spans
from voicelab.measure import expectations
from voicelab.pcm import SAMPLE_RATE
from voicelab.speech.streaming import Recognizer
from voicelab.speech.text import recognizer_text, spoken_form

_GAP_S = 0.2  # silence put between the stretches of one reply
# what the recogniser's normaliser makes of a slot's value
_HEARD_SLOTS = {"number": r"\d[\d ]*\d|\d", "spoken": r"\d[\d ]*\d|\d", "name": r"[a-z']+"}


@dataclass(frozen=True)
class ReadBack:
    turn: int
    text: str  # the recogniser's normalised words
    start_s: float  # first onset of the reply
    end_s: float  # last audible sample
    template: str | None = None  # the shop reply template the words fit
    canonical: str | None = None  # that template's full text with the slots heard
    coherent: bool | None = None  # None: not scored (no expect_reply)
    correct: bool | None = None
    reason: str | None = None
    expectations: str | None = None  # the checks' results, a JSON array (None: the turn has no checks)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def reply_audio(bot: np.ndarray, sr: int, spans: list[tuple[float, float]]) -> np.ndarray:
    """The reply's stretches (with a little room around each) joined by short silences, float32 at 16 kHz."""
    pieces: list[np.ndarray] = []
    gap = np.zeros(int(_GAP_S * sr), dtype=np.float32)
    for on, off in spans:
        a, b = max(0, int((on - 0.05) * sr)), min(bot.size, int((off + 0.1) * sr))
        pieces += [bot[a:b].astype(np.float32) / 32768.0, gap]
    audio = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
    return soxr.resample(audio, sr, SAMPLE_RATE).astype(np.float32) if sr != SAMPLE_RATE and audio.size else audio


@dataclass(frozen=True)
class _Template:
    key: str
    exact: re.Pattern[str]  # every word as written
    loose: re.Pattern[str]  # each literal word any one word (groups w0, w1, ...), the slots as in `exact`
    literals: tuple[str, ...]  # the literal words in order


def _tokens(spoken: str) -> list[tuple[str, str]]:
    """A template's spoken text as ("word", w) and ("slot", name) in order, words in `spoken_form`."""
    out: list[tuple[str, str]] = []
    pos = 0
    for m in re.finditer(r"\{(\w+)\}", spoken):
        out += [("word", w) for w in spoken_form(spoken[pos:m.start()]).split()] + [("slot", m.group(1))]
        pos = m.end()
    return out + [("word", w) for w in spoken_form(spoken[pos:]).split()]


@lru_cache(maxsize=1)
def _spoken_patterns() -> list[_Template]:
    out = []
    for key, (_intent, text) in corpus.REPLIES.items():
        exact: list[str] = []
        loose: list[str] = []
        literals: list[str] = []
        seen: set[str] = set()
        for kind, value in _tokens(strip_spans(text, "").lstrip()):  # the tool span is never spoken
            if kind == "word":
                exact.append(re.escape(value))
                loose.append(f"(?P<w{len(literals)}>[a-z0-9']+)")
                literals.append(value)
                continue
            pat = _HEARD_SLOTS.get(value, corpus.SLOT_PATTERNS[value])
            group = f"(?P={value})" if value in seen else f"(?P<{value}>{pat})"
            exact.append(group)
            loose.append(group)
            seen.add(value)
        out.append(_Template(key, re.compile(r"\b" + r"\s+".join(exact) + r"\b"),
                             re.compile(r"\b" + r"\s+".join(loose) + r"\b"), tuple(literals)))
    return out


# A reply heard with some of its fixed words misheard ("milburg" for "millbrook", "for 9 am" for "from 9 am") is
# still that reply when at least this share of its fixed words were heard as written and every slot was
# (the slots carry the answer; the fixed words only say which reply it is).
LOOSE_LITERAL_SHARE = 0.75


def match_template(words: str) -> tuple[str, str] | None:
    """(template key, its full text with the slots heard) for normalised words, or None if none fits: a template
    whose every word was heard, else the one with the most fixed words heard as written, at least
    `LOOSE_LITERAL_SHARE` of them (a word misheard for another, never one missing)."""
    heard = spoken_form(words)
    found = [(t, m) for t in _spoken_patterns() if (m := t.exact.search(heard)) is not None]
    if not found:
        scored = []
        # also as written: a contraction misheard for a word ("we'd open" for "we open") is one word, not two
        for form in dict.fromkeys((heard, recognizer_text(words))):
            for t in _spoken_patterns():
                m = t.loose.search(form)
                if m is None or not t.literals:
                    continue
                share = sum(m.group(f"w{i}") == w for i, w in enumerate(t.literals)) / len(t.literals)
                if share >= LOOSE_LITERAL_SHARE:
                    scored.append((share, t, m))
        found = [(t, m) for _share, t, m in sorted(scored, key=lambda x: -x[0])]
    for t, m in found:
        slots = {k: v for k, v in m.groupdict().items() if not re.fullmatch(r"w\d+", k)}
        for k in ("number", "spoken"):
            if k in slots:
                digits = slots[k].replace(" ", "")
                slots = {**slots, "number": digits, "spoken": " ".join(digits)}
        try:
            return t.key, corpus.render(t.key, **slots)
        except KeyError:
            continue
    return None


def score_words(words: str, expect: Any) -> dict[str, Any]:
    """template, canonical, coherent, correct and reason of heard words against a fixture's expect_reply."""
    found = match_template(words)
    if found is None:
        return {"template": None, "canonical": None, "coherent": False, "correct": False,
                "reason": "fits no reply template"}
    key, canonical = found
    s = score_reply(canonical, expect)
    return {"template": key, "canonical": canonical, "coherent": s.coherent, "correct": s.correct,
            "reason": s.reason}


def read_back(recognizer: Recognizer, bot: np.ndarray, sr: int, spans: dict[int, list[tuple[float, float]]],
              expect_replies: dict[int, Any]) -> list[ReadBack]:
    """One ReadBack per turn that got a reply (the greeting is turn -1), scored where expect_replies says."""
    out = []
    for turn in sorted(spans):
        audio = reply_audio(bot, sr, spans[turn])
        text = recognizer_text(str(recognizer.transcribe(audio).raw)) if audio.size else ""
        out.append(ReadBack(turn=turn, text=text, start_s=round(spans[turn][0][0], 3),
                            end_s=round(spans[turn][-1][1], 3), **score_reply_words(text, expect_replies.get(turn))))
    return out


def score_reply_words(text: str, expect_reply: Any) -> dict[str, Any]:
    """ReadBack's scores of heard words: the shop's answer where the fixture gives one (`score_words`), and the
    fixture's checks of the words (`expectations`) where it gives any."""
    shop = expectations.shop_expect(expect_reply)
    score: dict[str, Any] = {} if shop is None else score_words(text, shop)
    checks = expectations.score(text, expect_reply)
    return score if checks is None else {**score, "expectations": checks}
