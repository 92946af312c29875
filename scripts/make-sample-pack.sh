#!/usr/bin/env bash
# Regenerates packs/sample/: a tiny Python repository (textkit, tested with
# python3's unittest) made commit by commit with fixed authors and dates, so
# its commit ids never change, and three repo-native tasks on it. Each task's
# base is one commit and its fix the next: the gold patch is the fix's change
# outside tests/, the test patch its change inside tests/. The tasks are
# written as SWE-bench instances and imported with `arena pack import
# --bundle`, so the pack carries the repository as repo.bundle.
#
#   scripts/make-sample-pack.sh [OUT]     (default: packs/sample)
#
# ARENA names the arena command to use (default: cargo run -q -p arena-cli --).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/packs/sample}"
arena="${ARENA:-cargo run -q --manifest-path $root/Cargo.toml -p arena-cli --}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
repo="$work/textkit"

export GIT_AUTHOR_NAME="Arena Sample" GIT_AUTHOR_EMAIL="sample@arena.invalid"
export GIT_COMMITTER_NAME="Arena Sample" GIT_COMMITTER_EMAIL="sample@arena.invalid"
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 TZ=UTC

git init -q -b main "$repo"
cd "$repo"
commit() { # DATE MESSAGE
  git add -A
  GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1" git commit -q -m "$2"
}

# ---- c1: the first version
mkdir -p textkit tests
cat > pyproject.toml <<'PY'
[project]
name = "textkit"
version = "0.1.0"
description = "Small text and number helpers (Arena's sample repository)"
requires-python = ">=3.8"
PY
cat > README.md <<'MD'
# textkit

Small text and number helpers. Run the tests with `python3 -m unittest`.
MD
cat > textkit/__init__.py <<'PY'
"""Small text and number helpers."""
PY
cat > textkit/stats.py <<'PY'
"""Statistics over lists of numbers."""


def mean(xs):
    """The arithmetic mean of a non-empty list."""
    if not xs:
        raise ValueError("mean of an empty list")
    return sum(xs) / len(xs)
PY
cat > textkit/text.py <<'PY'
"""Text helpers."""


def title_case(s):
    """Each word of `s` with its first letter upper case."""
    return s.title()
PY
cat > textkit/roman.py <<'PY'
"""Roman numerals."""

_NUMERALS = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"),
    (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
    (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]


def to_roman(n):
    """`n` in Roman numerals."""
    out = []
    for value, letters in _NUMERALS:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)
PY
: > tests/__init__.py
cat > tests/test_stats.py <<'PY'
import unittest

from textkit import stats


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(stats.mean([1, 2, 3, 4]), 2.5)

    def test_mean_of_nothing_raises(self):
        with self.assertRaises(ValueError):
            stats.mean([])
PY
cat > tests/test_text.py <<'PY'
import unittest

from textkit import text


class TitleCaseTest(unittest.TestCase):
    def test_words(self):
        self.assertEqual(text.title_case("hello big world"), "Hello Big World")
PY
cat > tests/test_roman.py <<'PY'
import unittest

from textkit import roman


class ToRomanTest(unittest.TestCase):
    def test_small(self):
        self.assertEqual(roman.to_roman(14), "XIV")
        self.assertEqual(roman.to_roman(1994), "MCMXCIV")
PY
commit "2024-03-01T10:00:00Z" "textkit: mean, title_case and to_roman"

# ---- c2: median (task add-median)
cat >> textkit/stats.py <<'PY'


def median(xs):
    """The middle value of a non-empty list (the mean of the two middle
    values when it has an even length)."""
    if not xs:
        raise ValueError("median of an empty list")
    s = sorted(xs)
    mid = len(s) // 2
    if len(s) % 2:
        return s[mid]
    return (s[mid - 1] + s[mid]) / 2
PY
cat >> tests/test_stats.py <<'PY'


class MedianTest(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(stats.median([3, 1, 2]), 2)

    def test_even(self):
        self.assertEqual(stats.median([4, 1, 3, 2]), 2.5)

    def test_empty_raises(self):
        with self.assertRaises(ValueError):
            stats.median([])
PY
commit "2024-03-02T10:00:00Z" "stats.median"

# ---- c3: apostrophes in title_case (task title-case-apostrophes)
cat > textkit/text.py <<'PY'
"""Text helpers."""


def title_case(s):
    """Each word of `s` with its first letter upper case and the rest as
    they were: "don't stop" becomes "Don't Stop"."""
    return " ".join(w[:1].upper() + w[1:] for w in s.split(" "))
PY
cat >> tests/test_text.py <<'PY'

    def test_apostrophe(self):
        self.assertEqual(text.title_case("don't stop"), "Don't Stop")

    def test_keeps_inner_capitals(self):
        self.assertEqual(text.title_case("read the README"), "Read The README")
PY
commit "2024-03-03T10:00:00Z" "title_case keeps a word's other letters"

# ---- c4: to_roman's range (task roman-range)
python3 - <<'PY'
import pathlib
p = pathlib.Path("textkit/roman.py")
s = p.read_text()
s = s.replace('    """`n` in Roman numerals."""\n', '    """`n` (1 to 3999) in Roman numerals."""\n'
              '    if not isinstance(n, int) or not 1 <= n <= 3999:\n'
              '        raise ValueError("Roman numerals go from 1 to 3999")\n')
p.write_text(s)
PY
cat >> tests/test_roman.py <<'PY'

    def test_zero_raises(self):
        with self.assertRaises(ValueError):
            roman.to_roman(0)

    def test_too_large_raises(self):
        with self.assertRaises(ValueError):
            roman.to_roman(4000)
PY
commit "2024-03-04T10:00:00Z" "to_roman refuses numbers it cannot write"

# ---- the tasks, as SWE-bench instances
c=($(git rev-list --reverse HEAD))
instances="$work/instances.jsonl"
python3 - "$instances" "${c[@]}" <<'PY'
import json, subprocess, sys

out, c1, c2, c3, c4 = sys.argv[1:]
def diff(a, b, *spec):
    return subprocess.run(["git", "diff", "--no-color", "--no-ext-diff", a, b, "--", *spec],
                          check=True, capture_output=True, text=True).stdout
def task(iid, base, fix, created, statement, f2p, p2p):
    return {
        "repo": "arena-sample/textkit",
        "instance_id": iid,
        "base_commit": base,
        "patch": diff(base, fix, ".", ":!tests"),
        "test_patch": diff(base, fix, "tests"),
        "problem_statement": statement,
        "hints_text": "",
        "created_at": created,
        "version": "0.1",
        "FAIL_TO_PASS": json.dumps(f2p),
        "PASS_TO_PASS": json.dumps(p2p),
        "environment_setup_commit": c1,
    }
stats = "tests.test_stats."
text = "tests.test_text."
roman = "tests.test_roman."
rows = [
    task("textkit__add-median", c1, c2, "2024-03-02T10:00:00Z",
         "Add `median` to `textkit.stats`\n\n"
         "`textkit.stats` has `mean` but no `median`. Add `median(xs)`: the middle value of\n"
         "the list once sorted, or the mean of the two middle values when the list has an\n"
         "even length. Like `mean`, it raises `ValueError` for an empty list.\n",
         [stats + "MedianTest.test_odd", stats + "MedianTest.test_even",
          stats + "MedianTest.test_empty_raises"],
         [stats + "MeanTest.test_mean", stats + "MeanTest.test_mean_of_nothing_raises",
          text + "TitleCaseTest.test_words", roman + "ToRomanTest.test_small"]),
    task("textkit__title-case-apostrophes", c2, c3, "2024-03-03T10:00:00Z",
         "`title_case` mangles apostrophes and capitals\n\n"
         "`textkit.text.title_case(\"don't stop\")` returns `\"Don'T Stop\"`, and\n"
         "`title_case(\"read the README\")` returns `\"Read The Readme\"`. A word should get\n"
         "its first letter upper case and keep the rest as it was: `\"Don't Stop\"`,\n"
         "`\"Read The README\"`.\n",
         [text + "TitleCaseTest.test_apostrophe", text + "TitleCaseTest.test_keeps_inner_capitals"],
         [text + "TitleCaseTest.test_words", stats + "MeanTest.test_mean",
          stats + "MedianTest.test_odd", roman + "ToRomanTest.test_small"]),
    task("textkit__roman-range", c3, c4, "2024-03-04T10:00:00Z",
         "`to_roman` returns nonsense outside 1..3999\n\n"
         "`textkit.roman.to_roman(0)` returns an empty string and `to_roman(4000)` returns\n"
         "`\"MMMM\"`. Roman numerals only go from 1 to 3999: raise `ValueError` for any other\n"
         "number.\n",
         [roman + "ToRomanTest.test_zero_raises", roman + "ToRomanTest.test_too_large_raises"],
         [roman + "ToRomanTest.test_small", text + "TitleCaseTest.test_apostrophe",
          stats + "MedianTest.test_even"]),
]
with open(out, "w") as f:
    for r in rows:
        f.write(json.dumps(r, sort_keys=True) + "\n")
PY

rm -rf "$out"
$arena pack import "$instances" --project "$repo" --out "$out" --bundle \
  --name sample --description "Three small repo-native tasks on textkit, a tiny Python repository carried as repo.bundle" \
  --time-limit-secs 600
