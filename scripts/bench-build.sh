#!/usr/bin/env bash
# Build times before and after a change of the crate layout, on this
# machine, in one run: cold release builds of the CLI and the app, and
# incremental rebuilds after a one-line change in the pure decisions and in
# the engine shell. Each revision builds in its own worktree and target
# folder under $ARENA_BENCH_DIR (default /tmp/arena-bench-build).
#
#   scripts/bench-build.sh BEFORE_REV [AFTER_REV]
#
# ARENA_BENCH_SKIP_APP=1 leaves out the cold release build of the app (the
# longest step; the other figures do not need it).
#
# Prints one Markdown table row per measurement (seconds).
set -euo pipefail

before=${1:?usage: bench-build.sh BEFORE_REV [AFTER_REV]}
after=${2:-HEAD}
top=$(git rev-parse --show-toplevel)
dir=${ARENA_BENCH_DIR:-/tmp/arena-bench-build}
mkdir -p "$dir"

seconds() { # command… → wall seconds
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s%N)
  echo $(((end - start + 500000000) / 1000000000))
}

checkout() { # name rev
  local wt="$dir/$1"
  git -C "$top" worktree remove --force "$wt" 2>/dev/null || true
  git -C "$top" worktree add --detach "$wt" "$2" >/dev/null
  # The app embeds the built UI; the same one serves both revisions.
  mkdir -p "$wt/ui" && cp -r "$top/ui/dist" "$wt/ui/dist"
  echo "$wt"
}

touch_line() { # file
  printf '\n#[doc(hidden)]\npub const BENCH_TOUCH_%s: u32 = 1;\n' "$RANDOM$RANDOM" >>"$1"
}

measure() { # name rev decisions-file engine-file pure-test-args…
  local name=$1 rev=$2 decisions=$3 engine=$4
  shift 4
  local wt target
  wt=$(checkout "$name" "$rev")
  target="$dir/target-$name"
  rm -rf "$target"
  export CARGO_TARGET_DIR=$target
  cd "$wt"
  cargo fetch --locked >/dev/null 2>&1
  local cli app dec eng pure
  cli=$(seconds cargo build --release --locked -p arena-cli)
  app="—"
  if [[ "${ARENA_BENCH_SKIP_APP:-0}" != 1 ]]; then
    app=$(seconds cargo build --release --locked -p arena-app)
  fi
  cargo test --locked --no-run "$@" >/dev/null 2>&1
  touch_line "$decisions"
  dec=$(seconds cargo build --release --locked -p arena-cli)
  touch_line "$engine"
  eng=$(seconds cargo build --release --locked -p arena-cli)
  touch_line "$decisions"
  pure=$(seconds cargo test --locked "$@")
  git checkout -- . >/dev/null
  cd "$top"
  git worktree remove --force "$wt"
  echo "| $name ($(git -C "$top" rev-parse --short "$rev")) | $cli | $app | $dec | $eng | $pure |"
}

echo "| layout | cold release CLI | cold release app | CLI after 1 line in decisions | CLI after 1 line in the engine shell | pure tests after 1 line in decisions |"
echo "|---|---|---|---|---|---|"
# Both revisions have the pure decisions in the domain crate.
measure before "$before" crates/arena-domain/src/decisions.rs crates/arena-core/src/engine/drive.rs \
  -p arena-domain
measure after "$after" crates/arena-domain/src/decisions.rs crates/arena-core/src/engine/drive.rs \
  -p arena-domain
