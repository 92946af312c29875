#!/usr/bin/env bash
# Builds Arena's packages from this clone on Debian 12:
#   dist/arena_VERSION_amd64.deb      the desktop app (Tauri's bundler lays it
#                                     out); depends on arena-cli of the same
#                                     version, which puts `arena` on PATH
#   dist/arena-cli_VERSION_amd64.deb  the `arena` CLI alone, without WebKit
#   dist/arena-VERSION-1.x86_64.rpm   the desktop app and the CLI, as Tauri's
#                                     bundler makes it (not tested here: no
#                                     RPM system; an AppImage is not made:
#                                     its tools are downloaded at build time)
#
# Both .deb are finished here the same way: binaries stripped, manual
# pages (help2man for the CLI, packaging/arena-app.1 for the app), `Depends`
# from the libraries the binaries link (dpkg-shlibdeps) plus what Arena
# runs (git and bubblewrap, for Coding battles), the MIT copyright file,
# a changelog from CHANGELOG.md, md5sums. `lintian` reports no error on
# either (scripts/test-packages.sh checks).
#
# Usage: scripts/package.sh [--version VERSION]
#   VERSION defaults to the workspace's (Cargo.toml). Another one is built
#   into the binaries too (ARENA_VERSION), as an upgrade test needs.
# Environment:
#   ARENA_PACKAGE_SKIP_SETUP=1   don't run scripts/setup.sh
#   ARENA_PACKAGE_PROFILE=P      the cargo profile (default dist: release's
#                                optimisation without incremental state).
#                                dev packages what the tests built: the
#                                workspace's binaries with the features the
#                                tests build them with (scripts/test.sh's
#                                packages step, after its tests and e2e
#                                steps, compiles nothing for its version),
#                                bundled by `tauri bundle --debug`
#   ARENA_PACKAGE_XZ_LEVEL=N     the .deb's xz preset, 0 to 9 (default 6,
#                                dpkg-deb's; the package test uses 0: a
#                                dev build's binaries take a minute at 6)
#   SOURCE_DATE_EPOCH            the build day (default: today; setting it
#                                also rebuilds the C libraries, whose build
#                                scripts follow it)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
if [[ -d "$HOME/.cargo/bin" && ":$PATH:" != *":$HOME/.cargo/bin:"* ]]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi

say() { printf 'package: %s\n' "$*"; }
die() {
  printf 'package: ERROR: %s\n' "$*" >&2
  exit 1
}

WORKSPACE_VERSION=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
VERSION=$WORKSPACE_VERSION
while [[ $# -gt 0 ]]; do
  case $1 in
    --version)
      VERSION=${2:-}
      shift 2 || die "--version needs a value"
      ;;
    *) die "unknown argument $1 (usage: $0 [--version VERSION])" ;;
  esac
done
[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  die "version \"$VERSION\" is not MAJOR.MINOR.PATCH (e.g. 0.2.0)"

MAINTAINER="Arena developers <maintainers@arena.invalid>"
ARCH=$(dpkg --print-architecture)
OUT=$ROOT/dist
# Where cargo builds: CARGO_TARGET_DIR, a `build.target-dir` in a cargo
# config, or target/ (cargo itself says which).
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps --locked |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])') ||
  die "cargo metadata failed: cannot tell where cargo builds"
WORK=$TARGET_DIR/package
start=$SECONDS

if [[ "${ARENA_PACKAGE_SKIP_SETUP:-0}" != 1 ]]; then
  scripts/setup.sh
fi
if [[ ! -x ui/node_modules/.bin/tauri || ui/package-lock.json -nt ui/node_modules/.package-lock.json ]]; then
  (cd ui && npm ci --no-audit --no-fund)
fi

# The commit the binaries say: ARENA_COMMIT when set, else arena-api's build
# script asks git itself, as here. Not exported when unset: cargo builds
# again what reads a variable that appears (the dev profile reuses the
# tests' build, made without it).
COMMIT=${ARENA_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
BUILT_AT=${SOURCE_DATE_EPOCH:-$(date +%s)}
XZ_LEVEL=${ARENA_PACKAGE_XZ_LEVEL:-6}
[[ $XZ_LEVEL =~ ^[0-9]$ ]] || die "ARENA_PACKAGE_XZ_LEVEL \"$XZ_LEVEL\" is not 0 to 9"
PROFILE=${ARENA_PACKAGE_PROFILE:-dist}
[[ $PROFILE =~ ^[a-z][a-z0-9_-]*$ ]] || die "ARENA_PACKAGE_PROFILE \"$PROFILE\" is not a cargo profile name"
# cargo's folder for the profile: dev builds into debug.
if [[ $PROFILE == dev ]]; then
  BIN=$TARGET_DIR/debug
else
  BIN=$TARGET_DIR/$PROFILE
fi
# The binaries say the package's version (left unset for the workspace's
# own, which they say anyway).
if [[ $VERSION != "$WORKSPACE_VERSION" ]]; then
  export ARENA_VERSION=$VERSION
else
  unset ARENA_VERSION
fi

rm -rf "$WORK"
mkdir -p "$WORK" "$OUT"
rm -f "$OUT"/arena_*.deb "$OUT"/arena-cli_*.deb "$OUT"/arena-*.rpm

# --- build ------------------------------------------------------------------
# The .rpm carries the CLI too (there is no CLI-only .rpm) and what Coding
# battles run; the bundler adds WebKitGTK and GTK itself.
tauri_config() {
  cat <<JSON
{
  "version": "$VERSION",
  "bundle": {
    "targets": ["deb", "rpm"],
    "linux": {
      "rpm": {
        "depends": ["git", "bubblewrap"],
        "files": {"/usr/bin/arena": "$WORK/arena.stripped"}
      }
    }
  }
}
JSON
}
if [[ $PROFILE == dev ]]; then
  # The tests' build, as it is: every binary of the workspace, with the
  # features of a build that includes the tests (--examples asks for targets
  # that need the dev-dependencies, so their features are on, as in
  # `cargo test --workspace`; the workspace has no examples). Any other
  # selection would compile tokio, tauri and all above them again.
  # TAURI_CONFIG is what `tauri build` hands the app's build (the version
  # tauri's context says); set only for another version, which compiles the
  # workspace's crates anyway (ARENA_VERSION).
  say "building the CLI and the app ($VERSION, commit $COMMIT, dev profile: the tests' build)"
  if [[ -n ${ARENA_VERSION:-} ]]; then
    TAURI_CONFIG="{\"version\":\"$VERSION\"}" cargo build --locked --workspace --bins --examples
  else
    (unset TAURI_CONFIG && cargo build --locked --workspace --bins --examples)
  fi
  strip --strip-unneeded -o "$WORK/arena.stripped" "$BIN/arena"
  tauri_config >"$WORK/tauri.json"
  say "bundling the app with Tauri's bundler"
  ui/node_modules/.bin/tauri bundle --debug --ci --config "$WORK/tauri.json"
else
  say "building the CLI ($VERSION, commit $COMMIT)"
  cargo build --profile "$PROFILE" --locked -p arena-cli
  strip --strip-unneeded -o "$WORK/arena.stripped" "$BIN/arena"
  say "building the app with Tauri's bundler"
  tauri_config >"$WORK/tauri.json"
  ui/node_modules/.bin/tauri build --ci --config "$WORK/tauri.json" -- --profile "$PROFILE" --locked
fi

BUNDLE=$BIN/bundle
app_deb=$(ls "$BUNDLE"/deb/*_"$VERSION"_*.deb)
app_rpm=$(ls "$BUNDLE"/rpm/*-"$VERSION"-*.rpm)

# --- finish a .deb ------------------------------------------------------------
# finish PACKAGE TREE EXTRA_DEPENDS SYNOPSIS DESCRIPTION: TREE holds the
# files (usr/...); writes dist/PACKAGE_VERSION_ARCH.deb.
finish() {
  local package=$1 tree=$2 extra=$3 synopsis=$4 description=$5
  local doc=$tree/usr/share/doc/$package
  rm -rf "$tree/DEBIAN"
  mkdir -p "$tree/DEBIAN" "$doc"
  find "$tree/usr/bin" -type f -exec strip --strip-unneeded --remove-section=.comment --remove-section=.note {} +
  # A manual page for each program: the CLI's from its --help, the app's
  # written by hand.
  mkdir -p "$tree/usr/share/man/man1"
  if [[ -x $tree/usr/bin/arena ]]; then
    help2man --locale=C.UTF-8 --no-info --section=1 \
      --name "compare AI models and coding agents on one prompt" "$tree/usr/bin/arena" |
      gzip -9n >"$tree/usr/share/man/man1/arena.1.gz"
  fi
  if [[ -x $tree/usr/bin/arena-app ]]; then
    gzip -9n <packaging/arena-app.1 >"$tree/usr/share/man/man1/arena-app.1.gz"
  fi
  find "$tree/usr/share/man" -type f -exec chmod 0644 {} +
  install -m 0644 packaging/copyright "$doc/copyright"
  changelog "$package" | gzip -9n >"$doc/changelog.gz"
  chmod 0644 "$doc/changelog.gz"
  find "$tree" -type d -exec chmod 0755 {} +

  # dpkg-shlibdeps wants a source package's debian/control.
  local shlib=$WORK/shlibdeps-$package
  mkdir -p "$shlib/debian"
  printf 'Source: arena\n\nPackage: %s\nArchitecture: any\n' "$package" >"$shlib/debian/control"
  local libs
  libs=$(cd "$shlib" && dpkg-shlibdeps -O "$tree"/usr/bin/* 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
  [[ -n $libs ]] || die "dpkg-shlibdeps found no libraries for $package"

  local size
  size=$(du -sk --exclude=DEBIAN "$tree" | cut -f1)
  {
    echo "Package: $package"
    echo "Version: $VERSION"
    echo "Architecture: $ARCH"
    echo "Maintainer: $MAINTAINER"
    echo "Installed-Size: $size"
    echo "Depends: $libs, $extra"
    echo "Section: devel"
    echo "Priority: optional"
    echo "Description: $synopsis"
    printf '%s\n' "$description" | fold -s -w 78 | sed 's/ *$//; s/^/ /'
  } >"$tree/DEBIAN/control"
  (cd "$tree" && find usr -type f -exec md5sum {} + | sort -k2 >DEBIAN/md5sums)
  chmod 0644 "$tree/DEBIAN/control" "$tree/DEBIAN/md5sums"
  dpkg-deb --root-owner-group -Zxz -z"$XZ_LEVEL" --build "$tree" "$OUT/${package}_${VERSION}_${ARCH}.deb" >/dev/null
  say "made dist/${package}_${VERSION}_${ARCH}.deb ($(du -h "$OUT/${package}_${VERSION}_${ARCH}.deb" | cut -f1))"
}

# The Debian changelog of PACKAGE: this version's section of CHANGELOG.md.
changelog() {
  local package=$1
  printf '%s (%s) unstable; urgency=medium\n\n' "$package" "$VERSION"
  awk -v v="$VERSION" '
    /^## / { inside = ($2 == v); next }
    inside && /^- / { sub(/^- /, "  * "); print; next }
    inside && /^  / { print "  " $0; next }
  ' CHANGELOG.md | grep . || printf '  * Arena %s.\n' "$VERSION"
  printf '\n -- %s  %s\n' "$MAINTAINER" "$(date -u -R -d "@$BUILT_AT")"
}

grep -q "^## $VERSION " CHANGELOG.md ||
  say "note: CHANGELOG.md has no section for $VERSION; the changelog says only the version"

# The CLI: the binary alone.
cli=$WORK/arena-cli
install -D -m 0755 "$BIN/arena" "$cli/usr/bin/arena"
# The sample pack (`arena pack run sample`): its files as they are in the
# repository, read only (its test scripts keep their executable bit).
mkdir -p "$cli/usr/share/arena/packs"
cp -r packs/sample "$cli/usr/share/arena/packs/sample"
find "$cli/usr/share/arena" -type d -exec chmod 0755 {} +
find "$cli/usr/share/arena" -type f -perm -u+x -exec chmod 0755 {} +
find "$cli/usr/share/arena" -type f ! -perm -u+x -exec chmod 0644 {} +
finish arena-cli "$cli" "git, bubblewrap" \
  "compare AI models and coding agents on one prompt (command line)" \
  "Arena runs the same prompt against 2 to 6 AI contestants - local models (llama.cpp, llama-swap, Ollama), cloud models and CLI coding agents - and helps pick the best result: fair speed figures, diffs, checks, an LLM judge, blind votes and a leaderboard. This package is the arena command alone, for servers and CI; the desktop app is the arena package."

# The app: Tauri's layout (binary, .desktop file, icons), finished the same way.
app=$WORK/arena
dpkg-deb -x "$app_deb" "$app"
finish arena "$app" "arena-cli (= $VERSION)" \
  "compare AI models and coding agents on one prompt (desktop app)" \
  "Arena runs the same prompt against 2 to 6 AI contestants - local models (llama.cpp, llama-swap, Ollama), cloud models and CLI coding agents - streams them side by side and helps pick the best result: fair speed figures, diffs, checks, an LLM judge, cross-examination, blind votes and a leaderboard. It depends on arena-cli, which puts the arena command on PATH."

cp "$app_rpm" "$OUT/arena-${VERSION}-1.$(uname -m).rpm"
say "made dist/arena-${VERSION}-1.$(uname -m).rpm ($(du -h "$OUT/arena-${VERSION}-1.$(uname -m).rpm" | cut -f1); Tauri's bundler, as it makes it)"
say "done in $((SECONDS - start)) s"
