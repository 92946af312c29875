-- What a task pack's verifier found, beside its verdict: a JSON object
-- (the FAIL_TO_PASS tests passed of how many, the agent's edits dropped
-- before the tests ran). NULL for a check command's or a judge's verdict.
ALTER TABLE goal_checks ADD COLUMN detail TEXT;
