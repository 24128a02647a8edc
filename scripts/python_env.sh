#!/usr/bin/env bash
# Creates or updates the Python virtual environment at .venv/ (repository root) with the
# PyPI packages the tests and tools use: jinja2 renders chat templates the way Hugging
# Face transformers does (the reference the chat template tests compare against); the
# official openai client drives the server's end-to-end tests, jsonschema checks the
# structured outputs and tool-call arguments they return, and selenium drives headless
# Chromium (Debian's chromium and chromium-driver) for the chat page's test.
# Idempotent: when .venv/ already holds the pinned versions it returns at once.
#   scripts/python_env.sh
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=(
  "jinja2==3.1.6"
  "markupsafe==3.0.3"
  "openai==3.22.1"
  "jsonschema==4.26.0"
  "selenium==4.27.1"
)

venv=.venv
stamp="$venv/.pagoda-requirements"
wanted=$(printf '%s\n' "${requirements[@]}")

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then
  exit 0
fi

python=${PYTHON:-python3}
if [[ ! -x "$venv/bin/python" ]]; then
  echo "python_env: creating $venv"
  "$python" -m venv "$venv"
fi
echo "python_env: installing ${requirements[*]}"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${requirements[@]}"
printf '%s\n' "$wanted" >"$stamp"
