#!/usr/bin/env bash
# An independent re-check of a mined pack (issue 41): for every task, on a
# fresh clone of the project (none of Arena's trees, jails or environments),
# the base with the test patch must fail the task's FAIL_TO_PASS tests, and
# with the gold patch too they must pass.
#
#   scripts/mine-recheck.sh PACK PROJECT [SETUP]
#
# PROJECT is the repository the pack was mined from (it is cloned, never
# changed). SETUP, when given, runs once in the clone before the tasks (for
# example `python3 -m venv venv && venv/bin/pip install -q -e . pytest`);
# folders named venv, .venv and target are kept from task to task.
# The test command is each task's own (task.toml), or RECHECK_COMMAND.
# Exit status: 0 when every task re-checks, 1 otherwise.
set -euo pipefail

pack=$(realpath "${1:?usage: mine-recheck.sh PACK PROJECT [SETUP]}")
project=$(realpath "${2:?usage: mine-recheck.sh PACK PROJECT [SETUP]}")
setup=${3:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/mine-recheck.XXXXXX")
trap 'rm -rf "$work"' EXIT
clone="$work/clone"
git clone -q --no-local "$project" "$clone"
cd "$clone"
git config user.name recheck
git config user.email recheck@example.invalid
if [ -n "$setup" ]; then
  sh -c "$setup" >"$work/setup.log" 2>&1 || { cat "$work/setup.log"; exit 1; }
fi

# The task's FAIL_TO_PASS as arguments for its runner: pytest node ids as
# they are; for cargo test, `-- --exact NAME…` (a name's target prefix cut).
selection() {
  python3 - "$1" "$2" <<'EOF'
import json, shlex, sys
lists = json.load(open(sys.argv[1]))
command = sys.argv[2]
names = lists.get("FAIL_TO_PASS", [])
if "cargo" in command.split():
    names = [n.split("::", 1)[1] if n.count("::") and n.split("::", 1)[0].endswith(")") else n for n in names]
    print("-- --exact " + " ".join(shlex.quote(n) for n in names))
else:
    print(" ".join(shlex.quote(n) for n in names))
EOF
}

# A field of a task.toml's [metadata.arena] (a TOML string, basic or
# literal).
field() {
  python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[2], "rb"))["metadata"]["arena"].get(sys.argv[1], ""))' "$1" "$2"
}

# With cargo, whether every FAIL_TO_PASS test of tests.json $1 reports
# `ok` in the output $2 (cargo exits 0 when a selection matches nothing: a
# test that does not exist on a tree must not count as passing there).
all_ok() {
  python3 - "$1" "$2" <<'EOF'
import json, re, sys
names = json.load(open(sys.argv[1])).get("FAIL_TO_PASS", [])
names = [n.split("::", 1)[1] if n.count("::") and n.split("::", 1)[0].endswith(")") else n for n in names]
ok = set(re.findall(r"^test (.+?) \.\.\. ok$", open(sys.argv[2], errors="replace").read(), re.M))
sys.exit(0 if names and all(n in ok for n in names) else 1)
EOF
}

total=0 ok=0
for task in "$pack"/tasks/*/; do
  id=$(basename "$task")
  total=$((total + 1))
  base=$(field base_commit "$task/task.toml")
  command=${RECHECK_COMMAND:-$(field test_command "$task/task.toml")}
  args=$(selection "$task/tests/tests.json" "$command")
  git checkout -q -f "$base"
  git clean -q -fdx -e venv -e .venv -e target
  git apply "$task/tests/test.patch"
  cargo=false
  case " $command " in *" cargo "*) cargo=true ;; esac
  if sh -c "$command $args" >"$work/red.log" 2>&1 && { ! $cargo || all_ok "$task/tests/tests.json" "$work/red.log"; }; then
    echo "FAIL $id: base + test patch passes its FAIL_TO_PASS tests"
    continue
  fi
  git apply "$task/solution/gold.patch"
  if ! sh -c "$command $args" >"$work/gold.log" 2>&1 || { $cargo && ! all_ok "$task/tests/tests.json" "$work/gold.log"; }; then
    echo "FAIL $id: base + test patch + gold patch does not pass its FAIL_TO_PASS tests"
    tail -5 "$work/gold.log"
    continue
  fi
  echo "ok   $id"
  ok=$((ok + 1))
done
echo "$ok of $total task(s) re-check: RED fails and GOLD passes their FAIL_TO_PASS tests"
[ "$ok" -eq "$total" ]
