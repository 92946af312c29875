#!/usr/bin/env bash
# THE test command of the project:  ./scripts/test.sh [TEST-RUNNER-ARGS...]
#
# Steps, in order (each announced with a banner, timed in a summary at the end):
#   setup   scripts/setup.sh (system packages, node, cargo)
#   peers   scripts/peers.sh: the real llama.cpp server + a small gguf model in
#           .peers/; sources .peers/env and sets ARENA_REQUIRE_PEERS=1, so the
#           tests that need the real server fail instead of skipping. Runs in
#           the background (mostly downloads) during ui, fmt and clippy; the
#           tests step waits for it and shows its output then
#   ui      cd ui && npm ci && npm run check && npm run lint && npm test (vitest:
#           unit tests of the UI's pure logic) && npm run build
#   fmt     cargo fmt --all -- --check
#   clippy  cargo clippy --workspace --all-targets --locked -- -D warnings
#   tests   cargo test --workspace --doc --locked, then
#           cargo nextest run --workspace --locked (when cargo-nextest is
#           installed; else cargo test --workspace --locked)
#   team    the engine's tests (arena-core) once more, on PostgreSQL: one
#           throwaway cluster for the run (`arena-testdb serve`), a database
#           per test (ARENA_TEST_POSTGRES); team mode's store under the engine
#   e2e     WebDriver end-to-end tests (crates/arena-e2e): cargo build the app
#           and the CLI, then the e2e suite drives the real app window through
#           tauri-driver + WebKitWebDriver under Xvfb (xvfb-run), one app at a
#           time, with ARENA_REQUIRE_E2E=1 (a missing display or driver fails
#           instead of skipping). Screenshots: target/e2e-screenshots/*.png,
#           logs: target/e2e-logs/. Installs tauri-driver when missing.
#           (In the tests step the e2e tests skip: no display there.)
#   packages scripts/test-packages.sh: builds the .deb packages, lints them,
#           installs them, runs a battle with the installed CLI and opens the
#           installed app, upgrades them over themselves, purges them (as
#           root; without root the step says so and is skipped)
#
# Quick local runs: skip steps with environment variables (CI runs everything;
# .ci/run clears these):
#   ARENA_TEST_SKIP_SETUP=1
#   ARENA_TEST_SKIP_PEERS=1   also leaves ARENA_REQUIRE_PEERS unset, so tests
#                             that need the real llama server skip (an existing
#                             .peers/env is still sourced)
#   ARENA_TEST_SKIP_UI=1      the app embeds ui/dist: keep one from an earlier build
#   ARENA_TEST_SKIP_FMT=1
#   ARENA_TEST_SKIP_CLIPPY=1
#   ARENA_TEST_SKIP_TESTS=1
#   ARENA_TEST_SKIP_TEAM=1
#   ARENA_TEST_SKIP_E2E=1
#   ARENA_TEST_SKIP_PACKAGES=1
#   ARENA_TEST_QUICK=1        shorthand for SKIP_SETUP, SKIP_UI, SKIP_CLIPPY and
#                             SKIP_PACKAGES
#   ARENA_TEST_NO_NEXTEST=1   use plain cargo test even when nextest is installed
# Arguments are passed to the test runner (nextest or cargo test), e.g.
#   ARENA_TEST_QUICK=1 ./scripts/test.sh real_llama     (a test-name filter)
# (doc tests are skipped when arguments are given).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

if [[ -d "$HOME/.cargo/bin" && ":$PATH:" != *":$HOME/.cargo/bin:"* ]]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi

if [[ "${ARENA_TEST_QUICK:-0}" == 1 ]]; then
  : "${ARENA_TEST_SKIP_SETUP:=1}" "${ARENA_TEST_SKIP_UI:=1}" "${ARENA_TEST_SKIP_CLIPPY:=1}" \
    "${ARENA_TEST_SKIP_PACKAGES:=1}"
fi

# --- step bookkeeping -------------------------------------------------------------
summary=()
current_step=""
current_start=0
script_start=$SECONDS

banner() {
  printf '\n========== %s ==========\n' "$*"
}

print_summary() {
  local rc=$?
  if [[ -n "${peers_pid:-}" ]]; then
    # The run ends before the peers were waited for: end their installation.
    kill -- "-$peers_pid" 2>/dev/null || true
    summary+=("$(printf '%-8s ended unfinished (the run stopped first; log: %s)' peers "$peers_log")")
  fi
  if [[ -n "$current_step" ]]; then
    summary+=("$(printf '%-8s FAILED  %4d s' "$current_step" $((SECONDS - current_start)))")
  fi
  banner "test.sh summary"
  local line
  for line in "${summary[@]}"; do
    printf '  %s\n' "$line"
  done
  if [[ $rc -eq 0 ]]; then
    printf 'test.sh: all steps passed in %d s\n' $((SECONDS - script_start))
  else
    printf 'test.sh: FAILED (exit %d) in step "%s" after %d s\n' "$rc" "${current_step:-?}" $((SECONDS - script_start))
  fi
}
trap print_summary EXIT

# run_step KEY TITLE FUNCTION: run FUNCTION in this shell (so it can export),
# unless ARENA_TEST_SKIP_<KEY>=1.
run_step() {
  local key=$1 title=$2 fn=$3
  local skip_var="ARENA_TEST_SKIP_${key^^}"
  if [[ "${!skip_var:-0}" == 1 ]]; then
    banner "$key: SKIPPED ($skip_var=1) - $title"
    summary+=("$(printf '%-8s skipped' "$key")")
    return 0
  fi
  banner "$key: $title"
  current_step=$key
  current_start=$SECONDS
  step_deferred=0
  "$fn"
  if [[ $step_deferred == 1 ]]; then
    # Still running in the background: its line comes when it is waited for.
    step_deferred=0
  else
    summary+=("$(printf '%-8s ok      %4d s' "$key" $((SECONDS - current_start)))")
  fi
  current_step=""
}

# --- the steps ------------------------------------------------------------------------
step_setup() {
  "$ROOT/scripts/setup.sh"
  # setup.sh installed bubblewrap: the jail tests must run, not skip; and
  # PostgreSQL: the tests that start a throwaway cluster must too.
  export ARENA_REQUIRE_JAIL=1
  export ARENA_REQUIRE_POSTGRES=1
}

# The peers are downloads and unpacking, mostly (the CLI agents, aider's
# packages, the model; the llama server is built only where no earlier build
# or the prebuilt one runs): they install in the background while the ui,
# fmt and clippy steps use the CPU, and the tests step waits for them
# (finish_peers). Their output is shown when they are done.
peers_pid=""
peers_log=""
peers_start=0
step_peers() {
  peers_log=$(mktemp "${TMPDIR:-/tmp}/arena-test-peers.XXXXXX")
  # A session of their own, so that a failed run can end them as a group.
  setsid bash -c '
    set -e
    "$1/scripts/peers.sh"
    # The real projects the environment tests run battles on (.peers/projects).
    "$1/scripts/projects.sh"
  ' _ "$ROOT" </dev/null >"$peers_log" 2>&1 &
  peers_pid=$!
  peers_start=$SECONDS
  echo "installing in the background (log: $peers_log); the tests step waits for them"
  step_deferred=1
}

finish_peers() {
  [[ -n "$peers_pid" ]] || return 0
  banner "peers: waiting for the installation started before the ui step"
  local pid=$peers_pid rc=0 waited=$SECONDS
  wait "$pid" || rc=$?
  peers_pid=""
  cat "$peers_log"
  rm -f "$peers_log"
  if [[ $rc -ne 0 ]]; then
    current_step=peers
    current_start=$peers_start
    echo "test.sh: installing the peers failed (exit $rc)" >&2
    return "$rc"
  fi
  # shellcheck source=/dev/null
  source "$ROOT/.peers/env"
  export ARENA_LLAMA_SERVER ARENA_TEST_GGUF ARENA_PEERS_BIN
  export ARENA_REQUIRE_PEERS=1
  echo "ARENA_LLAMA_SERVER=$ARENA_LLAMA_SERVER"
  echo "ARENA_TEST_GGUF=$ARENA_TEST_GGUF"
  echo "ARENA_PEERS_BIN=$ARENA_PEERS_BIN"
  echo "ARENA_REQUIRE_PEERS=1"
  summary+=("$(printf '%-8s ok      %4d s  (in the background; waited %d s)' peers $((SECONDS - peers_start)) $((SECONDS - waited)))")
}

step_ui() {
  (
    cd "$ROOT/ui"
    npm ci --no-audit --no-fund
    npm run check
    npm run lint
    npm test
    npm run build
  )
}

step_fmt() {
  cargo fmt --all -- --check
}

step_clippy() {
  cargo clippy --workspace --all-targets --locked -- -D warnings
}

step_tests() {
  if [[ "${ARENA_TEST_NO_NEXTEST:-0}" != 1 ]] && cargo nextest --version >/dev/null 2>&1; then
    # Doc tests first (nextest can't run them), so that nextest's summary is
    # the run's closing test summary.
    if [[ ${#test_args[@]} -eq 0 ]]; then
      echo "+ cargo test --workspace --doc --locked"
      cargo test --workspace --doc --locked
    fi
    echo "+ cargo nextest run --workspace --locked --no-fail-fast ${test_args[*]}"
    cargo nextest run --workspace --locked --no-fail-fast "${test_args[@]}"
  else
    echo "+ cargo test --workspace --locked --no-fail-fast ${test_args[*]}"
    cargo test --workspace --locked --no-fail-fast "${test_args[@]}"
  fi
}

step_team() {
  # The tests reuse the tests step's build (the same --workspace selection).
  cargo build --locked -p arena-testdb --bin arena-testdb
  local dir rc=0 hold line=""
  dir=$(mktemp -d)
  mkfifo "$dir/in"
  "${CARGO_TARGET_DIR:-$ROOT/target}/debug/arena-testdb" serve <"$dir/in" >"$dir/out" &
  local server=$!
  # The cluster lives until its standard input closes.
  exec {hold}>"$dir/in"
  for _ in $(seq 300); do
    line=$(head -n1 "$dir/out" 2>/dev/null || true)
    [[ -n "$line" ]] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  if [[ "$line" != ARENA_TEST_POSTGRES=* ]]; then
    echo "test.sh: the shared test PostgreSQL did not start" >&2
    exec {hold}>&-
    return 1
  fi
  export ARENA_TEST_POSTGRES="${line#ARENA_TEST_POSTGRES=}"
  if [[ "${ARENA_TEST_NO_NEXTEST:-0}" != 1 ]] && cargo nextest --version >/dev/null 2>&1; then
    echo "+ ARENA_TEST_POSTGRES=… cargo nextest run --workspace --locked --no-fail-fast -E 'package(arena-core)'"
    cargo nextest run --workspace --locked --no-fail-fast -E 'package(arena-core)' || rc=$?
  else
    echo "+ ARENA_TEST_POSTGRES=… cargo test --locked -p arena-core --no-fail-fast"
    cargo test --locked -p arena-core --no-fail-fast || rc=$?
  fi
  unset ARENA_TEST_POSTGRES
  exec {hold}>&-
  wait "$server" || true
  rm -rf "$dir"
  return "$rc"
}

step_e2e() {
  if ! command -v tauri-driver >/dev/null 2>&1; then
    echo "+ cargo install tauri-driver --locked   (not found on PATH)"
    cargo install tauri-driver --locked
  fi
  if ! command -v xvfb-run >/dev/null 2>&1; then
    echo "test.sh: xvfb-run not found: install xvfb and xauth (scripts/setup.sh does)" >&2
    return 1
  fi
  # Same package selection (--workspace) as the tests step, so cargo reuses
  # its build instead of compiling the dependencies again with other features.
  local tests=() file
  for file in "$ROOT"/crates/arena-e2e/tests/*.rs; do
    [[ -f "$file" ]] && tests+=(--test "$(basename "$file" .rs)")
  done
  if [[ ${#tests[@]} -eq 0 ]]; then
    echo "test.sh: no e2e tests in crates/arena-e2e/tests/" >&2
    return 1
  fi
  # The app binary the harness launches (target/debug/arena-app) and the CLI.
  echo "+ cargo build --workspace --locked --bins ${tests[*]}"
  cargo build --workspace --locked --bins "${tests[@]}"
  echo "+ xvfb-run -a -s \"-screen 0 1280x1024x24\" env ARENA_REQUIRE_E2E=1 cargo test --workspace --locked ${tests[*]} -- --test-threads=1"
  xvfb-run -a -s "-screen 0 1280x1024x24" env ARENA_REQUIRE_E2E=1 \
    cargo test --workspace --locked "${tests[@]}" -- --test-threads=1
  local shots="${CARGO_TARGET_DIR:-$ROOT/target}/e2e-screenshots"
  if compgen -G "$shots/*.png" >/dev/null; then
    echo "e2e screenshots in $shots:"
    ls -1 "$shots"
  fi
}

step_packages() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "test.sh: the packages step installs packages on this machine: run as root for it (skipped)"
    return 0
  fi
  "$ROOT/scripts/test-packages.sh"
}

test_args=("$@")

run_step setup "machine set-up (scripts/setup.sh)" step_setup

if [[ "${ARENA_TEST_SKIP_PEERS:-0}" == 1 && -f "$ROOT/.peers/env" ]]; then
  # Not required, but let the tests use peers installed earlier.
  # shellcheck source=/dev/null
  source "$ROOT/.peers/env"
  export ARENA_LLAMA_SERVER ARENA_TEST_GGUF ARENA_PEERS_BIN
fi
run_step peers "real test peers (scripts/peers.sh)" step_peers

run_step ui "UI: npm ci, check, lint, unit tests, build" step_ui
if [[ ! -f "$ROOT/ui/dist/index.html" ]]; then
  echo "test.sh: WARNING: ui/dist/index.html is missing; the app crate embeds ui/dist and may fail to build" >&2
fi

run_step fmt "cargo fmt --check" step_fmt
run_step clippy "cargo clippy -D warnings" step_clippy
finish_peers
run_step tests "cargo tests" step_tests
run_step team "the engine's tests again, on PostgreSQL (team mode)" step_team
run_step e2e "end-to-end: the app window through WebDriver, under Xvfb" step_e2e
run_step packages "the .deb packages: build, lint, install, use, upgrade, remove" step_packages
