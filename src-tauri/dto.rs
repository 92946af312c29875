//! Data sent across the IPC boundary (serialised as camelCase JSON).

use serde::Serialize;

/// Basic facts about the running app, shown in the UI shell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppInfo {
    /// The app version (from Cargo.toml).
    pub version: String,
    /// The shared data directory (`<OS data dir>/dev.arena.desktop`).
    pub data_dir: String,
    /// How many battles the database holds (`None` when the engine is down).
    pub battles: Option<u64>,
    /// Why the engine could not open, if it could not.
    pub startup_error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_info_serialises_as_camel_case() {
        let info = AppInfo {
            version: "1.2.3".into(),
            data_dir: "/data/dev.arena.desktop".into(),
            battles: Some(2),
            startup_error: None,
        };
        let json = serde_json::to_value(&info).expect("serialisable");
        assert_eq!(
            json,
            serde_json::json!({
                "version": "1.2.3",
                "dataDir": "/data/dev.arena.desktop",
                "battles": 2,
                "startupError": null
            })
        );
    }
}
