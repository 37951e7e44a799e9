#!/usr/bin/env bash
# Regenerate every generated page: docs/results.md and the README's results table (from docs/runs/),
# docs/cli.md (from the typer app) and docs/data-schema.md (the run-folder schema). Tests fail until this has been run after a change.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
"$PY" -m voicelab.cli.app report --markdown docs/runs --readme README.md
"$PY" -m voicelab.cli.docs_ref > docs/cli.md.tmp && mv docs/cli.md.tmp docs/cli.md
echo "cli: docs/cli.md"
"$PY" -c "from voicelab.analysis import tables; print(tables.schema_markdown())" > docs/data-schema.md
echo "schema: docs/data-schema.md"
