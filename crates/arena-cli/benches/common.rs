//! Shared set-up for the benchmarks: a scripted server, a temp data dir and
//! project, and an engine or CLI configured against them.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use arena_core::battle::{BattleRequest, BattleType, ContestantSpec, Lane};
use arena_core::config::{Config, Limits, ProviderConfig, ProviderKind};
use arena_core::{Engine, EngineOptions};
use arena_testserver::TestServer;

/// A bench's setting from the environment variable `name`, else `default`.
pub fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub struct Bench {
    pub local: TestServer,
    pub cloud: TestServer,
    pub dir: tempfile::TempDir,
}

fn provider(name: &str, base_url: String, lane: Lane) -> ProviderConfig {
    ProviderConfig::new(name, ProviderKind::Openai, &base_url, lane)
}

impl Bench {
    pub async fn new() -> Bench {
        let bench = Bench {
            local: TestServer::start().await.expect("server"),
            cloud: TestServer::start().await.expect("server"),
            dir: tempfile::tempdir().expect("tempdir"),
        };
        std::fs::create_dir_all(bench.project()).expect("project");
        let toml = format!(
            "[[provider]]\nname = \"local\"\nkind = \"openai\"\nbase_url = \"{}\"\nlane = \"local\"\n\n\
             [[provider]]\nname = \"cloud\"\nkind = \"openai\"\nbase_url = \"{}\"\nlane = \"cloud\"\n\n\
             [limits]\nmax_output_bytes = 100000000\n",
            bench.local.base_url(),
            bench.cloud.base_url()
        );
        std::fs::write(bench.config_path(), toml).expect("config");
        bench
    }

    pub fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("arena.toml")
    }

    /// A Q&A battle in the bench's project: `prompt` to `contestants`.
    pub fn qa(&self, prompt: &str, contestants: Vec<ContestantSpec>) -> BattleRequest {
        BattleRequest {
            battle_type: BattleType::Qa,
            project: self.project(),
            prompt: prompt.into(),
            contestants,
            check_command: None,
            blind: false,
            tags: Vec::new(),
        }
    }

    pub fn engine(&self) -> Engine {
        let config = Config {
            default_model: None,
            providers: vec![
                provider("local", self.local.base_url(), Lane::Local),
                provider("cloud", self.cloud.base_url(), Lane::Cloud),
            ],
            limits: Limits {
                max_output_bytes: 100_000_000,
                ..Limits::default()
            },
            backends: Vec::new(),
            prices: Vec::new(),
            database_url: None,
            team: Default::default(),
            coding: Default::default(),
            model_cutoffs: Vec::new(),
        };
        Engine::open(EngineOptions::local(self.data(), config)).expect("engine")
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

pub fn arena_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_arena"))
}
