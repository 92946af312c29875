//! Nothing an agent prints or writes is unbounded: 500 MB of output with no
//! newline and a 1 GB file leave Arena's memory flat (this test binary has
//! this one test, so the process's peak RSS is Arena's), and a file over
//! `limits.max_file_bytes` is a clear contestant error.

mod common;

use std::path::Path;

use arena_core::battle::ContestantStatus;
use arena_core::config::CustomBackend;
use arena_core::Battle;
use arena_testserver::ModelScript;
use common::*;

/// The process's peak resident memory, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

async fn run(h: &mut Harness, project: &Path, script: &str, check: Option<&str>) -> Battle {
    let command = vec!["bash".into(), "-c".into(), script.to_string()];
    h.reconfigure(|config| {
        config.backends = vec![CustomBackend {
            name: "fake".into(),
            command,
        }];
        config.limits.max_file_bytes = 1536 * 1024 * 1024;
    });
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
    run_coding(h, project, &["fake@m1", "fake@m2"], check).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_output_and_huge_files_leave_arena_flat_and_named() {
    let mut h = Harness::new().await;
    let project = repo();
    let start = peak_rss();
    // 250 MB of output each (500 MB in all) without a newline, a 1 GB file,
    // a 10 GB sparse file (over the limit), and a normal edit; the check
    // prints 100 MB too.
    let script = r#"
head -c 250000000 /dev/zero | tr '\0' x
echo
echo "after the flood"
head -c 1000000000 /dev/zero > big.bin && echo "wrote big.bin"
truncate -s 10G sparse.bin 2>/dev/null || echo "sparse refused"
echo "hello" > small.txt
"#;
    let b = run(
        &mut h,
        project.path(),
        script,
        Some("head -c 100000000 /dev/zero | tr '\\0' y; true"),
    )
    .await;
    let peak = peak_rss();
    for c in &b.contestants {
        assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
        let out = c.output.clone().unwrap_or_default();
        assert!(out.len() <= 3 * 1024 * 1024, "{}", out.len());
        assert!(
            // One line of 250 MB: its ends are kept, its middle named.
            out.contains("bytes of this line dropped"),
            "{}",
            &out[out.len().saturating_sub(300)..]
        );
        // The end of the output survives the flood.
        assert!(
            out.contains("after the flood"),
            "{}",
            &out[out.len().saturating_sub(300)..]
        );
        // The check runs on the change as it would be applied, and a file
        // the diff leaves out (too big) cannot be: the check says so.
        let check = c.check.as_ref().unwrap();
        assert!(!check.passed, "{check:?}");
        assert!(
            check.output_tail.contains("could not be applied"),
            "{}",
            check.output_tail
        );
        let patch =
            std::fs::read_to_string(c.result_path.as_ref().unwrap().with_file_name("diff.patch"))
                .unwrap();
        assert!(patch.len() < 64 * 1024, "{}", patch.len());
        assert!(patch.contains("+hello"), "{patch}");
        assert!(
            patch.contains("Binary files /dev/null and b/big.bin differ"),
            "{patch}"
        );
        let wt = c.worktree.clone().unwrap();
        let sparse = wt
            .join("sparse.bin")
            .metadata()
            .map(|m| m.len())
            .unwrap_or(0);
        assert!(sparse <= 1536 * 1024 * 1024, "{sparse}");
        let md = std::fs::read_to_string(c.result_path.as_ref().unwrap()).unwrap();
        assert!(
            md.contains("big.bin") && md.contains("limit for one file"),
            "{md}"
        );
    }
    assert!(
        peak < start + 200 * 1024 * 1024,
        "peak RSS {} MB (from {} MB)",
        peak / (1024 * 1024),
        start / (1024 * 1024)
    );

    // A check that prints 100 MB on a change that applies: its tail stays
    // small and says what was dropped.
    let b = run(
        &mut h,
        project.path(),
        "echo hello > small.txt",
        Some("head -c 100000000 /dev/zero | tr '\\0' y; true"),
    )
    .await;
    for c in &b.contestants {
        let check = c.check.as_ref().unwrap();
        assert!(check.passed, "{check:?}");
        assert!(
            check.output_tail.len() < 200_000,
            "{}",
            check.output_tail.len()
        );
        assert!(
            check.output_tail.contains("dropped"),
            "{}",
            &check.output_tail[check.output_tail.len().saturating_sub(300)..]
        );
    }
    assert!(
        peak_rss() < start + 200 * 1024 * 1024,
        "peak RSS {} MB (from {} MB)",
        peak_rss() / (1024 * 1024),
        start / (1024 * 1024)
    );

    // A writer stopped by the file-size limit is a contestant error that
    // names the limit.
    let b = run(
        &mut h,
        project.path(),
        "exec truncate -s 10G sparse.bin",
        None,
    )
    .await;
    for c in &b.contestants {
        assert_eq!(c.status, ContestantStatus::Error);
        let error = c.error.clone().unwrap_or_default();
        assert!(error.contains("limits.max_file_bytes"), "{error}");
    }
}
