//! Reading a verifier's machine-readable test report and grading a task
//! run from it.
//!
//! A task's `tests/tests.json` names the tests that decide it, in
//! SWE-bench's convention: [`TestLists`].

use serde::{Deserialize, Serialize};

/// The tests that decide a task (its `tests/tests.json`, SWE-bench's
/// convention): those the change must make pass and those it must keep
/// passing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestLists {
    /// Tests that fail on the base and must pass after the change.
    #[serde(rename = "FAIL_TO_PASS", default)]
    pub fail_to_pass: Vec<String>,
    /// Tests that pass on the base and must still pass (or be skipped).
    #[serde(rename = "PASS_TO_PASS", default)]
    pub pass_to_pass: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_lists_use_swe_bench_names() {
        let lists: TestLists =
            serde_json::from_str(r#"{"FAIL_TO_PASS":["a::b"],"PASS_TO_PASS":[]}"#)
                .expect("parses");
        assert_eq!(lists.fail_to_pass, vec!["a::b".to_string()]);
        let back = serde_json::to_string(&lists).expect("serializes");
        assert_eq!(back, r#"{"FAIL_TO_PASS":["a::b"],"PASS_TO_PASS":[]}"#);
    }
}
