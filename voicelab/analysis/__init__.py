"""Analysis of run folders: the Parquet tables and their loaders (`tables`, the notebooks' API) and the HTML
report (`report`). The loaders are re-exported here: `from voicelab.analysis import load_run`."""

from voicelab.analysis.tables import (
    SCHEMA,
    AnalysisError,
    RunData,
    Runs,
    arrow_schema,
    config_label,
    find_runs,
    load_run,
    load_runs,
)

__all__ = ["SCHEMA", "AnalysisError", "RunData", "Runs", "arrow_schema", "config_label", "find_runs", "load_run",
           "load_runs"]
