#!/usr/bin/env bash
# Arena against promptfoo on the same scripted server: six models answering
# 200 tokens each at 200 tokens/s, one prompt run RUNS times
# (`arena series run --runs RUNS` against `promptfoo eval --repeat RUNS`).
# For each tool, as a whole process tree (rusage of the reaped children):
# user and system CPU, wall time, peak RSS, bytes written to storage
# (ru_oublock × 512: what the kernel accounted as written, database, WAL
# and result files alike), and the bytes it keeps at the end (the size of
# its data folder and results, counted both as file lengths and as blocks).
#
# Usage: scripts/bench-vs-promptfoo.sh [RUNS] [RATE]   (default 20 200)
#   RATE 0: each answer arrives at once (unpaced).
#   ARENA_PROMPTFOO: a promptfoo command to use; else promptfoo 0.121 is
#   installed with npm into ~/.cache/arena-bench/promptfoo once.
#
# Arena runs with a memory-backed XDG_RUNTIME_DIR, as in a desktop session.
set -euo pipefail

RUNS=${1:-20}
RATE=${2:-200}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

cargo build --release -q -p arena-cli -p arena-testserver
ARENA="$ROOT/target/release/arena"
SERVER="$ROOT/target/release/arena-testserver"

PROMPTFOO=${ARENA_PROMPTFOO:-}
if [[ -z "$PROMPTFOO" ]]; then
  PF_DIR="$HOME/.cache/arena-bench/promptfoo"
  if [[ ! -x "$PF_DIR/node_modules/.bin/promptfoo" ]]; then
    mkdir -p "$PF_DIR"
    (cd "$PF_DIR" && npm init -y >/dev/null && npm install --silent promptfoo@0.121 >/dev/null)
  fi
  PROMPTFOO="$PF_DIR/node_modules/.bin/promptfoo"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/arena-vs-pf.XXXXXX")
RUNTIME=$(mktemp -d /dev/shm/arena-runtime.XXXXXX)
SERVER_PID=
cleanup() {
  [[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" 2>/dev/null || true
  rm -rf "$WORK" "$RUNTIME"
}
trap cleanup EXIT

MODELS=()
for i in 1 2 3 4 5 6; do MODELS+=(--model "m$i:200:$RATE"); done
"$SERVER" "${MODELS[@]}" >"$WORK/server.out" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
  grep -q "listening on" "$WORK/server.out" 2>/dev/null && break
  sleep 0.05
done
BASE=$(sed -n 's/^listening on //p' "$WORK/server.out")
[[ -n "$BASE" ]] || { echo "the scripted server did not start" >&2; exit 1; }

# --- Arena -----------------------------------------------------------------
mkdir -p "$WORK/arena/project" "$WORK/arena/data"
cat >"$WORK/arena/arena.toml" <<EOF
[[provider]]
name = "cloud"
kind = "openai"
base_url = "$BASE"
lane = "cloud"
EOF
ARENA_ARGS=(series run --type qa --prompt "Say hi." --runs "$RUNS" --no-analysis
  --project "$WORK/arena/project")
PERSONAS=(debugger explainer architect "code reviewer" debugger explainer)
for i in 1 2 3 4 5 6; do ARENA_ARGS+=(-c "${PERSONAS[$((i - 1))]}@m$i"); done

# --- promptfoo -------------------------------------------------------------
mkdir -p "$WORK/pf/config"
{
  echo "prompts:"
  echo "  - 'Say hi.'"
  echo "providers:"
  for i in 1 2 3 4 5 6; do
    echo "  - id: openai:chat:m$i"
    echo "    config:"
    echo "      apiBaseUrl: $BASE"
    echo "      apiKey: none"
  done
  echo "tests:"
  echo "  - vars: {}"
} >"$WORK/pf/promptfooconfig.yaml"

# Runs "$@" with the environment set by the caller; prints
# "user sys wall rss_kib written_bytes" of the whole process tree.
measure() {
  python3 - "$@" <<'PY'
import os, resource, sys, time, subprocess
t = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=open(os.environ["BENCH_LOG"], "w"))
p.wait()
wall = time.monotonic() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
if p.returncode != 0:
    sys.exit(f"{sys.argv[1]} failed ({p.returncode}); see {os.environ['BENCH_LOG']}")
print(f"{r.ru_utime:.2f} {r.ru_stime:.2f} {wall:.2f} {r.ru_maxrss} {r.ru_oublock * 512}")
PY
}

# Bytes under a folder: file lengths, and allocated blocks.
kept() {
  local len blocks
  len=$(find "$@" -type f -printf '%s\n' 2>/dev/null | awk '{s+=$1} END {print s+0}')
  blocks=$(du -sB1 "$@" 2>/dev/null | awk '{s+=$1} END {print s+0}')
  echo "$len $blocks"
}

sync
read -r A_USER A_SYS A_WALL A_RSS A_WROTE < <(
  BENCH_LOG="$WORK/arena.log" ARENA_CONFIG="$WORK/arena/arena.toml" \
    ARENA_DATA_DIR="$WORK/arena/data" XDG_RUNTIME_DIR="$RUNTIME" \
    measure "$ARENA" "${ARENA_ARGS[@]}")
read -r A_LEN A_BLOCKS < <(kept "$WORK/arena/data" "$WORK/arena/project/Arena")

sync
read -r P_USER P_SYS P_WALL P_RSS P_WROTE < <(
  cd "$WORK/pf" && BENCH_LOG="$WORK/pf.log" PROMPTFOO_CONFIG_DIR="$WORK/pf/config" \
    PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 OPENAI_API_KEY=none \
    measure "$PROMPTFOO" eval --no-cache --repeat "$RUNS" --max-concurrency 6 --no-progress-bar --no-table \
    -c "$WORK/pf/promptfooconfig.yaml")
read -r P_LEN P_BLOCKS < <(kept "$WORK/pf/config")

python3 - "$RUNS" "$RATE" "$A_USER" "$A_SYS" "$A_WALL" "$A_RSS" "$A_WROTE" "$A_LEN" "$A_BLOCKS" \
  "$P_USER" "$P_SYS" "$P_WALL" "$P_RSS" "$P_WROTE" "$P_LEN" "$P_BLOCKS" <<'PY'
import sys
runs, rate = int(sys.argv[1]), sys.argv[2]
a = [float(x) for x in sys.argv[3:10]]
p = [float(x) for x in sys.argv[10:17]]
names = ["user CPU s", "system CPU s", "wall s", "peak RSS MiB", "written KiB/battle",
         "kept KiB/battle (lengths)", "kept KiB/battle (blocks)"]
def fig(v, i):
    if i == 3: return v / 1024
    if i >= 4: return v / 1024 / runs
    return v
print(f"{runs} runs × 6 models × 200 tokens at {rate} tok/s")
print(f"| figure | Arena | promptfoo | Arena ÷ promptfoo |")
print(f"|---|---|---|---|")
for i, n in enumerate(names):
    x, y = fig(a[i], i), fig(p[i], i)
    print(f"| {n} | {x:.2f} | {y:.2f} | {x / y if y else float('nan'):.2f} |")
print(f"| total CPU s | {a[0]+a[1]:.2f} | {p[0]+p[1]:.2f} | {(a[0]+a[1])/(p[0]+p[1]):.2f} |")
print(f"Arena written ÷ kept: {a[4]/a[5]:.2f} (lengths), {a[4]/a[6]:.2f} (blocks); "
      f"promptfoo: {p[4]/p[5]:.2f}, {p[4]/p[6]:.2f}")
PY
