"""The callers' language model and Whisper's re-ranking of its N best readings by it (`--stt-lm`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from voicelab.fixtures.format import FIXTURES_ROOT, load_fixture
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.speech.caller_lm import DEFAULT_LM_WEIGHT, CallerLM, corpus_lm
from voicelab.speech.text import recognizer_text
from voicelab.speech.wer import word_error_rate
from voicelab.speech.whisper import RecognizerError, WhisperRecognizer


def test_seen_word_sequences_score_above_backed_off_and_unseen_ones() -> None:
    lm = CallerLM.from_sentences([["what", "are", "your", "hours"], ["what", "are", "you", "doing"]] * 5)
    seen = lm.logprob(["what", "are", "your", "hours"])
    assert seen == pytest.approx(math.log(0.5))  # "your" after "what are" in half the sentences; the rest certain
    backed_off = lm.logprob(["are", "your", "hours"])  # starts mid-sentence: backs off once, then seen
    unseen = lm.logprob(["what", "are", "your", "flamingo"])
    assert seen > backed_off > unseen > -math.inf
    assert lm.logprob([]) < 0  # an empty reading is possible but not free


def test_the_corpus_model_prefers_a_callers_words_to_a_garble() -> None:
    lm = CallerLM.from_corpus(n=4000)
    assert lm.logprob("what are your hours on saturday".split()) > lm.logprob("what are your other volunteer mate"
                                                                             .split())
    assert lm.logprob("can you check my order 3 9 2 7 1".split()) > lm.logprob("can you kick my all the same in 042"
                                                                              .split())
    assert 0 < DEFAULT_LM_WEIGHT < 1
    shared = corpus_lm(n=4000)  # what recognisers use: built once a process, the same counts
    assert shared is corpus_lm(n=4000) and shared.trigrams == lm.trigrams and shared.unigrams == lm.unigrams


class PreferLast:
    """A language model that loves one reading: the re-ranking must then pick it."""

    def __init__(self, favourite: str) -> None:
        self.favourite = favourite

    def logprob(self, words: list[str]) -> float:
        return 0.0 if " ".join(words) == self.favourite else -1e6


@pytest.fixture(scope="module")
def clip() -> tuple[np.ndarray, str]:
    fx = load_fixture(FIXTURES_ROOT / "single_question", sample_rate=16000)
    return fx.turns[0].audio, fx.turns[0].text


@pytest.mark.slow
def test_the_reading_with_the_best_combined_score_is_kept(clip: tuple[np.ndarray, str]) -> None:
    audio, text = clip
    plain = WhisperRecognizer(cpu_threads=2)
    five, _ = plain.readings(audio, 5, 5)
    assert len(five) == 5 and len({r.text for r in five}) == 5
    last = recognizer_text(five[-1].text)
    forced = WhisperRecognizer(cpu_threads=2, lm=PreferLast(last), lm_weight=1.0)  # type: ignore[arg-type]
    assert forced.transcribe(audio).text == last  # the model outweighs the acoustic score
    real = WhisperRecognizer(cpu_threads=2, lm=CallerLM.from_corpus(n=4000), lm_weight=DEFAULT_LM_WEIGHT)
    t = real.transcribe(audio)
    assert word_error_rate(text, t.text) <= 0.2 and t.windows[0].avg_logprob < 0


def test_bad_weights_are_named() -> None:
    with pytest.raises(RecognizerError, match="lm_weight"):
        WhisperRecognizer(lm_weight=0.3)  # a weight without a model
    with pytest.raises(RecognizerError, match="nbest"):
        WhisperRecognizer(lm=CallerLM(), lm_weight=0.3, nbest=0)
    with pytest.raises(PipelineConfigError, match="stt_lm"):
        PipelineConfig(stt_lm=-1.0)
