//! Workers (team mode): "machines" — data directories with their own
//! `ARENA_MACHINE` — on one team database. One machine runs a series
//! (`arena series run`, which serves `--parallel` places itself); the
//! others run `arena worker`. They share its places, each place runs once;
//! a worker killed in the middle of a place loses it to another, which
//! finishes it without running again what had finished; the database
//! restarting mid-series loses nothing and doubles nothing.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arena_testdb::Cluster;
use arena_testserver::{ModelScript, TestServer};
use common::pack::{gold_agent_backend, sample, tasks};
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
        // A machine's own arena.toml when it has one (see `configure`).
        let own = self.dir.path().join(format!("arena-{machine}.toml"));
        let config = match own.exists() {
            true => own,
            false => self.dir.path().join("arena.toml"),
        };
        cmd.args(args)
            .env("ARENA_CONFIG", config)
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
        self.worker_with(machine, places, &[])
    }

    /// [`Team::worker`] with more environment (its git configuration).
    fn worker_with(&self, machine: &str, places: u32, env: &[(&str, &Path)]) -> Running {
        let mut cmd = self.arena(machine, &["worker", "--places", &places.to_string()]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Running(Some(
            cmd.stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        ))
    }

    /// Gives `machine` an arena.toml of its own: the team's, then `extra`.
    fn configure(&self, machine: &str, extra: &str) {
        let base = std::fs::read_to_string(self.dir.path().join("arena.toml")).unwrap();
        std::fs::write(
            self.dir.path().join(format!("arena-{machine}.toml")),
            format!("{base}\n{extra}"),
        )
        .unwrap();
    }

    /// The one series in the database, once there is one.
    async fn series_id(&self) -> String {
        until(Duration::from_secs(30), "the series to start", || {
            self.count_yet("SELECT COUNT(*) FROM series") >= 1
        })
        .await;
        self.sql("SELECT id FROM series ORDER BY created_at DESC LIMIT 1")
            .trim()
            .to_string()
    }

    /// Waits for `machine`'s word that it left series `id`, and returns it.
    async fn refusal(&self, id: &str, machine: &str) -> String {
        let sql = format!(
            "SELECT COUNT(*) FROM series_refusals WHERE series_id = '{id}' AND machine = '{machine}'"
        );
        until(
            Duration::from_secs(30),
            "the worker to leave the series",
            || self.count_yet(&sql) == 1,
        )
        .await;
        self.sql(&format!(
            "SELECT reason FROM series_refusals WHERE series_id = '{id}' AND machine = '{machine}'"
        ))
    }

    /// `arena series show ID --json` as `machine`.
    fn show(&self, machine: &str, id: &str) -> serde_json::Value {
        let out = self
            .arena(machine, &["series", "show", id, "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// `arena series run` of `runs` battles on `machine`, running: Q&A
    /// (`explainer@m1`, `debugger@m2`).
    fn series(&self, machine: &str, runs: u32, parallel: u32) -> Running {
        let contestants = ["explainer@m1", "debugger@m2"];
        self.series_of(
            machine,
            ("qa", "Say hello", contestants),
            runs,
            parallel,
            &[],
        )
    }

    /// The same for Coding: two native agents, `coder-a` and `coder-b`.
    fn coding_series(&self, machine: &str, runs: u32, parallel: u32) -> Running {
        self.coding_series_checked(machine, runs, parallel, &[])
    }

    /// [`Team::coding_series`] with more arguments (`--check CMD`).
    fn coding_series_checked(
        &self,
        machine: &str,
        runs: u32,
        parallel: u32,
        more: &[&str],
    ) -> Running {
        let contestants = ["native@coder-a", "native@coder-b"];
        self.series_of(
            machine,
            ("coding", "Add a file.", contestants),
            runs,
            parallel,
            more,
        )
    }

    fn series_of(
        &self,
        machine: &str,
        (kind, prompt, [first, second]): (&str, &str, [&str; 2]),
        runs: u32,
        parallel: u32,
        more: &[&str],
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
                ]
                .into_iter()
                .chain(more.iter().copied())
                .collect::<Vec<_>>(),
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
    // each from the series' base commit — and only that commit: the
    // remote's other branch (a secret) never reaches beta.
    team.push_to_a_remote();
    let base = git(&project, &["rev-parse", "HEAD"]).trim().to_string();
    let secret = secret_branch(&project);
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
    assert_only_the_base_was_fetched(&mirrors, &base, &secret);
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

/// A branch `secret` pushed beside `main` (which stays checked out): its
/// commit and the blob of its file.
fn secret_branch(project: &Path) -> [String; 2] {
    git(project, &["checkout", "-q", "-b", "secret"]);
    std::fs::write(project.join("secret.txt"), "the team's secret\n").unwrap();
    git(project, &["add", "secret.txt"]);
    git(project, &["commit", "-q", "-m", "secret"]);
    let commit = git(project, &["rev-parse", "HEAD"]).trim().to_string();
    let blob = git(project, &["rev-parse", "HEAD:secret.txt"])
        .trim()
        .to_string();
    git(project, &["push", "-q", "origin", "secret"]);
    git(project, &["checkout", "-q", "main"]);
    [commit, blob]
}

/// Each of a worker's fetched projects under `mirrors` holds `base` and
/// none of `absent`, and is shallow (its history was not fetched).
fn assert_only_the_base_was_fetched(mirrors: &Path, base: &str, absent: &[String]) {
    let mut seen = 0;
    for entry in std::fs::read_dir(mirrors).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.join(".git").is_dir() {
            continue;
        }
        seen += 1;
        let has = |object: &str| {
            Command::new("git")
                .args(["cat-file", "-e", object])
                .current_dir(&dir)
                .status()
                .unwrap()
                .success()
        };
        assert!(has(base), "{} lacks the base commit", dir.display());
        for object in absent {
            assert!(!has(object), "{object} was fetched into {}", dir.display());
        }
        let shallow = git(&dir, &["rev-parse", "--is-shallow-repository"]);
        assert_eq!(shallow.trim(), "true", "{}", dir.display());
    }
    assert_eq!(seen, 1, "one fetched project under {}", mirrors.display());
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

/// A check command is a command: a worker runs a teammate's only once its
/// user approved it (`arena team approve`) or listed it (`[team] checks`).
/// Until then it leaves the series, and says why in `series show`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_runs_a_teammates_check_only_once_its_user_approved_it() {
    let Some(team) = Team::new("a_worker_runs_a_teammates_check_only_once").await else {
        return;
    };
    // About a second a battle: alpha alone would take a while.
    team.server.set_model(
        "coder-a",
        write_turns_each("a.txt", "from a\n").first_token_delay(Duration::from_millis(400)),
    );
    team.server.set_model(
        "coder-b",
        write_turns_each("b.txt", "from b\n").first_token_delay(Duration::from_millis(400)),
    );
    team.git_project();
    team.push_to_a_remote();
    let check = "test -f a.txt || test -f b.txt";
    // Gamma lists the check in its arena.toml; beta has not allowed it.
    team.configure("gamma", &format!("[team]\nchecks = [\"{check}\"]\n"));
    let beta = team.worker("beta", 2);
    let gamma = team.worker("gamma", 1);
    team.serving("beta").await;
    team.serving("gamma").await;
    let alpha = team.coding_series_checked("alpha", 12, 1, &["--check", check]);
    let id = team.series_id().await;
    let short: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    let short = &short[short.len() - 8..];

    let reason = team.refusal(&id, "beta").await;
    assert!(
        reason.contains(&format!("check `{check}`"))
            && reason.contains(&format!("arena team approve {short}")),
        "{reason}"
    );
    let shown = team.show("alpha", &id);
    let refusals = shown["refusals"].as_array().unwrap();
    assert!(
        refusals
            .iter()
            .any(|r| r["machine"] == "beta" && r["reason"].as_str() == Some(reason.trim())),
        "{shown}"
    );
    let on_beta =
        format!("SELECT COUNT(*) FROM battles WHERE series_id = '{id}' AND machine = 'beta'");
    assert_eq!(team.count(&on_beta), 0, "beta ran an unapproved check");

    // Beta's user approves: the exact command, the remote and the machine
    // that started it are shown; the approval stays on beta.
    let out = team
        .arena("beta", &["team", "approve", &id, "--yes", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown_to_user = String::from_utf8_lossy(&out.stderr);
    assert!(
        shown_to_user.contains(check) && shown_to_user.contains("started on alpha"),
        "{shown_to_user}"
    );
    let approved: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(approved["checks"], serde_json::json!([check]), "{approved}");
    let kept =
        std::fs::read_to_string(team.dir.path().join("data-beta/team-approvals.json")).unwrap();
    assert!(kept.contains(check), "{kept}");

    until(Duration::from_secs(60), "beta to run a place", || {
        team.count_yet(&on_beta) >= 1
    })
    .await;
    let series = finished(alpha).await;
    drop((beta, gamma));
    assert_eq!(series["status"], "done", "{series}");
    each_coding_place_done(&team, &id, 12);
    // Every machine ran the check it was given, and it passed.
    for machine in ["alpha", "beta", "gamma"] {
        let checked = team.count(&format!(
            "SELECT COUNT(*) FROM contestants c JOIN battles b ON b.id = c.battle_id \
             WHERE b.series_id = '{id}' AND b.machine = '{machine}' AND c.check_result LIKE '%\"passed\":true%'"
        ));
        assert!(checked >= 1, "{machine} ran no passing check");
    }
    // Gamma never had to be asked.
    assert_eq!(
        team.count(&format!(
            "SELECT COUNT(*) FROM series_refusals WHERE series_id = '{id}' AND machine = 'gamma'"
        )),
        0
    );
}

/// A loopback git server that asks for credentials on every request
/// (HTTP 401, Basic) and counts the requests.
struct PrivateRemote {
    url: String,
    asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl PrivateRemote {
    fn start() -> PrivateRemote {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/private.git", listener.local_addr().unwrap());
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = asked.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(
                    b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"private\"\r\n\
                      Content-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        PrivateRemote { url, asked }
    }

    fn asked(&self) -> usize {
        self.asked.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Waits for the `n`-th series, then has the project forget its remote:
/// beta is another computer, with no clone of the project at the path the
/// series names (here both share one disk; else beta would fetch the
/// remote as its own project's). The series has recorded it already.
async fn started_elsewhere(team: &Team, n: i64) -> String {
    until(Duration::from_secs(30), "the series to start", || {
        team.count_yet("SELECT COUNT(*) FROM series") == n
    })
    .await;
    git(&team.project(), &["remote", "remove", "origin"]);
    team.series_id().await
}

/// A series' remote is the database's word, never a reason to lend this
/// machine's credentials: a worker whose git has a credential helper is
/// offered a series whose remote asks for credentials. Not allowed, it
/// is never contacted; allowed as a public remote, it is fetched with no
/// helper — which is never called either way — and the place is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_private_remote_is_never_fetched_with_the_workers_credentials() {
    let Some(team) = Team::new("a_private_remote_is_never_fetched").await else {
        return;
    };
    for model in ["coder-a", "coder-b"] {
        team.server.set_model(
            model,
            write_turns_each("a.txt", "x\n").first_token_delay(Duration::from_millis(500)),
        );
    }
    let remote = PrivateRemote::start();
    let project = team.git_project();
    git(&project, &["remote", "add", "origin", &remote.url]);
    // As if pushed there: the series records the remote as holding HEAD.
    git(
        &project,
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );
    // Beta's git configuration lends a credential helper, which records
    // each call.
    let called = team.dir.path().join("helper-called");
    let helper = team.dir.path().join("helper.sh");
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\necho username=beta\necho password=beta-secret\n",
            called.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let gitconfig = team.dir.path().join("beta.gitconfig");
    std::fs::write(
        &gitconfig,
        format!("[credential]\n\thelper = {}\n", helper.display()),
    )
    .unwrap();
    let env = [("GIT_CONFIG_GLOBAL", gitconfig.as_path())];

    // Not allowed: refused without a word to the remote.
    let alpha = team.coding_series("alpha", 4, 1);
    let id = started_elsewhere(&team, 1).await;
    let beta = team.worker_with("beta", 1, &env);
    let reason = team.refusal(&id, "beta").await;
    assert!(
        reason.contains("is not one this machine fetches") && reason.contains(&remote.url),
        "{reason}"
    );
    let shown = team.show("beta", &id);
    assert!(
        shown["refusals"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["machine"] == "beta"),
        "{shown}"
    );
    assert_eq!(remote.asked(), 0, "the remote was contacted");
    assert!(!called.exists(), "the credential helper was called");
    let series = finished(alpha).await;
    assert_eq!(series["status"], "done", "{series}");
    drop(beta);

    // Allowed as a public remote: fetched with no credentials, so the
    // private remote refuses it, and beta says so.
    team.configure(
        "beta",
        "[team]\npublic_remotes = [\"http://127.0.0.1:*/**\"]\n",
    );
    git(&project, &["remote", "add", "origin", &remote.url]);
    git(
        &project,
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );
    let alpha = team.coding_series("alpha", 4, 1);
    let id = started_elsewhere(&team, 2).await;
    let beta = team.worker_with("beta", 1, &env);
    let reason = team.refusal(&id, "beta").await;
    assert!(reason.contains("cannot fetch its project"), "{reason}");
    assert!(remote.asked() >= 1, "the public remote was not tried");
    assert!(!called.exists(), "the credential helper was called");
    let series = finished(alpha).await;
    drop(beta);
    assert_eq!(series["status"], "done", "{series}");
    assert_eq!(
        team.count("SELECT COUNT(*) FROM battles WHERE machine = 'beta'"),
        0
    );
}

/// A pack run is a series like any other: a worker on another machine
/// takes its places, fetches each task's base from the project's remote
/// (and nothing after it), seals it, and verifies its results with the
/// tests the series carries — it has no copy of the pack. Its verifier's
/// test command runs there only as that machine's user allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pack_run_is_shared_by_a_worker_on_another_machine() {
    if arena_core::agent::jail::jail_info().is_err() {
        assert!(std::env::var_os("ARENA_REQUIRE_JAIL").is_none(), "no jail");
        return;
    }
    let Some(team) = Team::new("a_pack_run_is_shared_by_a_worker").await else {
        return;
    };
    // The sample pack's repository, on a remote; its tip (past every
    // task's base, with the answers) is the secret beta must not fetch.
    let project = team.project();
    std::fs::remove_dir_all(&project).unwrap();
    let bundle = sample().join("repo.bundle");
    git(
        team.dir.path(),
        &["clone", "-q", &bundle.to_string_lossy(), "project"],
    );
    git(&project, &["remote", "remove", "origin"]);
    team.push_to_a_remote();
    let tip = git(&project, &["rev-parse", "HEAD"]).trim().to_string();
    // Both machines' configs: the scripted agent and room for verifiers.
    let config = team.dir.path().join("arena.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "stall_timeout_secs = 30",
        "stall_timeout_secs = 120\ncheck_timeout_secs = 300",
    ) + &gold_agent_backend();
    std::fs::write(&config, text).unwrap();
    team.server.set_model("gold", ModelScript::tokens(1));
    team.server.set_model("none", ModelScript::tokens(1));
    let pack_run = |pack: &Path, runs: &str| {
        team.arena(
            "alpha",
            &[
                "pack",
                "run",
                &pack.to_string_lossy(),
                "--project",
                &project.to_string_lossy(),
                "-c",
                "agent@gold",
                "-c",
                "agent@none",
                "--runs",
                runs,
                "--parallel",
                "1",
                "--json",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
    };

    // Beta's user has not allowed the tasks' test command: beta leaves
    // the run alone and says why; alpha runs it all.
    let beta = team.worker("beta", 2);
    team.serving("beta").await;
    let alone = finished(Running(Some(pack_run(&sample(), "1")))).await;
    drop(beta);
    let first = alone["series_id"].as_str().unwrap();
    assert_eq!(
        team.count(&format!(
            "SELECT COUNT(*) FROM battles WHERE series_id = '{first}' AND machine = 'beta'"
        )),
        0
    );
    let reason = team.sql(&format!(
        "SELECT reason FROM series_refusals WHERE series_id = '{first}' AND machine = 'beta'"
    ));
    assert!(
        reason.contains("python3 -m unittest") && reason.contains("not approved"),
        "{reason}"
    );

    // Allowed, beta shares the next run.
    team.configure("beta", "[team]\nchecks = [\"python3 -m unittest\"]\n");
    // A copy of the pack that alpha starts the run from, removed once the
    // run is recorded.
    let pack = team.dir.path().join("pack");
    copy_dir(&sample(), &pack);
    let beta = team.worker("beta", 2);
    team.serving("beta").await;
    let run = pack_run(&pack, "2");
    // Once the run is recorded the pack may go: what the verifiers need
    // travels with the series.
    until(Duration::from_secs(30), "the second run to start", || {
        team.count_yet("SELECT COUNT(*) FROM series") >= 2
    })
    .await;
    std::fs::remove_dir_all(&pack).unwrap();
    let report = finished(Running(Some(run))).await;
    drop(beta);
    let id = report["series_id"].as_str().unwrap();
    let on_beta = team.count(&format!(
        "SELECT COUNT(*) FROM battles WHERE series_id = '{id}' AND machine = 'beta'"
    ));
    assert!(
        on_beta > 0,
        "beta ran none of the places: {}",
        team.sql(&format!(
            "SELECT COALESCE(s.remote_url, '(no remote)') || ' ' || COALESCE(r.reason, '(no refusal)') \
             FROM series s LEFT JOIN series_refusals r ON r.series_id = s.id WHERE s.id = '{id}'"
        ))
    );
    // Every run verified, wherever it ran: the gold agent resolved each
    // task, the idle one none.
    let n = tasks().len() as u64;
    let by = |model: &str| {
        report["contestants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["model"] == model)
            .unwrap()
            .clone()
    };
    assert_eq!(by("gold")["resolved"], 2 * n, "{report}");
    assert_eq!(by("gold")["runs"], 2 * n, "{report}");
    assert_eq!(by("none")["resolved"], 0, "{report}");
    assert_eq!(by("none")["runs"], 2 * n, "{report}");
    let verified_on_beta = team.count(&format!(
        "SELECT COUNT(*) FROM goal_checks g JOIN contestants c ON c.id = g.contestant_id \
         JOIN battles b ON b.id = c.battle_id \
         WHERE b.series_id = '{id}' AND b.machine = 'beta' AND g.passed IS NOT NULL"
    ));
    assert_eq!(verified_on_beta, on_beta * 2);
    // Beta fetched the tasks' bases, shallow, and not the tip.
    let mirrors = team.dir.path().join("data-beta/mirrors");
    for entry in std::fs::read_dir(&mirrors).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.join(".git").is_dir() {
            continue;
        }
        let has = |object: &str| {
            Command::new("git")
                .args(["cat-file", "-e", object])
                .current_dir(&dir)
                .status()
                .unwrap()
                .success()
        };
        assert!(!has(&tip), "the tip was fetched into {}", dir.display());
        let shallow = git(&dir, &["rev-parse", "--is-shallow-repository"]);
        assert_eq!(shallow.trim(), "true", "{}", dir.display());
    }
}

/// Copies folder `from` to `to`, files only (the sample pack has no links).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
