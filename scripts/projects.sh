#!/usr/bin/env bash
# Makes the REAL projects the environment tests (crates/arena-core/tests/
# environment.rs) and scripts/bench-environment.sh run Coding battles on
# (issue 38), in .peers/projects/ at the repository root. Each is a git
# repository with one commit, its dependency folders ignored by .gitignore
# and installed the way its users install them, from the package registries:
#
#   node/    package.json with a runtime dependency (is-odd) and a dev
#            dependency (vitest); `npm install`; `npm test` runs vitest.
#   python/  .venv made by `python3 -m venv`, with pytest, attrs and the
#            plugin pytest-timeout (pytest.ini loads it with -p, so a run
#            without it fails); `.venv/bin/pytest -q`. The wheels are kept in
#            python-wheels/ too, so a test can make a venv of its own at
#            another path offline (a venv's scripts name its path).
#   rust/    a crate depending on regex; `cargo fetch`, then `cargo test`
#            once so target/ is warm; `cargo test --offline`.
#   go/      a module depending on github.com/google/go-cmp. The Go module
#            proxy is not reachable from these machines; the dependency is
#            the real module source Debian ships (golang-github-google-go-cmp-
#            dev, under /usr/share/gocode), laid out as a file-based module
#            proxy (go-proxy/) from which `go mod download` fills a module
#            cache of the projects' own (go-mod/, GOMODCACHE). Offline:
#            GOMODCACHE=.../go-mod GOFLAGS=-mod=mod GOPROXY=off go test ./...
#
# Each has a deliberate one-line bug its tests catch (a contestant fixes it):
#   node/index.js      isEven returns isOdd(n)          (fix: !isOdd(n))
#   python/shapes.py   manhattan subtracts              (fix: + abs(self.y))
#   rust/src/lib.rs    count_words adds one             (fix: drop "+ 1")
#   go/words.go        Words drops the last word        (fix: return fields)
# `scripts/projects.sh --check` runs each project's tests and expects them to
# fail on that bug (and pass once it is fixed, in a scratch copy).
#
# Idempotent: a stamp file records the recipe; when it matches and the
# projects are there, the script exits at once. Runs npm from a neutral
# directory (a same-named folder in the working directory confuses npm).
#
# Environment:
#   ARENA_PROJECTS_DIR       where (default: <repo>/.peers/projects)
#   ARENA_PROJECTS_FORCE=1   make them again
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${ARENA_PROJECTS_DIR:-$ROOT/.peers/projects}
STAMP=$DIR/made.stamp
# Bump when a project's recipe changes.
RECIPE=1
GO_CMP_VERSION=v0.5.9
GO_CMP_SRC=/usr/share/gocode/src/github.com/google/go-cmp
STAMP_CONTENT="v$RECIPE node(is-odd@3.0.1,vitest@1.6.0) python(pytest==8.3.5,attrs==24.2.0,pytest-timeout==2.3.1) rust(regex=1) go(go-cmp@$GO_CMP_VERSION)"

say() { printf 'projects: %s\n' "$*"; }
die() {
  printf 'projects: ERROR: %s\n' "$*" >&2
  exit 1
}

if [[ -d "$HOME/.cargo/bin" && ":$PATH:" != *":$HOME/.cargo/bin:"* ]]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi

made() {
  [[ -f "$STAMP" && "$(cat "$STAMP")" == "$STAMP_CONTENT" ]] || return 1
  [[ -x "$DIR/node/node_modules/.bin/vitest" && -x "$DIR/python/.venv/bin/pytest" &&
    -d "$DIR/rust/target/debug" && -d "$DIR/go-mod/github.com/google" ]] || return 1
  # a venv whose interpreter went away (pyenv upgraded) is no venv
  "$DIR/python/.venv/bin/python" -c 'import attrs, pytest, pytest_timeout' 2>/dev/null
}

# commit DIR MESSAGE: a repository with one commit of what git does not ignore.
commit() {
  local dir=$1 message=$2
  git -C "$dir" init -q -b main
  git -C "$dir" config user.email arena@example.invalid
  git -C "$dir" config user.name "Arena Test"
  git -C "$dir" add -A
  git -C "$dir" commit -q -m "$message"
}

node_project() {
  local p=$DIR/node
  rm -rf "$p"
  mkdir -p "$p"
  cat >"$p/package.json" <<'EOF'
{
  "name": "parity",
  "version": "1.0.0",
  "private": true,
  "scripts": { "test": "vitest run" },
  "dependencies": { "is-odd": "3.0.1" },
  "devDependencies": { "vitest": "1.6.0" }
}
EOF
  cat >"$p/index.js" <<'EOF'
const isOdd = require('is-odd');

module.exports = {
  isEven: (n) => isOdd(n),
};
EOF
  cat >"$p/index.test.js" <<'EOF'
import { test, expect } from 'vitest';
import { isEven } from './index.js';

test('even numbers are even', () => {
  expect(isEven(2)).toBe(true);
  expect(isEven(3)).toBe(false);
});
EOF
  printf 'node_modules/\nArena/\n' >"$p/.gitignore"
  say "npm install in $p"
  # From a neutral directory, with the project as its prefix.
  (cd / && npm install --prefix "$p" --no-audit --no-fund --loglevel=error)
  commit "$p" "A parity module on is-odd, tested with vitest"
}

python_project() {
  local p=$DIR/python wheels=$DIR/python-wheels
  local pkgs=(pytest==8.3.5 attrs==24.2.0 pytest-timeout==2.3.1)
  rm -rf "$p" "$wheels"
  mkdir -p "$p" "$wheels"
  cat >"$p/shapes.py" <<'EOF'
import attrs


@attrs.define
class Point:
    x: int
    y: int

    def manhattan(self) -> int:
        return abs(self.x) - abs(self.y)
EOF
  cat >"$p/test_shapes.py" <<'EOF'
import pytest

from shapes import Point


@pytest.mark.timeout(30)
def test_manhattan():
    assert Point(3, -4).manhattan() == 7
EOF
  # -p timeout (the plugin's name): a run without the plugin fails, not only warns.
  printf '[pytest]\naddopts = -p timeout --strict-markers\n' >"$p/pytest.ini"
  printf '.venv/\n__pycache__/\n.pytest_cache/\nArena/\n' >"$p/.gitignore"
  say "python3 -m venv .venv && pip install ${pkgs[*]} in $p"
  (cd "$p" && python3 -m venv .venv)
  "$p/.venv/bin/pip" install --no-input --disable-pip-version-check --progress-bar off -q "${pkgs[@]}"
  "$p/.venv/bin/pip" download --no-input --disable-pip-version-check --progress-bar off -q \
    -d "$wheels" "${pkgs[@]}"
  commit "$p" "Points and their Manhattan distance, tested with pytest"
}

rust_project() {
  local p=$DIR/rust
  rm -rf "$p"
  mkdir -p "$p/src"
  cat >"$p/Cargo.toml" <<'EOF'
[package]
name = "words"
version = "0.1.0"
edition = "2021"

[dependencies]
regex = "1"

# A project of its own (it may sit inside another workspace's folder).
[workspace]
EOF
  cat >"$p/src/lib.rs" <<'EOF'
use regex::Regex;

/// How many words `text` holds.
pub fn count_words(text: &str) -> usize {
    let word = Regex::new(r"\w+").expect("a valid pattern");
    word.find_iter(text).count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words() {
        assert_eq!(count_words("one two, three"), 3);
    }
}
EOF
  printf '/target/\nArena/\n' >"$p/.gitignore"
  say "cargo fetch && cargo test in $p"
  (cd "$p" && cargo generate-lockfile -q && cargo fetch -q)
  # Warm: the user ran the tests once (they fail on the bug).
  (cd "$p" && cargo test --offline -q >/dev/null 2>&1) || true
  commit "$p" "Counting words with regex"
}

go_project() {
  local p=$DIR/go proxy=$DIR/go-proxy mods=$DIR/go-mod
  command -v go >/dev/null 2>&1 || die "go not found: run scripts/setup.sh (Debian's golang)"
  [[ -f "$GO_CMP_SRC/go.mod" ]] ||
    die "$GO_CMP_SRC missing: run scripts/setup.sh (golang-github-google-go-cmp-dev)"
  # The module cache is read-only by design: make it writable to remove it.
  [[ -d "$mods" ]] && chmod -R u+w "$mods"
  rm -rf "$p" "$proxy" "$mods"
  mkdir -p "$p" "$proxy/github.com/google/go-cmp/@v"
  # A directory module proxy (the GOPROXY protocol over file://) holding
  # Debian's source of go-cmp as the module version it is.
  local at=$proxy/github.com/google/go-cmp/@v
  echo "$GO_CMP_VERSION" >"$at/list"
  printf '{"Version":"%s","Time":"2022-08-30T00:00:00Z"}\n' "$GO_CMP_VERSION" >"$at/$GO_CMP_VERSION.info"
  cp "$GO_CMP_SRC/go.mod" "$at/$GO_CMP_VERSION.mod"
  python3 - "$GO_CMP_SRC" "$at/$GO_CMP_VERSION.zip" "github.com/google/go-cmp@$GO_CMP_VERSION" <<'EOF'
import os, sys, zipfile
src, out, prefix = sys.argv[1:]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for d, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(d, f)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            z.write(path, prefix + "/" + os.path.relpath(path, src))
EOF
  cat >"$p/go.mod" <<'EOF'
module example.com/words

go 1.19

require github.com/google/go-cmp v0.5.9
EOF
  cat >"$p/words.go" <<'EOF'
// Package words splits text into words.
package words

import "strings"

// Words returns the words of text, in order.
func Words(text string) []string {
	fields := strings.Fields(text)
	return fields[:len(fields)-1]
}
EOF
  cat >"$p/words_test.go" <<'EOF'
package words

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWords(t *testing.T) {
	want := []string{"one", "two", "three"}
	if diff := cmp.Diff(want, Words("one two  three")); diff != "" {
		t.Errorf("Words mismatch (-want +got):\n%s", diff)
	}
}
EOF
  printf 'Arena/\n' >"$p/.gitignore"
  say "go mod download (from the proxy laid out in $proxy) into $mods"
  (cd "$p" && GOMODCACHE=$mods GOPROXY=file://$proxy GOSUMDB=off GOFLAGS=-mod=mod go mod download &&
    GOMODCACHE=$mods GOPROXY=file://$proxy GOSUMDB=off GOFLAGS=-mod=mod go mod tidy)
  [[ -s "$p/go.sum" ]] || die "go mod download wrote no go.sum"
  commit "$p" "Splitting text into words, tested with go-cmp"
}

# check_project NAME CMD FIX: CMD fails in the project; in a scratch copy
# with FIX (a sed script on a file) applied, it passes.
check_project() {
  local name=$1 cmd=$2 file=$3 fix=$4 scratch
  if (cd "$DIR/$name" && env $GO_ENV bash -c "$cmd") >/dev/null 2>&1; then
    die "$name: '$cmd' passes before the fix"
  fi
  scratch=$(mktemp -d)
  cp -a "$DIR/$name" "$scratch/"
  sed -i "$fix" "$scratch/$name/$file"
  if ! (cd "$scratch/$name" && env $GO_ENV bash -c "$cmd") >"$scratch/log" 2>&1; then
    tail -n 20 "$scratch/log" >&2
    rm -rf "$scratch"
    die "$name: '$cmd' fails after the fix"
  fi
  rm -rf "$scratch"
  say "$name: '$cmd' fails on the bug, passes once fixed"
}

GO_ENV="GOMODCACHE=$DIR/go-mod GOFLAGS=-mod=mod GOPROXY=off"

check_all() {
  # the python copy's scripts still name the project's own venv: fine here,
  # the venv is read, not moved
  check_project node "npm test" index.js 's/=> isOdd(n)/=> !isOdd(n)/'
  check_project python ".venv/bin/pytest -q" shapes.py 's/abs(self.x) - abs(self.y)/abs(self.x) + abs(self.y)/'
  check_project rust "cargo test --offline" src/lib.rs 's/count() + 1/count()/'
  check_project go "go test ./..." words.go 's/return fields\[:len(fields)-1\]/return fields/'
}

mkdir -p "$DIR"
if [[ "${1:-}" == "--check" ]]; then
  made || die "the projects are not made: run scripts/projects.sh"
  check_all
  exit 0
fi

if [[ "${ARENA_PROJECTS_FORCE:-0}" != 1 ]] && made; then
  say "up to date in $DIR"
  exit 0
fi

exec 9>"$DIR/.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
  if [[ "${ARENA_PROJECTS_FORCE:-0}" != 1 ]] && made; then
    say "up to date (made by a concurrent run) in $DIR"
    exit 0
  fi
fi

started=$SECONDS
rm -f "$STAMP"
# Each project once per recipe: a run cut short goes on where it stopped.
for name in node python rust go; do
  if [[ "${ARENA_PROJECTS_FORCE:-0}" == 1 || "$(cat "$DIR/$name.made" 2>/dev/null)" != "$STAMP_CONTENT" ]]; then
    rm -f "$DIR/$name.made"
    "${name}_project"
    echo "$STAMP_CONTENT" >"$DIR/$name.made"
  fi
done
check_all
echo "$STAMP_CONTENT" >"$STAMP"
say "made in $DIR in $((SECONDS - started)) s"
