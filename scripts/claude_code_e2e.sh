#!/usr/bin/env bash
# End-to-end check of the Claude Code hooks with the real CLI (documented, not run in CI).
#
#   scripts/claude_code_e2e.sh [python]      # python: an interpreter with context-keeper installed
#
# 1. installs the Claude Code CLI from npm into a temporary prefix (CLAUDE_CODE_VERSION, default
#    "latest"), with a temporary HOME so no real settings or credentials are touched;
# 2. copies examples/demo-project and runs `context-keeper install` on it (hooks in
#    .claude/settings.json, server in .mcp.json);
# 3. runs one non-interactive session (`claude -p`) against an unreachable model endpoint —
#    the turn fails, but SessionStart and UserPromptSubmit hooks fire before any model call;
# 4. passes when the session transcript under $HOME/.claude/projects/ contains the injected
#    SessionStart context ("Project memory for packwise"), and no hook error was logged.
#
# Needs node/npm and network access to the npm registry. Exit 0 = pass.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${1:-${PYTHON:-python3}}"
VERSION="${CLAUDE_CODE_VERSION:-latest}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/ck-e2e-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
export HOME="$WORK/home"
mkdir -p "$HOME"

echo "== installing @anthropic-ai/claude-code@$VERSION into $WORK/npm"
npm install --silent --no-audit --no-fund --prefix "$WORK/npm" "@anthropic-ai/claude-code@$VERSION" >/dev/null
CLAUDE="$WORK/npm/node_modules/.bin/claude"
"$CLAUDE" --version

echo "== preparing the project"
PROJECT="$WORK/packwise"
cp -r "$REPO/examples/demo-project" "$PROJECT"
"$PY" -m context_keeper install --project "$PROJECT" --home "$HOME"

echo "== running one session (model endpoint unreachable on purpose)"
set +e
(cd "$PROJECT" && env -u CONTEXT_KEEPER_PROJECT \
    ANTHROPIC_API_KEY="sk-ant-e2e-dummy" ANTHROPIC_BASE_URL="http://127.0.0.1:9" \
    CLAUDE_CODE_MAX_RETRIES=0 API_TIMEOUT_MS=5000 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
    timeout 120 "$CLAUDE" -p "How do carrier API retries work in this project?" \
      --output-format json --max-turns 1 </dev/null >"$WORK/out.json" 2>"$WORK/err.txt")
STATUS=$?
set -e
echo "claude exited $STATUS (a failure is expected: no model endpoint)"

TRANSCRIPTS="$HOME/.claude/projects"
echo "== transcripts:"; find "$TRANSCRIPTS" -name '*.jsonl' 2>/dev/null | sed 's/^/   /' || true
if grep -rqs "Project memory for packwise" "$TRANSCRIPTS"; then
    echo "PASS: the SessionStart context is in the session transcript"
    grep -rhos 'project-memory source=[^>]*>[^"]\{0,120\}' "$TRANSCRIPTS" | head -3 | sed 's/^/   /'
else
    echo "FAIL: no SessionStart context in the transcript"
    echo "-- stdout:"; head -c 2000 "$WORK/out.json"; echo; echo "-- stderr:"; tail -c 2000 "$WORK/err.txt"
    exit 1
fi
if grep -rqs "matches this prompt" "$TRANSCRIPTS"; then
    echo "also: the UserPromptSubmit recall is in the transcript"
else
    echo "note: no UserPromptSubmit recall in the transcript"
fi
if [ -s "$PROJECT/.context/hook.log" ]; then
    echo "FAIL: hook errors were logged:"; cat "$PROJECT/.context/hook.log"; exit 1
fi
echo "no hook errors logged"
