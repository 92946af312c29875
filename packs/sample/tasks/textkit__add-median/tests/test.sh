#!/bin/sh
# The verifier of a repo-native task, written by Arena: it runs the
# project's tests on the tree (with tests/test.patch applied), leaves their
# report in the logs folder, and writes the reward for Harbor-compatible
# runners. Arena itself grades from the report and tests/tests.json.
ARENA_VERIFIER_LOGS="${ARENA_VERIFIER_LOGS:-/logs/verifier}"
export ARENA_VERIFIER_LOGS
logs="$ARENA_VERIFIER_LOGS"
mkdir -p "$logs"
(
rm -f -- "$ARENA_VERIFIER_LOGS"/output.txt
(
python3 -m unittest
) > "$ARENA_VERIFIER_LOGS"/output.txt 2>&1
arena_status=$?
cat "$ARENA_VERIFIER_LOGS"/output.txt
exit $arena_status
)
status=$?
if [ "$status" -eq 0 ]; then reward=1; else reward=0; fi
printf '%s\n' "$reward" > "$logs/reward.txt"
printf '{"reward": %s, "exit_code": %s}\n' "$reward" "$status" > "$logs/reward.json"
exit "$status"
