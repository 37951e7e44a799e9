"""The bench re-judges the cached readings with the shipped decision models on every load."""

from __future__ import annotations

from pathlib import Path


def test_the_bench_asks_the_turn_model_at_stops_and_the_barge_model_on_barge_cases(monkeypatch) -> None:
    """The turn end and the barge-in ask different trainings of the decision model (BARGE_FOLDER); the bench
    re-judges the cached readings with each, or with one `--decision` folder for both."""
    from voicelab.turnbench import scores

    class Model:
        def __init__(self, p: float) -> None:
            self.p = p

        def ask(self, task: str, text: str):  # noqa: ANN201
            return type("D", (), {"p_yes": self.p, "ms": 1.0})()

    by_folder = {None: Model(0.2), scores.BARGE_FOLDER: Model(0.8), Path("cand"): Model(0.5)}
    monkeypatch.setattr(scores, "load_decision_model", lambda folder=None: by_folder[folder])

    def docs() -> list[dict]:
        return [{"kind": "barge", "reading": {"text": "okay"}}, {"kind": "turn", "stops": [{"text": "i want"}]}]

    d = docs()
    scores.rescore_words(d)
    assert d[0]["interruption_p"] == 0.8 and d[0]["complete_p"] == 0.8 and d[1]["stops"][0]["text_p"] == 0.2
    d = docs()
    scores.rescore_words(d, Path("cand"))
    assert d[0]["interruption_p"] == 0.5 and d[1]["stops"][0]["text_p"] == 0.5
