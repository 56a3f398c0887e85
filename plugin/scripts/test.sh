#!/usr/bin/env bash
# Single entry point for the plugin's tests (called by the Makefile).
#
#   bash plugin/scripts/test.sh            # npm ci, tsc, unit tests (+ e2e if MUMA_E2E_URL or MUMA_E2E=1)
#   bash plugin/scripts/test.sh --e2e      # also the end-to-end test (fake MUMA unless MUMA_E2E_URL is set)
#   bash plugin/scripts/test.sh --e2e-only # build + e2e only
#   bash plugin/scripts/test.sh --no-e2e   # never the e2e test
#
# Env:
#   MUMA_E2E_URL, MUMA_E2E_TOKEN  real MUMA service for the e2e test (implies --e2e)
#   MUMA_E2E=1                    same as --e2e
#   MUMA_E2E_DIR                  where Node 24 + openclaw are cached (default ~/.cache/muma-openclaw-e2e)
#   MUMA_E2E_TIMEOUT_MS, MUMA_E2E_DRAIN_S, MUMA_E2E_KEEP=1, MUMA_E2E_VERBOSE=1  see test/e2e/openclaw.e2e.test.mjs
set -euo pipefail

PLUGIN_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$PLUGIN_DIR"

run_unit=1
run_e2e=0
[ -n "${MUMA_E2E_URL:-}" ] && run_e2e=1
[ "${MUMA_E2E:-}" = "1" ] && run_e2e=1
for arg in "$@"; do
  case "$arg" in
    --e2e) run_e2e=1 ;;
    --e2e-only) run_e2e=1; run_unit=0 ;;
    --no-e2e) run_e2e=0 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

step() { echo "[plugin] $*" >&2; }
t0=$(date +%s)

step "npm ci"
if [ -f package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
else
  npm install --no-audit --no-fund --loglevel=error
fi

step "tsc"
rm -rf dist
./node_modules/.bin/tsc -p tsconfig.json

if [ "$run_unit" = 1 ]; then
  step "unit tests ($(node --version))"
  # The capture spool goes to OpenClaw's state dir: a fresh one, never the user's.
  OPENCLAW_STATE_DIR="$(mktemp -d)" node --test test/unit/*.test.mjs
fi

if [ "$run_e2e" = 1 ]; then
  step "installing Node 24 + openclaw (cached)"
  node_bin="$(bash scripts/install-e2e.sh)"
  if [ -n "${MUMA_E2E_URL:-}" ]; then
    step "e2e against the real MUMA service at $MUMA_E2E_URL"
  else
    step "e2e against the FAKE MUMA server (set MUMA_E2E_URL/MUMA_E2E_TOKEN for the real stack)"
  fi
  PATH="$node_bin:$PATH" "$node_bin/node" --test --test-timeout=600000 test/e2e/openclaw.e2e.test.mjs
fi

step "done in $(( $(date +%s) - t0 )) s"
