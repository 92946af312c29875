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
#   ARENA_BENCH_ROUNDS: rounds of both tools in turn (default 1); the
#   figures are medians, and each round's ratios are printed too.
#   RATE 0: each answer arrives at once (unpaced).
#   ARENA_PROMPTFOO: a promptfoo command to use; else promptfoo 0.121 is
#   installed with npm into ~/.cache/arena-bench/promptfoo once.
#
# Arena runs with a memory-backed XDG_RUNTIME_DIR, as in a desktop session.
set -euo pipefail

RUNS=${1:-20}
RATE=${2:-200}
# Rounds of both tools, in turn; the figures are their medians (this
# machine's writes and CPU vary from run to run).
ROUNDS=${ARENA_BENCH_ROUNDS:-1}
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

# One round: Arena then promptfoo, each on fresh folders; appends one line
# of figures per tool to $WORK/rounds.
round() {
  rm -rf "$WORK/arena/data" "$WORK/arena/project" "$WORK/pf/config"
  mkdir -p "$WORK/arena/project" "$WORK/arena/data" "$WORK/pf/config"
  sync
  local a p
  a=$(BENCH_LOG="$WORK/arena.log" ARENA_CONFIG="$WORK/arena/arena.toml" \
    ARENA_DATA_DIR="$WORK/arena/data" XDG_RUNTIME_DIR="$RUNTIME" \
    measure "$ARENA" "${ARENA_ARGS[@]}")
  echo "arena $a $(kept "$WORK/arena/data" "$WORK/arena/project/Arena")" >>"$WORK/rounds"
  sync
  p=$(cd "$WORK/pf" && BENCH_LOG="$WORK/pf.log" PROMPTFOO_CONFIG_DIR="$WORK/pf/config" \
    PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 OPENAI_API_KEY=none \
    measure "$PROMPTFOO" eval --no-cache --repeat "$RUNS" --max-concurrency 6 --no-progress-bar --no-table \
    -c "$WORK/pf/promptfooconfig.yaml")
  echo "promptfoo $p $(kept "$WORK/pf/config")" >>"$WORK/rounds"
}

for _ in $(seq "$ROUNDS"); do round; done

python3 - "$RUNS" "$RATE" "$WORK/rounds" <<'PY'
import statistics, sys
runs, rate = int(sys.argv[1]), sys.argv[2]
rounds = {"arena": [], "promptfoo": []}
for line in open(sys.argv[3]):
    tool, *figs = line.split()
    rounds[tool].append([float(x) for x in figs])
names = ["user CPU s", "system CPU s", "wall s", "peak RSS MiB", "written KiB/battle",
         "kept KiB/battle (lengths)", "kept KiB/battle (blocks)"]
def fig(v, i):
    if i == 3: return v / 1024
    if i >= 4: return v / 1024 / runs
    return v
def med(tool, f):
    return statistics.median(f(r) for r in rounds[tool])
n = len(rounds["arena"])
print(f"{runs} runs × 6 models × 200 tokens at {rate} tok/s; "
      f"{n} round{'s' if n > 1 else ''} (medians)")
print("| figure | Arena | promptfoo | Arena ÷ promptfoo |")
print("|---|---|---|---|")
for i, name in enumerate(names):
    x, y = med("arena", lambda r: fig(r[i], i)), med("promptfoo", lambda r: fig(r[i], i))
    print(f"| {name} | {x:.2f} | {y:.2f} | {x / y if y else float('nan'):.2f} |")
a_cpu, p_cpu = med("arena", lambda r: r[0] + r[1]), med("promptfoo", lambda r: r[0] + r[1])
print(f"| total CPU s | {a_cpu:.2f} | {p_cpu:.2f} | {a_cpu / p_cpu:.2f} |")
for tool in rounds:
    by_len = [r[4] / r[5] for r in rounds[tool]]
    by_blocks = [r[4] / r[6] for r in rounds[tool]]
    print(f"{tool} written ÷ kept, each round: lengths "
          + ", ".join(f"{x:.2f}" for x in by_len) + "; blocks "
          + ", ".join(f"{x:.2f}" for x in by_blocks))
if n > 1:
    ratios = [(a[0] + a[1]) / (p[0] + p[1]) for a, p in zip(rounds["arena"], rounds["promptfoo"])]
    print("total CPU Arena ÷ promptfoo, each round: " + ", ".join(f"{x:.2f}" for x in ratios))
PY
