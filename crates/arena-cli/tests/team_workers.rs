//! Workers (team mode): "machines" — data directories with their own
//! `ARENA_MACHINE` — on one team database. One machine runs a series
//! (`arena series run`, which serves `--parallel` places itself); the
//! others run `arena worker`. They share its places, each place runs once;
//! a worker killed in the middle of a place loses it to another, which
//! finishes it without running again what had finished; the database
//! restarting mid-series loses nothing and doubles nothing.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arena_testdb::Cluster;
use arena_testserver::{ModelScript, TestServer};
use common::{git, write_turns_each};

/// A team's set-up: the database, a scripted cloud server, one config.
struct Team {
    cluster: Cluster,
    db: String,
    dir: tempfile::TempDir,
    server: TestServer,
}

impl Team {
    async fn new(test: &str) -> Option<Team> {
        let cluster = Cluster::for_test(test)?;
        let db = cluster.create_database().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("project/.git")).unwrap();
        let server = TestServer::start().await.unwrap();
        std::fs::write(
            dir.path().join("arena.toml"),
            format!(
                "[[provider]]\nname = \"cloud\"\nkind = \"openai\"\nbase_url = \"{}\"\n\
                 lane = \"cloud\"\nmax_concurrency = 16\n\n\
                 [limits]\nbackoff_base_ms = 20\nstall_timeout_secs = 30\n",
                server.base_url()
            ),
        )
        .unwrap();
        Some(Team {
            cluster,
            db,
            dir,
            server,
        })
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    /// `arena ARGS` as `machine`.
    fn arena(&self, machine: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_arena"));
        cmd.args(args)
            .env("ARENA_CONFIG", self.dir.path().join("arena.toml"))
            .env(
                "ARENA_DATA_DIR",
                self.dir.path().join(format!("data-{machine}")),
            )
            .env("ARENA_MACHINE", machine)
            // The tests' remotes are folders here.
            .env("ARENA_ALLOW_LOCAL_REMOTES", "1")
            .env("ARENA_DATABASE_URL", self.cluster.url(&self.db))
            .env("ARENA_DATABASE_PASSWORD", self.cluster.password())
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        cmd
    }

    /// `arena worker --places N` on `machine`, running (killed when
    /// dropped, so a failing test leaves no worker behind).
    fn worker(&self, machine: &str, places: u32) -> Running {
        Running(Some(
            self.arena(machine, &["worker", "--places", &places.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        ))
    }

    /// `arena series run` of `runs` battles on `machine`, running: Q&A
    /// (`explainer@m1`, `debugger@m2`).
    fn series(&self, machine: &str, runs: u32, parallel: u32) -> Running {
        let contestants = ["explainer@m1", "debugger@m2"];
        self.series_of(machine, ("qa", "Say hello", contestants), runs, parallel)
    }

    /// The same for Coding: two native agents, `coder-a` and `coder-b`.
    fn coding_series(&self, machine: &str, runs: u32, parallel: u32) -> Running {
        let contestants = ["native@coder-a", "native@coder-b"];
        self.series_of(
            machine,
            ("coding", "Add a file.", contestants),
            runs,
            parallel,
        )
    }

    fn series_of(
        &self,
        machine: &str,
        (kind, prompt, [first, second]): (&str, &str, [&str; 2]),
        runs: u32,
        parallel: u32,
    ) -> Running {
        let (project, runs, parallel) = (
            self.project().to_string_lossy().into_owned(),
            runs.to_string(),
            parallel.to_string(),
        );
        let child = self
            .arena(
                machine,
                &[
                    "series",
                    "run",
                    "--type",
                    kind,
                    "--prompt",
                    prompt,
                    "--project",
                    &project,
                    "-c",
                    first,
                    "-c",
                    second,
                    "--runs",
                    &runs,
                    "--parallel",
                    &parallel,
                    "--no-analysis",
                    "--json",
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Running(Some(child))
    }

    /// The project as a git repository of one commit.
    fn git_project(&self) -> PathBuf {
        let project = self.project();
        std::fs::remove_dir_all(project.join(".git")).unwrap();
        git(&project, &["init", "-q", "-b", "main"]);
        git(&project, &["config", "user.email", "arena@example.invalid"]);
        git(&project, &["config", "user.name", "Arena Test"]);
        std::fs::write(project.join("README.md"), "hello\n").unwrap();
        git(&project, &["add", "."]);
        git(&project, &["commit", "-q", "-m", "initial"]);
        project
    }

    /// Pushes the project to a bare repository, its `origin`.
    fn push_to_a_remote(&self) {
        let (project, origin) = (self.project(), self.dir.path().join("origin.git"));
        git(self.dir.path(), &["init", "-q", "--bare", "origin.git"]);
        git(
            &project,
            &["remote", "add", "origin", &origin.to_string_lossy()],
        );
        git(&project, &["push", "-q", "origin", "main"]);
    }

    /// Chat requests the scripted server answered.
    fn answers_asked(&self) -> usize {
        self.server
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .count()
    }

    /// Waits until `machine`'s worker says it serves.
    async fn serving(&self, machine: &str) {
        let sql = format!("SELECT COUNT(*) FROM live.workers WHERE machine = '{machine}'");
        until(
            Duration::from_secs(20),
            "the worker to say it serves",
            || self.count_yet(&sql) == 1,
        )
        .await;
    }

    fn sql(&self, sql: &str) -> String {
        self.cluster.psql(&self.db, sql).unwrap()
    }

    fn count(&self, sql: &str) -> i64 {
        self.sql(sql).trim().parse().unwrap()
    }

    /// [`Team::count`] while the schema may not be there yet (the first
    /// process to open the database makes it): 0 until it is.
    fn count_yet(&self, sql: &str) -> i64 {
        match self.cluster.psql(&self.db, sql) {
            Ok(out) => out.trim().parse().unwrap_or(0),
            Err(_) => 0,
        }
    }
}

/// A process of the test's, killed when dropped.
struct Running(Option<Child>);

impl Running {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }

    /// The process, no longer killed when dropped.
    fn keep(mut self) -> Child {
        self.0.take().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits (off the runtime) for `child`, and reads the series it printed.
async fn finished(running: Running) -> serde_json::Value {
    let child = running.keep();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "series run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Polls `cond` every 100 ms for up to `within`.
async fn until(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every place of the one series done, each slot's battle once.
fn each_place_ran_once(team: &Team, runs: i64) {
    assert_eq!(
        team.count("SELECT COUNT(*) FROM series_places WHERE state = 'done'"),
        runs
    );
    assert_eq!(
        team.count("SELECT COUNT(DISTINCT series_slot) FROM battles WHERE series_id IS NOT NULL"),
        runs
    );
    assert_eq!(team.count("SELECT COUNT(*) FROM battles"), runs);
    assert_eq!(
        team.count("SELECT COUNT(*) FROM battles WHERE status <> 'done'"),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_on_two_machines_share_a_series() {
    let Some(team) = Team::new("workers_on_two_machines_share_a_series").await else {
        return;
    };
    for model in ["m1", "m2"] {
        team.server
            .set_model(model, ModelScript::tokens(10).rate(40.0));
    }
    let beta = team.worker("beta", 2);
    let series = finished(team.series("alpha", 24, 2)).await;
    // Alpha sees beta's worker, still serving, in its status.
    let out = team.arena("alpha", &["status", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let workers = status["workers"].as_array().unwrap();
    assert!(
        workers
            .iter()
            .any(|w| w["machine"] == "beta" && w["role"] == "worker" && w["places"] == 2),
        "{status}"
    );
    assert!(
        status["machines"]
            .as_array()
            .unwrap()
            .contains(&"beta".into()),
        "{status}"
    );
    drop(beta);
    // Any machine prints the series' report, made from the database.
    let id = series["id"].as_str().unwrap();
    let out = team
        .arena("beta", &["series", "report", id, "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["contestants"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );

    assert_eq!(series["status"], "done", "{series}");
    assert_eq!(series["runs_done"], 24);
    assert_eq!(series["machine"], "alpha");
    each_place_ran_once(&team, 24);
    let by_machine =
        team.sql("SELECT machine, COUNT(*) FROM battles GROUP BY machine ORDER BY machine");
    let ran: Vec<(&str, i64)> = by_machine
        .lines()
        .map(|l| {
            let (m, n) = l.split_once('|').unwrap();
            (m, n.parse().unwrap())
        })
        .collect();
    assert_eq!(ran.len(), 2, "both machines ran battles: {by_machine}");
    // Every answer was asked for once.
    assert_eq!(team.answers_asked(), 48);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_workers_place_is_finished_by_another_and_nothing_done_runs_twice() {
    let Some(team) = Team::new("a_killed_workers_place_is_finished_by_another").await else {
        return;
    };
    // m1 takes about 3 s an answer, m2 a quarter of a second.
    team.server
        .set_model("m1", ModelScript::tokens(30).rate(10.0));
    team.server
        .set_model("m2", ModelScript::tokens(10).rate(40.0));
    let beta = team.worker("beta", 1);
    // Beta is up and waiting before the series opens its places.
    team.serving("beta").await;
    let alpha = team.series("alpha", 3, 1);
    // Beta's battle with its fast answer done and its slow one under way.
    until(Duration::from_secs(30), "beta's battle half done", || {
        team.count_yet(
            "SELECT COUNT(*) FROM contestants c JOIN battles b ON b.id = c.battle_id \
             WHERE b.machine = 'beta' AND c.status = 'done'",
        ) >= 1
            && team.count_yet(
                "SELECT COUNT(*) FROM contestants c JOIN battles b ON b.id = c.battle_id \
                 WHERE b.machine = 'beta' AND c.status = 'running'",
            ) >= 1
    })
    .await;
    // SIGKILL: no goodbye, its claims and leases just stop being renewed.
    let mut beta = beta;
    beta.child().kill().unwrap();
    beta.child().wait().unwrap();
    let killed_at = Instant::now();
    let killed_battle = team
        .sql("SELECT id FROM battles WHERE machine = 'beta' ORDER BY created_at LIMIT 1")
        .trim()
        .to_string();

    let series = finished(alpha).await;
    assert_eq!(series["status"], "done", "{series}");
    // Taken over once its claim and lease lapsed (15 s), then finished.
    assert!(
        killed_at.elapsed() < Duration::from_secs(45),
        "the place took {:?} to finish",
        killed_at.elapsed()
    );
    each_place_ran_once(&team, 3);
    // The killed battle's finished answer was kept; only the one under way
    // ran again: 3 battles x 2 answers + 1.
    assert_eq!(team.answers_asked(), 7);
    assert_eq!(
        team.count(&format!(
            "SELECT MAX(attempts) FROM contestants WHERE battle_id = '{killed_battle}' AND model = 'm2'"
        )),
        1
    );
    assert!(
        team.count(&format!(
            "SELECT attempts FROM series_places WHERE slot = (SELECT series_slot FROM battles WHERE id = '{killed_battle}')"
        )) >= 2,
        "the killed worker's place was claimed again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_restart_mid_series_loses_and_doubles_nothing() {
    let Some(team) = Team::new("a_database_restart_mid_series").await else {
        return;
    };
    for model in ["m1", "m2"] {
        team.server
            .set_model(model, ModelScript::tokens(10).rate(20.0));
    }
    let beta = team.worker("beta", 2);
    let alpha = team.series("alpha", 16, 2);
    until(Duration::from_secs(30), "a few battles done", || {
        team.count_yet("SELECT COUNT(*) FROM series_places WHERE state = 'done'") >= 3
    })
    .await;
    team.cluster.restart().unwrap();
    let series = finished(alpha).await;
    drop(beta);
    assert_eq!(series["status"], "done", "{series}");
    each_place_ran_once(&team, 16);
    assert_eq!(
        team.count("SELECT COUNT(*) FROM contestants WHERE status <> 'done'"),
        0
    );
    // No answer was asked for twice.
    assert_eq!(team.answers_asked(), 32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_coding_series_runs_on_other_machines_from_the_projects_remote() {
    let Some(team) = Team::new("a_coding_series_runs_on_other_machines").await else {
        return;
    };
    team.server
        .set_model("coder-a", write_turns_each("a.txt", "from a\n"));
    team.server
        .set_model("coder-b", write_turns_each("b.txt", "from b\n"));
    let project = team.git_project();
    let beta = team.worker("beta", 2);
    team.serving("beta").await;

    // No remote: the project is only on alpha, and beta says so.
    let alone = finished(team.coding_series("alpha", 2, 1)).await;
    assert_eq!(alone["status"], "done", "{alone}");
    let id = alone["id"].as_str().unwrap();
    assert_eq!(
        team.count(&format!(
            "SELECT COUNT(*) FROM battles WHERE series_id = '{id}' AND machine = 'alpha'"
        )),
        2
    );
    let reason = team.sql(&format!(
        "SELECT reason FROM series_refusals WHERE series_id = '{id}' AND machine = 'beta'"
    ));
    assert!(reason.contains("no git remote"), "{reason}");

    // Pushed to a remote, beta fetches the project and runs places too,
    // each from the series' base commit.
    team.push_to_a_remote();
    let base = git(&project, &["rev-parse", "HEAD"]).trim().to_string();
    let shared = finished(team.coding_series("alpha", 6, 1)).await;
    drop(beta);
    assert_eq!(shared["status"], "done", "{shared}");
    let id = shared["id"].as_str().unwrap();
    let on_beta = team.sql(&format!(
        "SELECT id || '|' || project_path || '|' || base_commit FROM battles \
         WHERE series_id = '{id}' AND machine = 'beta'"
    ));
    assert!(
        !on_beta.trim().is_empty(),
        "beta ran none of the places: {}",
        team.sql(&format!(
            "SELECT COALESCE(s.remote_url, '(no remote)') || ' ' || COALESCE(r.reason, '(no refusal)') \
             FROM series s LEFT JOIN series_refusals r ON r.series_id = s.id WHERE s.id = '{id}'"
        ))
    );
    let mirrors = team.dir.path().join("data-beta/mirrors");
    for line in on_beta.lines() {
        let parts: Vec<&str> = line.split('|').collect();
        assert!(parts[1].starts_with(&*mirrors.to_string_lossy()), "{line}");
        assert_eq!(parts[2], base, "{line}");
    }
    each_coding_place_done(&team, id, 6);
    // The user's project is as it was: the agents wrote in worktrees.
    assert!(!project.join("a.txt").exists() && !project.join("b.txt").exists());

    // Alpha applies a change beta's worker made: from the database, into
    // the series' project here.
    let battle = on_beta.lines().next().unwrap().split('|').next().unwrap();
    let out = team
        .arena("alpha", &["battle", "apply", battle, "1", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let applied = format!(
        "{} / {}",
        String::from_utf8_lossy(&out.stdout),
        team.sql(&format!(
            "SELECT b.machine || ' ' || c.model || ' ' || c.status || ' ' || length(p.patch) || ' ' || COALESCE(c.error, '') || ' ' || COALESCE(c.diff_stats, '-') || ' ' || COALESCE((SELECT substr(output, 1, 300) FROM answers a WHERE a.contestant_id = c.id), '') \
             FROM contestants c JOIN battles b ON b.id = c.battle_id LEFT JOIN patches p ON p.contestant_id = c.id WHERE b.series_id = '{id}'"
        ))
    );
    assert_eq!(
        std::fs::read_to_string(project.join("a.txt"))
            .ok()
            .as_deref(),
        Some("from a\n"),
        "{applied}: {:?}",
        std::fs::read_dir(&project)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect::<Vec<_>>()
    );
}

/// Every battle of Coding series `id` done with both contestants done
/// and their diffs in the database.
fn each_coding_place_done(team: &Team, id: &str, runs: i64) {
    assert_eq!(
        team.count(&format!(
            "SELECT COUNT(*) FROM battles WHERE series_id = '{id}' AND status = 'done'"
        )),
        runs
    );
    assert_eq!(
        team.count(&format!(
            "SELECT COUNT(*) FROM contestants c JOIN battles b ON b.id = c.battle_id \
             WHERE b.series_id = '{id}' AND c.status = 'done'"
        )),
        runs * 2
    );
    assert_eq!(
        team.count(&format!(
            "SELECT COUNT(*) FROM patches p JOIN contestants c ON c.id = p.contestant_id \
             JOIN battles b ON b.id = c.battle_id WHERE b.series_id = '{id}' \
             AND p.patch LIKE '%+++ b/%.txt%'"
        )),
        runs * 2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_coding_place_whose_worker_died_is_finished_on_another_machine() {
    let Some(team) = Team::new("a_coding_place_whose_worker_died").await else {
        return;
    };
    // coder-a takes 3 s a request (two requests an answer); coder-b is quick.
    team.server.set_model(
        "coder-a",
        write_turns_each("a.txt", "from a\n").first_token_delay(Duration::from_secs(3)),
    );
    team.server
        .set_model("coder-b", write_turns_each("b.txt", "from b\n"));
    team.git_project();
    team.push_to_a_remote();

    let mut beta = team.worker("beta", 1);
    team.serving("beta").await;
    let alpha = team.coding_series("alpha", 2, 1);
    until(Duration::from_secs(40), "beta's battle half done", || {
        team.count_yet(
            "SELECT COUNT(*) FROM contestants c JOIN battles b ON b.id = c.battle_id \
             WHERE b.machine = 'beta' AND c.model = 'coder-b' AND c.status = 'done'",
        ) == 1
            && team.count_yet(
                "SELECT COUNT(*) FROM contestants c JOIN battles b ON b.id = c.battle_id \
                 WHERE b.machine = 'beta' AND c.model = 'coder-a' AND c.status = 'running'",
            ) == 1
    })
    .await;
    let killed = team
        .sql("SELECT id FROM battles WHERE machine = 'beta'")
        .trim()
        .to_string();
    beta.child().kill().unwrap();
    beta.child().wait().unwrap();

    let series = finished(alpha).await;
    assert_eq!(series["status"], "done", "{series}");
    let id = series["id"].as_str().unwrap();
    each_coding_place_done(&team, id, 2);
    // The battle moved to alpha, which finished it in its own project's
    // results folder; coder-b's finished answer was not asked for again.
    assert_eq!(
        team.sql(&format!(
            "SELECT machine FROM battles WHERE id = '{killed}'"
        ))
        .trim(),
        "alpha"
    );
    assert_eq!(
        team.server.requests_for("coder-b").len(),
        4,
        "two requests a battle"
    );
}
