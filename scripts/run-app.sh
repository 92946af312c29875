#!/usr/bin/env bash
# THE run command of the project:  ./scripts/run-app.sh [APP-ARGS...]
#
# Sets the machine up (scripts/setup.sh), builds the UI (npm ci only when
# ui/node_modules is older than ui/package-lock.json), then builds and starts
# the desktop app: cargo run --release -p arena-app.
#
# Without a display (no DISPLAY / WAYLAND_DISPLAY), run it under Xvfb:
#   xvfb-run -a ./scripts/run-app.sh
#
# Environment:
#   ARENA_RUN_SKIP_SETUP=1   don't run scripts/setup.sh
#   ARENA_RUN_SKIP_UI=1      don't rebuild ui/dist
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

if [[ -d "$HOME/.cargo/bin" && ":$PATH:" != *":$HOME/.cargo/bin:"* ]]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi

banner() {
  printf '\n========== %s ==========\n' "$*"
}

if [[ "${ARENA_RUN_SKIP_SETUP:-0}" != 1 ]]; then
  banner "setup"
  scripts/setup.sh
fi

if [[ "${ARENA_RUN_SKIP_UI:-0}" != 1 ]]; then
  banner "UI build"
  (
    cd ui
    # npm rewrites node_modules/.package-lock.json on every install.
    stamp=node_modules/.package-lock.json
    if [[ ! -f "$stamp" || package-lock.json -nt "$stamp" || package.json -nt "$stamp" ]]; then
      npm ci --no-audit --no-fund
    else
      echo "ui/node_modules is up to date with package-lock.json: skipping npm ci"
    fi
    npm run build
  )
fi

if [[ -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" ]]; then
  echo "run-app: WARNING: no DISPLAY or WAYLAND_DISPLAY; the window needs a display (try: xvfb-run -a $0)" >&2
fi

banner "cargo run --release -p arena-app"
exec cargo run --release -p arena-app -- "$@"
