#!/usr/bin/env bash
# Installs Arena's packages as a user would, and checks what they promise
# (run by scripts/test.sh as its `packages` step; as root: it installs and
# removes packages on this machine, and removes them again when it ends):
#   1. builds both .deb (scripts/package.sh, from the dev build the tests
#      made) and checks them with lintian: no error;
#   2. installs them with apt-get (so their Depends are resolved), checks
#      `arena --version`, runs a Q&A battle with the installed CLI against
#      the scripted server, and starts the installed app under Xvfb until
#      its window shows;
#   3. builds the packages again from this commit with the patch version
#      bumped (built into the binaries), installs them over the first, and
#      finds the earlier battle in `arena battle list` (the database
#      remembers the new version);
#   4. purges both packages: the data directory and the config stay.
# A user of its own: HOME is a temporary folder, so the default data and
# config folders are used, and nothing of the machine's user is touched.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
if [[ -d "$HOME/.cargo/bin" && ":$PATH:" != *":$HOME/.cargo/bin:"* ]]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi

say() { printf 'test-packages: %s\n' "$*"; }
fail() {
  printf 'test-packages: FAILED: %s\n' "$*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || fail "run as root: this installs and removes packages"
export DEBIAN_FRONTEND=noninteractive
# The toolchain stays where it is when HOME becomes the test user's.
ORIG_HOME=$HOME
export CARGO_HOME=${CARGO_HOME:-$HOME/.cargo} RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}

V1=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
V2=$(awk -F. '{ printf "%d.%d.%d", $1, $2, $3 + 1 }' <<<"$V1")
COMMIT=$(git rev-parse --short=12 HEAD)
ARCH=$(dpkg --print-architecture)
T=$(mktemp -d /tmp/arena-packages.XXXXXX)
SERVER_PID=
cleanup() {
  [[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" 2>/dev/null || true
  apt-get purge -y -q arena arena-cli >/dev/null 2>&1 || true
  rm -rf "$T"
}
trap cleanup EXIT
# A machine that had them installed starts clean.
apt-get purge -y -q arena arena-cli >/dev/null 2>&1 || true

# --- 1. build and lint --------------------------------------------------------
export ARENA_PACKAGE_SKIP_SETUP=1
# The dev profile: the packages hold the binaries the tests and e2e steps
# built (scripts/package.sh compiles nothing for this version when they ran
# before), bundled as the shipping profile (dist) bundles them. Two cold
# optimised builds of the app on a 2-core CI machine took longer than every
# other step together; what this step proves is the packaging, not the
# optimiser. The upgrade's build compiles the workspace's own crates again
# (the version is built into them), not their dependencies.
export ARENA_PACKAGE_PROFILE=dev
# The same format (xz), its fastest preset: dpkg-deb's default spent two
# minutes per version on the dev build's binaries.
export ARENA_PACKAGE_XZ_LEVEL=0
scripts/package.sh
mkdir -p "$T/v1" "$T/v2"
cp dist/arena_"$V1"_"$ARCH".deb dist/arena-cli_"$V1"_"$ARCH".deb "$T/v1/"
say "lintian"
lintian --fail-on error \
  "$T"/v1/arena_"$V1"_"$ARCH".deb "$T"/v1/arena-cli_"$V1"_"$ARCH".deb ||
  fail "lintian reports errors (above)"

# --- 2. install and use --------------------------------------------------------
say "installing $V1"
apt-get install -y -q "$T"/v1/arena-cli_"$V1"_"$ARCH".deb "$T"/v1/arena_"$V1"_"$ARCH".deb
[[ $(command -v arena) == /usr/bin/arena ]] || fail "arena is not on PATH from /usr/bin"
[[ -x /usr/bin/arena-app ]] || fail "the app's binary is not installed"
version=$(arena --version)
say "arena --version: $version"
[[ $version == "arena $V1 (commit $COMMIT, built "*")" ]] ||
  fail "arena --version says \"$version\", expected version $V1 and commit $COMMIT"
# The sample pack ships with the CLI and answers to its name.
[[ -f /usr/share/arena/packs/sample/pack.toml ]] || fail "the CLI package has no sample pack"
tasks=$(cd / && arena pack show sample --json |
  python3 -c 'import json, sys; print(len(json.load(sys.stdin)["tasks"]))') ||
  fail "arena pack show sample failed"
[[ $tasks == 3 ]] || fail "the shipped sample pack has $tasks tasks, expected 3"
say "the sample pack ships: $tasks tasks"

# The scripted server, from the same build (package.sh built every binary
# of the workspace).
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps --locked |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
TESTSERVER=$T/arena-testserver
cp "$TARGET_DIR"/debug/arena-testserver "$TESTSERVER"

# The user: a fresh HOME, nothing of Arena's set.
unset ARENA_DATA_DIR ARENA_CONFIG XDG_DATA_HOME XDG_CONFIG_HOME XDG_RUNTIME_DIR
export HOME=$T/home
DATA=$HOME/.local/share/dev.arena.desktop
CONFIG=$HOME/.config/dev.arena.desktop/arena.toml
mkdir -p "$HOME" "$(dirname "$CONFIG")" "$T/project"

"$TESTSERVER" --model m1:40:0 --model m2:40:0 >"$T/server.out" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
  grep -q "listening on" "$T/server.out" 2>/dev/null && break
  sleep 0.05
done
BASE=$(sed -n 's/^listening on //p' "$T/server.out")
[[ -n $BASE ]] || fail "the scripted server did not start"
printf '[[provider]]\nname = "scripted"\nkind = "openai"\nbase_url = "%s"\nlane = "cloud"\n' \
  "$BASE" >"$CONFIG"

say "a Q&A battle with the installed CLI"
arena battle run --type qa --project "$T/project" --prompt "Say hi." \
  -c explainer@m1 -c debugger@m2 --json >"$T/battle.json"
BATTLE=$(python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); print(b["id"]); assert b["status"]=="done", b["status"]' "$T/battle.json") ||
  fail "the battle did not finish (see $T/battle.json)"
say "battle $BATTLE done"
[[ -f $DATA/arena.db ]] || fail "no database in the default data folder $DATA"

say "the installed app, under Xvfb"
xvfb-run -a -s "-screen 0 1280x800x24" bash -c '
  arena-app >"$1/app.log" 2>&1 &
  app=$!
  for _ in $(seq 120); do
    if xwininfo -name Arena 2>/dev/null | grep -q "Map State: IsViewable"; then
      kill "$app"; wait "$app" 2>/dev/null; exit 0
    fi
    kill -0 "$app" 2>/dev/null || { echo "the app exited:"; cat "$1/app.log"; exit 1; }
    sleep 0.5
  done
  kill "$app"; echo "no Arena window within 60 s:"; cat "$1/app.log"; exit 1
' _ "$T" || fail "the installed app showed no window"
say "the app's window showed"

# --- 3. upgrade -------------------------------------------------------------------
say "building $V2 from the same commit"
# The commit V1 says (HEAD may have moved since; the build script would ask
# git again).
HOME=$ORIG_HOME ARENA_COMMIT=$COMMIT scripts/package.sh --version "$V2"
cp dist/arena_"$V2"_"$ARCH".deb dist/arena-cli_"$V2"_"$ARCH".deb "$T/v2/"
say "installing $V2 over $V1"
apt-get install -y -q "$T"/v2/arena-cli_"$V2"_"$ARCH".deb "$T"/v2/arena_"$V2"_"$ARCH".deb
version=$(arena --version)
[[ $version == "arena $V2 (commit $COMMIT, built "*")" ]] ||
  fail "after the upgrade arena --version says \"$version\""
arena battle list --json | grep -q "\"$BATTLE\"" || fail "battle $BATTLE is gone after the upgrade"
remembered=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT value FROM meta WHERE key = '"'last_version'"'").fetchone()[0])' "$DATA/arena.db")
[[ $remembered == "$V2" ]] || fail "the database remembers version $remembered, not $V2"
say "after the upgrade: $version; battle $BATTLE is still listed; the database says $remembered"

# --- 4. remove --------------------------------------------------------------------
apt-get purge -y -q arena arena-cli
[[ ! -e /usr/bin/arena && ! -e /usr/bin/arena-app ]] || fail "the binaries are still installed"
[[ -f $DATA/arena.db ]] || fail "purging the packages removed the database"
[[ -f $CONFIG ]] || fail "purging the packages removed the config"
say "purged; the data folder and the config stay: $DATA, $CONFIG"
say "ok"
