//! The IPC surface end to end, without a webview: the real app builder,
//! context and capabilities on Tauri's mock runtime, a real engine over a
//! temporary data directory, and a scripted provider on loopback.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arena_testserver::{ModelScript, TestServer};
use serde_json::{json, Value};
use tauri::ipc::{CallbackFn, InvokeBody, InvokeResponseBody};
use tauri::test::{get_ipc_response, mock_builder, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{Manager, WebviewWindow};

use crate::state::AppState;

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The commands registered in `generate_handler!` in lib.rs.
fn registered_commands() -> BTreeSet<String> {
    let source = read("src-tauri/lib.rs");
    let start = source
        .find("generate_handler![")
        .expect("the invoke handler");
    let end = start + source[start..].find(']').expect("end of the handler list");
    // Each entry is `module::command` (commands.rs, packs.rs, coding.rs).
    source[start + "generate_handler![".len()..end]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.rsplit("::").next().unwrap_or(s).to_string())
        .collect()
}

/// Links in rendered Markdown open through the opener plugin, limited to
/// its default URL scope (http, https, mailto, tel).
const PLUGIN_PERMISSIONS: [&str; 2] = ["opener:allow-open-url", "opener:allow-default-urls"];

/// Every registered command has exactly one permission, the main window's
/// capability grants exactly those plus [`PLUGIN_PERMISSIONS`], and there is
/// no other capability.
#[test]
fn the_window_may_call_exactly_the_registered_commands() {
    let commands = registered_commands();
    assert!(commands.contains("subscribe_battle"), "{commands:?}");

    let manifest: toml::Value =
        toml::from_str(&read("src-tauri/permissions/app.toml")).expect("app.toml");
    let mut granted_by = BTreeMap::new();
    for p in manifest["permission"].as_array().expect("permissions") {
        let id = p["identifier"].as_str().expect("identifier");
        let allow = p["commands"]["allow"].as_array().expect("commands.allow");
        assert_eq!(allow.len(), 1, "{id} should allow one command");
        assert!(p["commands"].get("deny").is_none(), "{id}");
        granted_by.insert(id.to_string(), allow[0].as_str().expect("name").to_string());
    }
    let permitted: BTreeSet<String> = granted_by.values().cloned().collect();
    assert_eq!(
        permitted, commands,
        "permissions/app.toml vs generate_handler!"
    );

    let capability: Value =
        serde_json::from_str(&read("src-tauri/capabilities/default.json")).expect("default.json");
    assert_eq!(capability["windows"], json!(["main"]));
    let listed: BTreeSet<String> = capability["permissions"]
        .as_array()
        .expect("permissions")
        .iter()
        .map(|p| p.as_str().expect("a permission identifier").to_string())
        .collect();
    let expected: BTreeSet<String> = granted_by
        .keys()
        .cloned()
        .chain(PLUGIN_PERMISSIONS.map(String::from))
        .collect();
    assert_eq!(listed, expected, "capabilities/default.json vs app.toml");
    let capabilities =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("src-tauri/capabilities"))
            .expect("capabilities folder")
            .count();
    assert_eq!(capabilities, 1, "only the default capability");
}

/// Messages the app sent over channels, by channel id.
type Sent = Arc<Mutex<Vec<(u32, Value)>>>;

struct App {
    _app: tauri::App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    sent: Sent,
}

impl App {
    fn invoke(&self, cmd: &str, args: Value) -> Result<Value, Value> {
        let request = InvokeRequest {
            cmd: cmd.into(),
            callback: CallbackFn(0),
            error: CallbackFn(1),
            url: "tauri://localhost".parse().expect("url"),
            body: InvokeBody::Json(args),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        };
        get_ipc_response(&self.window, request)
            .map(|body| body.deserialize::<Value>().expect("a JSON response"))
    }

    fn ok(&self, cmd: &str, args: Value) -> Value {
        self.invoke(cmd, args)
            .unwrap_or_else(|e| panic!("{cmd} failed: {e}"))
    }

    /// The events delivered on channel `id` so far.
    fn events(&self, id: u32) -> Vec<Value> {
        let sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        // Each message is a batch of events.
        sent.iter()
            .filter(|(channel, _)| *channel == id)
            .flat_map(|(_, batch)| batch.as_array().cloned().unwrap_or_default())
            .collect()
    }

    fn wait_for(&self, id: u32, what: &str, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let events = self.events(id);
            if events.iter().any(&done) {
                return events;
            }
            assert!(Instant::now() < deadline, "no {what} event: {events:#?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Held by a test while it points `ARENA_DATA_DIR` / `ARENA_CONFIG` at its
/// own folder (the engine and the settings commands read them).
static ENV: Mutex<()> = Mutex::new(());

/// Points the app at `data` and `config` for as long as the guard lives.
fn environment(data: &Path, config: &Path) -> std::sync::MutexGuard<'static, ()> {
    let guard = ENV.lock().unwrap_or_else(|p| p.into_inner());
    std::env::set_var("ARENA_DATA_DIR", data);
    std::env::set_var("ARENA_CONFIG", config);
    guard
}

/// The app as `run` builds it, on the mock runtime, with the engine opened
/// from `ARENA_DATA_DIR` / `ARENA_CONFIG` (see [`environment`]).
fn app() -> App {
    let sent: Sent = Arc::default();
    let capture = sent.clone();
    let app = crate::app_builder(mock_builder())
        .channel_interceptor(move |_webview, channel, _index, body| {
            if let InvokeResponseBody::Json(json) = body {
                let value = serde_json::from_str(json).expect("channel JSON");
                let mut sent = capture.lock().unwrap_or_else(|p| p.into_inner());
                sent.push((channel.0, value));
            }
            true
        })
        .build(tauri::generate_context!())
        .expect("the app builds");
    let window = match app.get_webview_window("main") {
        Some(window) => window,
        None => tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
            .build()
            .expect("the main window"),
    };
    App {
        _app: app,
        window,
        sent,
    }
}

#[test]
fn a_battle_runs_streams_and_is_judged_through_ipc() {
    let server = tauri::async_runtime::block_on(TestServer::start()).expect("test server");
    server.set_model("alpha", ModelScript::tokens(150).rate(1500.0));
    server.set_model(
        "beta",
        ModelScript::text("Lanes keep local models fair. ").reasoning(vec!["hm ".into(); 20]),
    );
    // Every judge call gets a well-formed verdict.
    server.set_model(
        "judge",
        ModelScript::respond_with(|_| {
            r#"{"winner": "A", "ranking": ["A", "B"], "reasons": {"A": "clear", "B": "vague"}}"#
                .into()
        }),
    );
    let data = tempfile::tempdir().expect("data dir");
    let project = tempfile::tempdir().expect("project dir");
    let config = data.path().join("arena.toml");
    std::fs::write(
        &config,
        format!(
            "default_model = \"judge\"\n\n[[provider]]\nname = \"scripted\"\nkind = \"openai\"\n\
             base_url = \"{}\"\nlane = \"cloud\"\n\n[limits]\ncoalesce_ms = 5\n",
            server.base_url()
        ),
    )
    .expect("config");
    let _env = environment(data.path(), &config);

    let app = app();
    // The capability is enforced: nothing of Tauri's core is granted.
    let err = app
        .invoke("plugin:app|version", json!({}))
        .expect_err("core commands are not granted");
    assert!(err.to_string().contains("not allowed"), "{err}");
    // Links may open only the default URL schemes.
    for url in [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "smb://host/share",
    ] {
        let err = app
            .invoke("plugin:opener|open_url", json!({"url": url}))
            .expect_err("only http(s), mailto and tel may be opened");
        assert!(err.to_string().contains("Not allowed"), "{url}: {err}");
    }

    let info = app.ok("app_info", json!({}));
    assert_eq!(info["battles"], 0);
    assert_eq!(info["startup_error"], Value::Null);
    // Where the data is kept: this machine's own SQLite file.
    let status = app.ok("status", json!({}));
    assert_eq!(status["database"]["backend"], "sqlite", "{status}");
    assert_eq!(
        status["database"]["location"],
        json!(data.path().join("arena.db")),
        "{status}"
    );
    assert!(status["machine"].as_str().is_some_and(|m| !m.is_empty()));

    // Bad input is refused with the engine's code, before anything is created.
    let err = app
        .invoke(
            "start_battle",
            json!({"request": {
                "battle_type": "qa", "project": project.path(), "prompt": "Why?",
                "contestants": ["debugger@alpha"], "check_command": null
            }}),
        )
        .expect_err("one contestant is too few");
    assert_eq!(err["code"], "invalid_input", "{err}");
    let err = app
        .invoke("get_battle", json!({"id": "nope"}))
        .expect_err("unknown battle");
    assert_eq!(err["code"], "not_found", "{err}");

    let battle = app.ok(
        "start_battle",
        json!({"request": {
            "battle_type": "qa", "project": project.path(), "prompt": "Explain lanes.",
            "contestants": ["debugger@alpha", "explainer@beta"], "check_command": null
        }}),
    );
    let battle_id = battle["id"].as_str().expect("battle id").to_string();
    assert_eq!(battle["status"], "running");
    assert_eq!(battle["contestants"][0]["position"], 1);

    let channel = 4242;
    let subscription = app.ok(
        "subscribe_battle",
        json!({"battleId": battle_id, "sinceSeq": 0, "onEvent": format!("__CHANNEL__:{channel}")}),
    );
    assert!(subscription.as_u64().is_some(), "{subscription}");

    // The run and then the analysis, both started by start_battle.
    let events = app.wait_for(channel, "analysis done", |e| {
        e["type"] == "analysis_status" && e["status"] != "running"
    });
    let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert_eq!(seqs.len(), events.len(), "every event has a seq");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert!(events.iter().all(|e| e["battle_id"] == battle_id.as_str()));

    // Appending the (coalesced) deltas gives each contestant's output.
    let detail = app.ok("get_battle", json!({"id": battle_id}));
    assert_eq!(detail["status"], "done");
    for c in detail["contestants"].as_array().expect("contestants") {
        let id = c["id"].as_str().expect("contestant id");
        let streamed = |kind: &str| -> String {
            events
                .iter()
                .filter(|e| e["type"] == kind && e["contestant_id"] == id)
                .filter_map(|e| e["text"].as_str())
                .collect()
        };
        assert_eq!(c["output"].as_str(), Some(streamed("output").as_str()));
        if c["identity"] == "Explainer" {
            assert_eq!(
                c["reasoning"].as_str(),
                Some(streamed("reasoning").as_str())
            );
        }
        assert_eq!(c["rounds"], json!([]));
    }
    assert_eq!(
        detail["analysis"]["status"], "done",
        "{}",
        detail["analysis"]
    );
    assert_eq!(detail["analysis"]["model"], "judge");
    assert_eq!(detail["cross_examinations"], json!([]));

    // Replayed after the fact, each answer arrives once: its deltas were
    // folded into one event when it was recorded.
    let journal = {
        let state = app.window.state::<AppState>();
        let engine = state.engine().expect("engine").clone();
        let id = battle_id.clone();
        tauri::async_runtime::block_on(async move {
            use futures::StreamExt;
            let stream = engine.subscribe(&id, 0);
            let mut stream = std::pin::pin!(stream);
            let mut all = Vec::new();
            while let Ok(Some(Ok(e))) =
                tokio::time::timeout(Duration::from_millis(500), stream.next()).await
            {
                all.push(e);
            }
            all
        })
    };
    let replay_channel = 4343;
    let replay = app.ok(
        "subscribe_battle",
        json!({"battleId": battle_id, "sinceSeq": 0, "onEvent": format!("__CHANNEL__:{replay_channel}")}),
    );
    let last = journal.last().map(|e| e.seq).expect("a journal");
    let replayed = app.wait_for(replay_channel, "the last event", |e| e["seq"] == last);
    assert_eq!(replayed.len(), journal.len());
    assert!(replayed.iter().all(|e| e["type"] != "output"));
    for c in detail["contestants"].as_array().expect("contestants") {
        let folded = replayed
            .iter()
            .find(|e| e["type"] == "folded" && e["contestant_id"] == c["id"])
            .expect("a folded answer");
        assert_eq!(folded["output"], c["output"]);
    }

    // Unsubscribing ends the streams; unknown ids are fine.
    app.ok(
        "unsubscribe_battle",
        json!({"subscriptionId": subscription}),
    );
    app.ok("unsubscribe_battle", json!({"subscriptionId": replay}));
    app.ok("unsubscribe_battle", json!({"subscriptionId": 999_999}));
    assert!(app.window.state::<AppState>().subscriptions.is_empty());

    // The user's winner, and the rest of the read side.
    let first = detail["contestants"][0]["id"].clone();
    let battle = app.ok(
        "set_winner",
        json!({"battleId": battle_id, "contestantId": first}),
    );
    assert_eq!(
        battle["winner"],
        json!({"contestant_id": first, "source": "user"})
    );
    let list = app.ok("list_battles", json!({"limit": 10}));
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    assert_eq!(list[0]["contestants"][0]["output"], Value::Null);
    let board = app.ok(
        "leaderboard",
        json!({"query": {"battle_type": "qa", "source": "mine"}}),
    );
    let standings = &board["standings"];
    assert_eq!(standings.as_array().map(Vec::len), Some(2));
    assert_eq!(standings[0]["wins"], 1);
    assert_eq!(board["agreement"]["both_chose"], 1, "{board:#}");
    // The user's vote: a tie replaces the chosen winner; tags are saved.
    let tie = app.ok(
        "vote",
        json!({"battleId": battle_id, "vote": {"kind": "tie"}}),
    );
    assert_eq!(
        (&tie["user_verdict"], &tie["winner"]),
        (&json!("tie"), &Value::Null)
    );
    let tagged = app.ok(
        "set_tags",
        json!({"battleId": battle_id, "tags": ["ipc", " ipc ", "demo"]}),
    );
    assert_eq!(tagged["tags"], json!(["demo", "ipc"]));
    let err = app
        .invoke(
            "apply_diff",
            json!({"battleId": battle_id, "contestantId": null}),
        )
        .expect_err("a Q&A battle has no diff");
    assert_eq!(err["code"], "invalid_input");
    let err = app
        .invoke(
            "contestant_diff",
            json!({"battleId": battle_id, "contestantId": first}),
        )
        .expect_err("a Q&A battle has no diff");
    assert_eq!(err["code"], "invalid_input", "{err}");

    let providers = app.ok("providers", json!({}));
    assert_eq!(providers[0]["name"], "scripted");
    assert_eq!(providers[0]["reachable"], true);
    assert!(providers[0]["models"]
        .as_array()
        .is_some_and(|m| m.contains(&json!("alpha"))));
    let personas = app.ok("personas", json!({}));
    assert!(personas["personas"]
        .as_array()
        .is_some_and(|p| p.iter().any(|p| p["name"] == "Debugger")));
    let backends = app.ok("backends", json!({}));
    assert_eq!(
        backends[0],
        json!({"name": "native", "program": null, "installed": true, "path": null,
               "read_only": false, "custom": false, "command": []})
    );
    let settings = app.ok("settings", json!({}));
    assert_eq!(settings["config_path"], json!(config));
    assert_eq!(settings["config_exists"], true);
    assert_eq!(settings["default_model"], "judge");
    assert_eq!(settings["providers"][0]["api_key_set"], false);
    assert_eq!(settings["providers"][0]["key_source"], Value::Null);
}

/// Runs `git` in `dir` with no user or system config.
fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Arena Test")
        .env("GIT_AUTHOR_EMAIL", "test@arena.invalid")
        .env("GIT_COMMITTER_NAME", "Arena Test")
        .env("GIT_COMMITTER_EMAIL", "test@arena.invalid")
        .status()
        .expect("run git");
    assert!(status.success(), "git {args:?} failed");
}

/// A Coding battle whose agent is a `[[backend]]` shell command appending a
/// line to README.md; its diff, the folders, and saving settings.
#[test]
fn coding_diffs_folders_and_settings_through_ipc() {
    let server = tauri::async_runtime::block_on(TestServer::start()).expect("test server");
    server.set_model("m1", ModelScript::tokens(1));
    server.set_model("m2", ModelScript::tokens(1));
    let data = tempfile::tempdir().expect("data dir");
    let project = tempfile::tempdir().expect("project dir");
    git(project.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(project.path().join("README.md"), "# Demo\n").expect("README");
    git(project.path(), &["add", "."]);
    git(project.path(), &["commit", "-q", "-m", "initial"]);
    let config = data.path().join("arena.toml");
    let original = format!(
        "# Written by the test.\n\n[[provider]]\nname = \"scripted\"\nkind = \"openai\"\n\
         base_url = \"{}\"\nlane = \"cloud\" # the test server\n\n[[backend]]\nname = \"shell\"\n\
         command = [\"sh\", \"-c\", \"printf 'hello from %s\\\\n' \\\"$1\\\" >> README.md\", \
         \"agent\", \"{{model}}\", \"{{prompt}}\"]\n",
        server.base_url()
    );
    std::fs::write(&config, &original).expect("config");
    let _env = environment(data.path(), &config);
    let app = app();

    let battle = app.ok(
        "start_battle",
        json!({"request": {
            "battle_type": "coding", "project": project.path(), "prompt": "Say hello.",
            "contestants": ["shell@m1", "shell@m2"], "check_command": null
        }}),
    );
    let battle_id = battle["id"].as_str().expect("battle id").to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    let battle = loop {
        let detail = app.ok("get_battle", json!({"id": battle_id}));
        if detail["status"] != "running" {
            break detail;
        }
        assert!(
            Instant::now() < deadline,
            "the battle did not end: {detail:#}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(battle["status"], "done", "{battle:#}");
    let ids: Vec<String> = battle["contestants"]
        .as_array()
        .expect("contestants")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_string())
        .collect();

    // The diff: README.md modified, one added line after the old one.
    let diff = app.ok(
        "contestant_diff",
        json!({"battleId": battle_id, "contestantId": ids[0]}),
    );
    assert_eq!(diff["round"], 1);
    assert_eq!(
        diff["files"],
        json!([{
            "path": "README.md", "old_path": null, "status": "modified", "binary": false,
            "insertions": 1, "deletions": 0,
            "lines": [
                {"kind": "hunk", "text": "@@ -1 +1,2 @@", "old_line": null, "new_line": null},
                {"kind": "context", "text": "# Demo", "old_line": 1, "new_line": 1},
                {"kind": "add", "text": "hello from m1", "old_line": null, "new_line": 2}
            ]
        }])
    );
    let err = app
        .invoke(
            "contestant_diff",
            json!({"battleId": battle_id, "contestantId": "nobody"}),
        )
        .expect_err("unknown contestant");
    assert_eq!(err["code"], "not_found", "{err}");

    // Opening a folder that is gone says which one (nothing is opened).
    let worktree = battle["contestants"][1]["worktree"]
        .as_str()
        .expect("a worktree")
        .to_string();
    std::fs::remove_dir_all(&worktree).expect("remove the worktree");
    let err = app
        .invoke(
            "open_worktree",
            json!({"battleId": battle_id, "contestantId": ids[1]}),
        )
        .expect_err("the worktree is gone");
    assert_eq!(err["code"], "not_found", "{err}");
    assert!(
        err["message"]
            .as_str()
            .is_some_and(|m| m.contains(&worktree)),
        "{err}"
    );
    let results = battle["results_path"]
        .as_str()
        .expect("results")
        .to_string();
    std::fs::remove_dir_all(&results).expect("remove the results folder");
    let err = app
        .invoke("open_results_folder", json!({"battleId": battle_id}))
        .expect_err("the results folder is gone");
    assert_eq!(err["code"], "not_found", "{err}");
    assert!(
        err["message"]
            .as_str()
            .is_some_and(|m| m.contains(&results)),
        "{err}"
    );
    let err = app
        .invoke("open_results_folder", json!({"battleId": "nope"}))
        .expect_err("unknown battle");
    assert_eq!(err["code"], "not_found", "{err}");

    // Cancelling work: nothing is running, so nothing stops; an unknown
    // kind of work is refused.
    let stopped = app.ok(
        "cancel_work",
        json!({"battleId": battle_id, "work": "analysis", "contestantId": null}),
    );
    assert_eq!(stopped, json!(0));
    app.invoke(
        "cancel_work",
        json!({"battleId": battle_id, "work": "lunch", "contestantId": null}),
    )
    .expect_err("unknown work");

    // Settings: invalid input is refused, naming the field, file untouched.
    let provider = |kind: &str, base_url: &str| {
        json!({"name": "scripted", "kind": kind, "base_url": base_url, "lane": "cloud",
               "api_key_env": null, "models": [], "max_concurrency": 8, "requests_per_minute": null})
    };
    for (bad, field) in [
        (
            provider("gemini", &server.base_url()),
            "provider `scripted` kind",
        ),
        (
            provider("openai", "127.0.0.1:1"),
            "provider `scripted` base_url",
        ),
    ] {
        let err = app
            .invoke(
                "save_settings",
                json!({"update": {"default_model": null, "providers": [bad]}}),
            )
            .expect_err("invalid settings");
        assert_eq!(err["code"], "invalid_input", "{err}");
        assert!(
            err["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(field)),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&config).expect("config"), original);
    }

    // A valid update is written (comments and [[backend]] kept) and used.
    let saved = app.ok(
        "save_settings",
        json!({"update": {"default_model": "m2", "providers": [
            provider("openai", &server.base_url()),
            {"name": "spare", "kind": "anthropic", "base_url": "http://127.0.0.1:9/v1",
             "lane": "cloud", "api_key_env": "SPARE_KEY", "models": ["claude-x"],
             "max_concurrency": 3, "requests_per_minute": 60}
        ]}}),
    );
    assert_eq!(saved["default_model"], "m2");
    assert_eq!(saved["providers"][1]["name"], "spare");
    assert_eq!(saved["providers"][1]["kind"], "anthropic");
    assert_eq!(saved["providers"][1]["api_key_env"], "SPARE_KEY");
    assert_eq!(saved["providers"][1]["models"], json!(["claude-x"]));
    assert_eq!(saved["providers"][1]["max_concurrency"], 3);
    assert_eq!(saved["providers"][1]["requests_per_minute"], 60);
    assert_eq!(saved["providers"][0]["max_concurrency"], 8);
    assert_eq!(app.ok("settings", json!({})), saved);
    let text = std::fs::read_to_string(&config).expect("config");
    for kept in [
        "# Written by the test.",
        "# the test server",
        "[[backend]]",
        "name = \"shell\"",
    ] {
        assert!(text.contains(kept), "lost {kept:?}:\n{text}");
    }
    let providers = app.ok("providers", json!({}));
    assert_eq!(providers[1]["name"], "spare");
    assert_eq!(providers[1]["reachable"], false);
}

/// The worker switch: off at start, refuses a number of places out of
/// range, serves (a `worker` row in the status) when on and stops at once
/// when turned off.
#[test]
fn the_worker_switch_turns_on_and_off() {
    let data = tempfile::tempdir().expect("data dir");
    let config = data.path().join("arena.toml");
    std::fs::write(&config, "").expect("config");
    let _env = environment(data.path(), &config);
    let app = app();

    let workers = |app: &App| -> Vec<Value> {
        let status = app.ok("status", json!({}));
        status["workers"]
            .as_array()
            .expect("workers")
            .iter()
            .filter(|w| w["role"] == "worker")
            .cloned()
            .collect()
    };
    let wait_until = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done() {
            assert!(Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };

    assert_eq!(
        app.ok("worker_state", json!({})),
        json!({"enabled": false, "places": 2})
    );
    for places in [0, 17] {
        let err = app
            .invoke("set_worker", json!({"enabled": true, "places": places}))
            .expect_err("places out of range");
        assert_eq!(err["code"], "invalid_input", "{err}");
        assert!(
            err["message"]
                .as_str()
                .is_some_and(|m| m.contains("between 1 and 16")),
            "{err}"
        );
    }
    assert_eq!(app.ok("worker_state", json!({}))["enabled"], false);

    let on = app.ok("set_worker", json!({"enabled": true, "places": 3}));
    assert_eq!(on, json!({"enabled": true, "places": 3}));
    assert_eq!(app.ok("worker_state", json!({})), on);
    wait_until("a worker with 3 places in the status", &|| {
        workers(&app).iter().any(|w| w["places"] == 3)
    });
    // Another number of places starts it again.
    let more = app.ok("set_worker", json!({"enabled": true, "places": 5}));
    assert_eq!(more, json!({"enabled": true, "places": 5}));
    wait_until("the worker with 5 places in the status", &|| {
        workers(&app).iter().any(|w| w["places"] == 5)
    });

    let off = app.ok("set_worker", json!({"enabled": false, "places": 5}));
    assert_eq!(off, json!({"enabled": false, "places": 5}));
    assert_eq!(app.ok("worker_state", json!({})), off);
    wait_until("no worker in the status", &|| workers(&app).is_empty());
}
