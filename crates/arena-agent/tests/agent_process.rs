//! Agent processes with a real executable (tests/fixtures/fake-agent):
//! streaming output, failures with the tail of stderr, timeouts and cancel
//! that take down the whole process group, and the minimal environment.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use arena_agent::process::{self, run, Launch, Line};
use tokio_util::sync::CancellationToken;

fn fake_agent() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-agent")
}

fn launch(args: &[&str], timeout: Duration) -> Launch {
    Launch {
        program: fake_agent(),
        args: args.iter().map(|a| a.to_string()).collect(),
        cwd: std::env::temp_dir(),
        env: vec![("AGENT_KEY".into(), "k-123".into())],
        timeout,
        sandbox: None,
        bounds: Default::default(),
        door: None,
        registries: None,
    }
}

fn alive(pid: i32) -> bool {
    // A zombie counts as gone: check /proc for its state.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.split(") ").nth(1).unwrap_or("").starts_with('Z'),
        Err(_) => false,
    }
}

fn pids(file: &std::path::Path) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(text) = std::fs::read_to_string(file) {
            let pids: Vec<i32> = text
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if pids.len() == 2 {
                return pids;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the fake agent never wrote its PIDs"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn wait_gone(pids: &[i32]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) {
        assert!(Instant::now() < deadline, "orphans left: {pids:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn output_streams_line_by_line() {
    let mut seen = Vec::new();
    let started = Instant::now();
    let mut stamps = Vec::new();
    let exit = run(
        &launch(&["stream", "5"], Duration::from_secs(10)),
        &CancellationToken::new(),
        |l| {
            stamps.push(started.elapsed());
            seen.push(l);
        },
    )
    .await
    .unwrap();
    assert!(exit.success(), "{exit:?}");
    let lines: Vec<_> = (1..=5).map(|i| Line::Stdout(format!("line {i}"))).collect();
    assert_eq!(seen, lines);
    // Lines arrive as written, not all at the end.
    assert!(
        stamps[4] - stamps[0] >= Duration::from_millis(60),
        "{stamps:?}"
    );
}

#[tokio::test]
async fn a_failing_agent_reports_the_tail_of_stderr() {
    let exit = run(
        &launch(&["fail"], Duration::from_secs(10)),
        &CancellationToken::new(),
        |_| {},
    )
    .await
    .unwrap();
    assert!(!exit.success());
    assert_eq!(exit.code, Some(3));
    let why = exit.describe("fake-agent");
    assert!(
        why.starts_with("fake-agent exited with status 3: "),
        "{why}"
    );
    assert!(why.ends_with("fatal: the model refused the edit"), "{why}");
}

#[tokio::test]
async fn a_hung_agent_is_killed_at_its_timeout_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let started = Instant::now();
    let exit = run(
        &launch(
            &["hang", pidfile.to_str().unwrap()],
            Duration::from_millis(500),
        ),
        &CancellationToken::new(),
        |_| {},
    )
    .await
    .unwrap();
    assert!(exit.timed_out);
    assert!(!exit.success());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(exit.describe("fake-agent").contains("timed out"));
    wait_gone(&pids(&pidfile)).await;
}

#[tokio::test]
async fn cancel_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let token = CancellationToken::new();
    let task = {
        let (token, launch) = (
            token.clone(),
            launch(
                &["hang", pidfile.to_str().unwrap()],
                Duration::from_secs(60),
            ),
        );
        tokio::spawn(async move { run(&launch, &token, |_| {}).await })
    };
    let pids = tokio::task::spawn_blocking({
        let pidfile = pidfile.clone();
        move || pids(&pidfile)
    })
    .await
    .unwrap();
    assert!(pids.iter().all(|p| alive(*p)));
    token.cancel();
    let exit = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(exit.cancelled);
    wait_gone(&pids).await;
}

#[tokio::test]
async fn the_environment_is_an_allowlist_plus_the_agents_own_key() {
    std::env::set_var("ARENA_TEST_SECRET_FOR_AGENTS", "must-not-leak");
    let mut out = Vec::new();
    run(
        &launch(&["env"], Duration::from_secs(10)),
        &CancellationToken::new(),
        |l| {
            if let Line::Stdout(l) = l {
                out.push(l)
            }
        },
    )
    .await
    .unwrap();
    assert!(out.iter().any(|l| l == "AGENT_KEY=k-123"));
    assert!(out.iter().any(|l| l.starts_with("PATH=")));
    assert!(out.iter().any(|l| l == "TERM=dumb"));
    assert!(!out.iter().any(|l| l.contains("must-not-leak")));
}

#[tokio::test]
async fn output_past_the_bound_is_dropped_and_the_run_goes_on() {
    // 8 MiB with no newline at all, then a line, then more lines.
    let mut l = launch(&["flood", "8388608"], Duration::from_secs(30));
    l.bounds.output_bytes = 3 * 1024 * 1024;
    let mut handed = 0usize;
    let mut longest = 0usize;
    let exit = process::run(&l, &CancellationToken::new(), |line| {
        let (Line::Stdout(t) | Line::Stderr(t)) = line;
        handed += t.len() + 1;
        longest = longest.max(t.len());
    })
    .await
    .unwrap();
    assert!(exit.success(), "{exit:?}");
    assert!(handed <= 3 * 1024 * 1024, "{handed}");
    assert!(longest <= process::MAX_LINE, "{longest}");
    assert!(exit.output_dropped >= 5 * 1024 * 1024, "{exit:?}");
}

#[tokio::test]
async fn a_file_over_the_bound_stops_the_writer_with_a_clear_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = launch(&["bigfile", "big.bin", "4194304"], Duration::from_secs(30));
    l.cwd = dir.path().to_path_buf();
    l.bounds.file_bytes = Some(1024 * 1024);
    let exit = process::run(&l, &CancellationToken::new(), |_| {})
        .await
        .unwrap();
    assert!(exit.hit_file_limit(), "{exit:?}");
    let reason = exit.describe("fake");
    assert!(reason.contains("limits.max_file_bytes"), "{reason}");
    let size = std::fs::metadata(dir.path().join("big.bin")).unwrap().len();
    assert!(size <= 1024 * 1024, "{size}");
}

#[tokio::test]
async fn a_flood_keeps_its_first_and_last_lines_with_a_note_between() {
    // A first line, a 200 MB line on stderr, then the last line on stdout
    // (the summary an agent ends with): the ends of the flood line are
    // kept with a note between, and the last line survives.
    let mut l = launch(&["flood-then-last", "209715200"], Duration::from_secs(60));
    l.bounds.output_bytes = 2 * 1024 * 1024;
    let mut lines: Vec<Line> = Vec::new();
    let exit = process::run(&l, &CancellationToken::new(), |line| lines.push(line))
        .await
        .unwrap();
    assert!(exit.success(), "{exit:?}");
    let texts: Vec<&str> = lines
        .iter()
        .map(|l| match l {
            Line::Stdout(t) | Line::Stderr(t) => t.as_str(),
        })
        .collect();
    assert_eq!(texts.first(), Some(&"first line"));
    assert!(texts.contains(&"the last line"), "{}", texts.len());
    let flood = texts
        .iter()
        .find(|t| t.contains("bytes of this line dropped"))
        .unwrap_or_else(|| {
            let sizes: Vec<usize> = texts.iter().map(|t| t.len()).collect();
            panic!(
                "no cut flood line: {sizes:?} {:?}",
                texts
                    .iter()
                    .map(|t| &t[..t.len().min(80)])
                    .collect::<Vec<_>>()
            )
        });
    assert!(flood.starts_with("yyyy") && flood.ends_with("yyyy"));
    let handed: usize = texts.iter().map(|t| t.len() + 1).sum();
    assert!(handed <= 2 * 1024 * 1024, "{handed}");
    assert!(texts.iter().all(|t| t.len() <= process::MAX_LINE));
    assert!(exit.output_dropped >= 198 * 1024 * 1024, "{exit:?}");
}

#[tokio::test]
async fn past_the_budget_the_last_lines_are_kept_after_a_note() {
    // Many lines: the first half of the budget as they come, the last
    // lines at the end, a note of what was dropped between.
    let mut l = launch(&["stream", "2000"], Duration::from_secs(60));
    l.bounds.output_bytes = 4096;
    let mut texts: Vec<String> = Vec::new();
    let exit = process::run(&l, &CancellationToken::new(), |line| {
        let (Line::Stdout(t) | Line::Stderr(t)) = line;
        texts.push(t);
    })
    .await
    .unwrap();
    assert_eq!(texts.first().map(String::as_str), Some("line 1"));
    assert_eq!(texts.last().map(String::as_str), Some("line 2000"));
    let note = texts
        .iter()
        .position(|t| t.contains("bytes of output were dropped here"))
        .expect("a note");
    assert!(texts[note - 1].starts_with("line "));
    assert!(texts[note + 1].starts_with("line "));
    assert!(exit.output_dropped > 0);
    let handed: usize = texts.iter().map(|t| t.len() + 1).sum();
    assert!(handed <= 4096, "{handed}");
}
