//! Saving settings into a real `arena.toml`: validated first, edited in
//! place (comments and other sections survive), written atomically.

use std::fs;

use arena_core::battle::Lane;
use arena_core::config::{self, Config, ProviderConfig, ProviderKind, SettingsUpdate};
use arena_core::Error;

const ORIGINAL: &str = r#"# Arena settings, written by hand.
default_model = "judge-1" # the judge

# The local server.
[[provider]]
name = "llama-swap"
kind = "openai"
base_url = "http://127.0.0.1:8080/v1"   # keep this port
lane = "local"
models = ["extra"]

[limits]
# Slow machine.
stall_timeout_secs = 120

[[provider]]
name = "old-cloud"
kind = "anthropic"
base_url = "https://example.invalid/v1"
lane = "cloud"
api_key_env = "OLD_KEY"

[[backend]]
name = "my-agent"
command = ["my-agent", "--task", "{prompt}"]
"#;

fn provider(name: &str, base_url: &str, lane: Lane) -> ProviderConfig {
    ProviderConfig::new(name, ProviderKind::Openai, base_url, lane)
}

#[test]
fn saving_keeps_comments_and_other_sections() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("arena.toml");
    fs::write(&path, ORIGINAL).unwrap();

    let mut local = provider("llama-swap", " http://127.0.0.1:9090/v1 ", Lane::Local);
    local.models = vec!["extra".into(), " ".into(), "second".into(), "extra".into()];
    let mut cloud = provider(
        "openrouter",
        "https://openrouter.invalid/api/v1",
        Lane::Cloud,
    );
    cloud.api_key_env = Some(" OPENROUTER_API_KEY ".into());
    let config = config::save_settings(
        &path,
        &Config::parse(ORIGINAL).unwrap(),
        SettingsUpdate {
            default_model: Some(" judge-2 ".into()),
            providers: vec![local, cloud],
        },
    )
    .unwrap()
    .config;

    let text = fs::read_to_string(&path).unwrap();
    for kept in [
        "# Arena settings, written by hand.",
        "# the judge",
        "# The local server.",
        "# keep this port",
        "# Slow machine.",
        "stall_timeout_secs = 120",
        "[[backend]]",
        "command = [\"my-agent\", \"--task\", \"{prompt}\"]",
    ] {
        assert!(text.contains(kept), "lost {kept:?}:\n{text}");
    }
    assert!(
        !text.contains("old-cloud"),
        "a provider replaced goes:\n{text}"
    );
    assert!(!text.contains("OLD_KEY"), "{text}");
    assert_eq!(
        config,
        arena_core::config::from_file(&path).unwrap(),
        "returns what it wrote"
    );
    assert_eq!(config.default_model.as_deref(), Some("judge-2"));
    assert_eq!(config.limits.stall_timeout_secs, 120);
    assert_eq!(config.backends[0].name, "my-agent");
    let names: Vec<_> = config.providers.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["llama-swap", "openrouter"]);
    assert_eq!(config.providers[0].base_url, "http://127.0.0.1:9090/v1");
    assert_eq!(config.providers[0].models, ["extra", "second"]);
    assert_eq!(
        config.providers[1].api_key_env.as_deref(),
        Some("OPENROUTER_API_KEY")
    );

    // Saving the same again changes nothing.
    let again = config::save_settings(
        &path,
        &config,
        SettingsUpdate {
            default_model: config.default_model.clone(),
            providers: config.providers.clone(),
        },
    )
    .unwrap()
    .config;
    assert_eq!(again, config);
    assert_eq!(fs::read_to_string(&path).unwrap(), text);

    // No judge model and no providers: the keys go, the rest stays.
    let emptied = config::save_settings(
        &path,
        &config,
        SettingsUpdate {
            default_model: None,
            providers: Vec::new(),
        },
    )
    .unwrap()
    .config;
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(emptied.default_model, None);
    assert!(emptied.providers.is_empty());
    assert!(
        !text.contains("default_model") && !text.contains("[[provider]]"),
        "{text}"
    );
    assert!(
        text.contains("# Slow machine.") && text.contains("[[backend]]"),
        "{text}"
    );
}

#[test]
fn a_missing_file_and_folder_are_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config/dev.arena.desktop/arena.toml");
    let config = config::save_settings(
        &path,
        &Config::default(),
        SettingsUpdate {
            default_model: Some("qwen3-8b".into()),
            providers: vec![provider("local", "http://127.0.0.1:8080/v1", Lane::Local)],
        },
    )
    .unwrap()
    .config;
    assert_eq!(arena_core::config::from_file(&path).unwrap(), config);
    assert_eq!(config.providers[0].name, "local");
}

#[test]
fn invalid_input_names_the_field_and_leaves_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("arena.toml");
    fs::write(&path, ORIGINAL).unwrap();
    let before = Config::parse(ORIGINAL).unwrap();
    let valid = || SettingsUpdate {
        default_model: Some("judge".into()),
        providers: vec![provider("a", "http://127.0.0.1:1/v1", Lane::Local)],
    };
    let cases: Vec<(SettingsUpdate, &str)> = vec![
        (
            SettingsUpdate {
                default_model: Some("  ".into()),
                ..valid()
            },
            "default_model is empty",
        ),
        (
            SettingsUpdate {
                providers: vec![provider(" ", "http://x/v1", Lane::Local)],
                ..valid()
            },
            "provider 1 name is empty",
        ),
        (
            SettingsUpdate {
                providers: vec![
                    provider("a", "http://x/v1", Lane::Local),
                    provider("a ", "http://y/v1", Lane::Cloud),
                ],
                ..valid()
            },
            "provider `a` name is used twice",
        ),
        (
            SettingsUpdate {
                providers: vec![provider("a", "ftp://x/v1", Lane::Local)],
                ..valid()
            },
            "provider `a` base_url `ftp://x/v1` must be an http:// or https:// address",
        ),
        (
            SettingsUpdate {
                providers: vec![provider("a", "localhost:8080", Lane::Local)],
                ..valid()
            },
            "provider `a` base_url",
        ),
        (
            SettingsUpdate {
                providers: vec![provider("a", "not a url", Lane::Local)],
                ..valid()
            },
            "provider `a` base_url `not a url` is not a URL",
        ),
        (
            SettingsUpdate {
                providers: vec![ProviderConfig {
                    api_key_env: Some("sk-live-123".into()),
                    ..provider("a", "http://x/v1", Lane::Cloud)
                }],
                ..valid()
            },
            "provider `a` api_key_env is not an environment variable name",
        ),
    ];
    for (update, expected) in cases {
        let err = config::save_settings(&path, &before, update).unwrap_err();
        assert_eq!(err.code(), "invalid_input", "{err}");
        assert!(err.to_string().starts_with(expected), "{err}");
        assert!(
            !err.to_string().contains("sk-live-123"),
            "a key typed into the wrong field is not echoed: {err}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), ORIGINAL);
    }
    // Nothing is left behind next to it either (no temporary files).
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);

    // A file that is not TOML is not overwritten.
    fs::write(&path, "default_model = \n").unwrap();
    let err = config::save_settings(&path, &before, valid()).unwrap_err();
    assert!(matches!(err, Error::Config { .. }), "{err}");
    assert!(err.to_string().contains("fix it by hand"), "{err}");
    assert_eq!(fs::read_to_string(&path).unwrap(), "default_model = \n");
}

fn names(config: &Config) -> Vec<&str> {
    config.providers.iter().map(|p| p.name.as_str()).collect()
}

#[test]
fn a_renamed_provider_keeps_its_table_and_every_provider_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("arena.toml");
    fs::write(&path, ORIGINAL).unwrap();
    let before = Config::parse(ORIGINAL).unwrap();

    // The settings screen renames the first provider in place.
    let mut local = before.providers[0].clone();
    local.name = "local".into();
    local.models = vec!["other".into()];
    let saved = config::save_settings(
        &path,
        &before,
        SettingsUpdate {
            default_model: before.default_model.clone(),
            providers: vec![local.clone(), before.providers[1].clone()],
        },
    )
    .unwrap();
    assert_eq!(
        saved.renamed,
        [("llama-swap".to_string(), "local".to_string())]
    );
    assert_eq!(names(&saved.config), ["local", "old-cloud"]);
    assert_eq!(saved.config.providers[0].models, ["other"]);
    let text = fs::read_to_string(&path).unwrap();
    for kept in ["# The local server.", "# keep this port"] {
        assert!(text.contains(kept), "lost {kept:?}:\n{text}");
    }

    // A provider added ahead of the others is written ahead of them; it
    // renames nothing, as the one at its place is still there.
    let first = provider("first", "http://127.0.0.1:1/v1", Lane::Local);
    let saved = config::save_settings(
        &path,
        &saved.config,
        SettingsUpdate {
            default_model: None,
            providers: vec![first, local, before.providers[1].clone()],
        },
    )
    .unwrap();
    assert!(saved.renamed.is_empty(), "{:?}", saved.renamed);
    assert_eq!(names(&saved.config), ["first", "local", "old-cloud"]);
    assert_eq!(saved.config, arena_core::config::from_file(&path).unwrap());
}

#[cfg(unix)]
#[test]
fn a_symlinked_file_is_written_through_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("dotfiles-arena.toml");
    fs::write(&real, ORIGINAL).unwrap();
    let link = dir.path().join("arena.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let saved = config::save_settings(
        &link,
        &Config::parse(ORIGINAL).unwrap(),
        SettingsUpdate {
            default_model: Some("judge-3".into()),
            providers: Vec::new(),
        },
    )
    .unwrap();
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(arena_core::config::from_file(&real).unwrap(), saved.config);
    assert_eq!(saved.config.default_model.as_deref(), Some("judge-3"));
}
