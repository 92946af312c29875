#!/usr/bin/env bash
# Machine set-up for building, running and testing Arena on Debian 12.
#
# Idempotent, and fast (well under 2 s) when everything is already present:
#   - installs the Debian packages Tauri 2 / WebKitGTK / the e2e step need
#     (apt-get update + apt-get install -y, only if some are missing);
#   - checks that `python3 -m venv` works (scripts/peers.sh needs it);
#   - checks Node.js >= 20 and npm (installs Debian's nodejs + npm only when
#     node is missing altogether);
#   - checks cargo (and rustfmt/clippy); without cargo it says how to get
#     rustup and exits 1.
# Runs as root, or through sudo when not root (and sudo exists).
#
# Usage: scripts/setup.sh                 set the machine up
#        scripts/setup.sh --print-packages  print the Debian package list
#                                           (one a line; used by .ci/run)
set -euo pipefail

# The one list of Debian packages the project needs (.ci/run reads it too).
# xauth: xvfb-run needs it (xvfb only Recommends it).
# libdbus-1-dev: the OS keychain (Secret Service) for API keys.
# gnome-keyring, dbus-daemon: a real Secret Service for the keychain test
# (it runs on a private session bus, so nothing touches the user's keyring).
DEB_PACKAGES=(
  libwebkit2gtk-4.1-dev
  libgtk-3-dev
  libdbus-1-dev
  gnome-keyring
  dbus-daemon
  libayatana-appindicator3-dev
  librsvg2-dev
  libssl-dev
  pkg-config
  xvfb
  xauth
  webkit2gtk-driver
  build-essential
  curl
  file
  python3-venv
  # Coding battles: every agent and check runs in a bubblewrap jail.
  bubblewrap
  git
  # Packages (scripts/package.sh): the CLI's manual page. Their test
  # (scripts/test-packages.sh): checking the .deb files, and seeing the
  # installed app's window.
  help2man
  lintian
  x11-utils
  # The environment tests' Go project (scripts/projects.sh): Debian's Go,
  # and a real Go module's source for its one dependency (the Go module
  # proxy is not reachable from every machine).
  golang
  golang-github-google-go-cmp-dev
  # Team mode's store tests: a throwaway PostgreSQL server per test run
  # (crates/arena-testdb); no system cluster is created (see --prepare-apt).
  postgresql-15
)
NODE_MIN_MAJOR=20

# Debian's postgresql-common creates and starts a system cluster (port 5432)
# when a server is installed; the tests start their own, so it is turned off
# first, as Debian documents it: install postgresql-common alone (it brings
# createcluster.conf, and no server), then set create_main_cluster = false
# in it, then install the server.
prepare_apt() {
  local conf=/etc/postgresql-common/createcluster.conf
  if ! deb_installed postgresql-common; then
    apt_install postgresql-common
  fi
  if grep -Eq '^[[:space:]]*create_main_cluster[[:space:]]*=[[:space:]]*false' "$conf" 2>/dev/null; then
    return 0
  fi
  if [[ -f $conf ]]; then
    as_root sed -i -E 's/^[[:space:]]*#?[[:space:]]*create_main_cluster[[:space:]]*=.*/create_main_cluster = false/' "$conf"
  fi
  grep -Eq '^create_main_cluster = false' "$conf" 2>/dev/null ||
    echo 'create_main_cluster = false' | as_root tee -a "$conf" >/dev/null
  say "no system PostgreSQL cluster will be created ($conf)"
}

if [[ "${1:-}" == "--print-packages" ]]; then
  printf '%s\n' "${DEB_PACKAGES[@]}"
  exit 0
elif [[ "${1:-}" == "--prepare-apt" ]]; then
  PREPARE_ONLY=1
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--print-packages | --prepare-apt]" >&2
  exit 2
fi

say() { printf 'setup: %s\n' "$*"; }
warn() { printf 'setup: WARNING: %s\n' "$*" >&2; }
die() {
  printf 'setup: ERROR: %s\n' "$*" >&2
  exit 1
}

# Run a command as root (directly, or through sudo).
as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "need root to run '$*' (not root, and no sudo); run it by hand as root"
  fi
}

apt_updated=0
apt_install() {
  if [[ $apt_updated -eq 0 ]]; then
    say "apt-get update"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update
    apt_updated=1
  fi
  say "apt-get install -y $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
}

deb_installed() {
  local status
  status=$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) || return 1
  [[ "$status" == "installed" ]]
}

# --- 1. Debian packages -------------------------------------------------------
if [[ "${PREPARE_ONLY:-0}" == 1 ]]; then
  prepare_apt
  exit 0
fi
if command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for pkg in "${DEB_PACKAGES[@]}"; do
    deb_installed "$pkg" || missing+=("$pkg")
  done
  if [[ ${#missing[@]} -gt 0 ]]; then
    say "missing Debian packages: ${missing[*]}"
    prepare_apt
    apt_install "${missing[@]}"
    say "installed: ${missing[*]}"
  else
    say "Debian packages: all ${#DEB_PACKAGES[@]} present"
  fi
else
  warn "no dpkg-query: not a Debian system? skipping the system packages (${DEB_PACKAGES[*]})"
fi

# --- 2. python3 with a working venv ---------------------------------------------
# python3 may be a pyenv python (has venv + ensurepip) rather than Debian's
# (which needs python3-venv for ensurepip). Checking the imports is enough and
# much faster than creating a throw-away venv.
if command -v python3 >/dev/null 2>&1; then
  if py_version=$(python3 -c 'import sys, venv, ensurepip; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null); then
    say "python3: $(command -v python3) ($py_version), venv works"
  elif [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    warn "python3 on PATH ($(command -v python3)) cannot make venvs; scripts/peers.sh falls back to /usr/bin/python3"
  else
    die "python3 -m venv does not work (no ensurepip); install python3-venv or a full python3"
  fi
else
  die "python3 not found (python3-venv should have brought it in)"
fi

# --- 3. Node.js >= 20 and npm ------------------------------------------------------
if ! command -v node >/dev/null 2>&1; then
  say "node not found: installing Debian's nodejs and npm"
  apt_install nodejs npm
fi
if ! command -v npm >/dev/null 2>&1; then
  # A node without npm (e.g. Debian's nodejs alone). Don't install Debian's npm
  # over a node from elsewhere: it would pull in Debian's nodejs.
  if deb_installed nodejs && [[ "$(dpkg-query -W -f='${Version}' nodejs)" != *nodesource* ]]; then
    apt_install npm
  else
    die "node is installed but npm is missing; install npm for $(command -v node)"
  fi
fi
node_version=$(node --version)
node_major=${node_version#v}
node_major=${node_major%%.*}
if [[ "$node_major" =~ ^[0-9]+$ ]] && ((node_major >= NODE_MIN_MAJOR)); then
  say "node: $node_version, npm: $(npm --version)"
else
  warn "node $node_version is older than $NODE_MIN_MAJOR: the UI build (Vite) will likely fail; install Node.js >= $NODE_MIN_MAJOR"
fi

# --- 4. Rust toolchain ------------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1; then
  if [[ -x "$HOME/.cargo/bin/cargo" ]]; then
    die "cargo is in $HOME/.cargo/bin but not on PATH: run  export PATH=\"\$HOME/.cargo/bin:\$PATH\"  (or  . \"\$HOME/.cargo/env\")"
  fi
  cat >&2 <<'EOF'
setup: ERROR: cargo not found. Install the Rust toolchain with rustup:
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile default
    . "$HOME/.cargo/env"
  (or Debian's packages: apt-get install rustup && rustup default stable)
  then run this script again.
EOF
  exit 1
fi
say "cargo: $(cargo --version)"
for tool in fmt clippy; do
  if ! cargo "$tool" --version >/dev/null 2>&1; then
    warn "cargo $tool is missing: rustup component add $([[ $tool == fmt ]] && echo rustfmt || echo clippy)"
  fi
done
if command -v cargo-nextest >/dev/null 2>&1; then
  say "cargo-nextest: present (scripts/test.sh uses it)"
fi

say "done"
