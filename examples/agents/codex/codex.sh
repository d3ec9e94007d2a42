#!/bin/sh
# Runs Codex (npm @openai/codex) non-interactively against the `simtape serve` endpoint that
# OPENAI_BASE_URL names (serve sets it in the agent's environment, with OPENAI_API_KEY).
#
# Codex ignores OPENAI_BASE_URL for its built-in `openai` provider (it tries a websocket to
# api.openai.com, then HTTPS there), so this defines a model provider, `simtape`, whose
# base_url is serve's, and selects it. A provider defined this way speaks the Responses API
# over HTTP with server-sent events and never tries a websocket. The base URL is known only
# once serve has bound its port, hence a script and not a config file.
#
# The binary is $CODEX, else `codex` on PATH. Arguments go to `codex exec` (the prompt).
# --skip-git-repo-check: the working directory need not be a git repository.
# --sandbox workspace-write: commands may write inside the working directory (also as root).
# --ephemeral: no session files under CODEX_HOME.
set -eu
: "${OPENAI_BASE_URL:?run this under simtape serve, which sets OPENAI_BASE_URL}"
exec "${CODEX:-codex}" exec --json --skip-git-repo-check --ephemeral \
    --sandbox workspace-write \
    -c model_provider=simtape \
    -c "model_providers.simtape={name=\"simtape\", base_url=\"$OPENAI_BASE_URL\", wire_api=\"responses\", env_key=\"OPENAI_API_KEY\"}" \
    -m simtape "$@"
