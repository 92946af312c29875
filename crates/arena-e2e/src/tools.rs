//! Finding what an end-to-end run needs, and deciding to skip without it.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The programs and directories an end-to-end run uses.
#[derive(Debug, Clone)]
pub struct Tools {
    /// `tauri-driver`.
    pub tauri_driver: PathBuf,
    /// `WebKitWebDriver` (passed to tauri-driver as `--native-driver`).
    pub native_driver: PathBuf,
    /// The built app binary (`arena-app`).
    pub app: PathBuf,
    /// The build profile directory holding the binaries (`target/debug`).
    pub profile_dir: PathBuf,
    /// The cargo target directory (`target`): screenshots, logs, the lock.
    pub target_dir: PathBuf,
}

/// `ARENA_REQUIRE_E2E=1`: a missing prerequisite fails the test instead of
/// skipping it (the e2e step of `scripts/test.sh` sets it).
pub fn e2e_required() -> bool {
    std::env::var("ARENA_REQUIRE_E2E").is_ok_and(|v| v == "1")
}

impl Tools {
    /// Finds everything, or says what is missing (and how to get it).
    pub fn find() -> Result<Tools, String> {
        let has_display = ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()));
        if !has_display {
            return Err("no display (DISPLAY is unset): run under xvfb-run, \
                 e.g. xvfb-run -a -s \"-screen 0 1280x1024x24\" cargo test -p arena-e2e"
                .into());
        }
        let home_bin = std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo/bin"));
        let tauri_driver = find_program(
            "ARENA_TAURI_DRIVER",
            "tauri-driver",
            home_bin.as_deref(),
        )
        .ok_or("tauri-driver not found (ARENA_TAURI_DRIVER, PATH, ~/.cargo/bin): cargo install tauri-driver --locked")?;
        let native_driver = find_program(
            "ARENA_WEBKIT_DRIVER",
            "WebKitWebDriver",
            Some(Path::new("/usr/bin")),
        )
        .ok_or("WebKitWebDriver not found (ARENA_WEBKIT_DRIVER, PATH, /usr/bin): apt-get install webkit2gtk-driver")?;

        let (profile_dir, target_dir) = build_dirs();
        let explicit_app = std::env::var_os("ARENA_E2E_APP");
        let app = match &explicit_app {
            Some(app) => PathBuf::from(app),
            None => profile_dir.join("arena-app"),
        };
        // The same profile as the tests: `cargo test --release` launches
        // `target/release/arena-app`.
        let build = if profile_dir.ends_with("release") {
            "cargo build --release -p arena-app"
        } else {
            "cargo build -p arena-app"
        };
        if !is_executable(&app) {
            return Err(format!(
                "the app binary {} is missing: build it with `{build}` \
                 (after `cd ui && npm run build`)",
                app.display()
            ));
        }
        if explicit_app.is_none() {
            if let Some(newer) = newer_source(&app) {
                let why = format!(
                    "the app binary {} is older than {}: rebuild it with `{build}`",
                    app.display(),
                    newer.display()
                );
                if !e2e_required() {
                    return Err(why);
                }
                // Required: a file edited during the run should not fail it.
                let _ = writeln!(std::io::stderr(), "WARNING: {why}");
            }
        }
        let app = app
            .canonicalize()
            .map_err(|e| format!("{}: {e}", app.display()))?;
        Ok(Tools {
            tauri_driver,
            native_driver,
            app,
            profile_dir,
            target_dir,
        })
    }
}

/// Prints why a test is skipped, past the test runner's output capture (so
/// `cargo test` shows it even for a passing test).
pub(crate) fn announce_skip(test: &str, why: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "\nSKIPPED e2e test {test}: {why} (set ARENA_REQUIRE_E2E=1 to fail instead)"
    );
}

/// `$env_var` if set, else `name` on `PATH`, else `name` in `fallback_dir`.
fn find_program(env_var: &str, name: &str, fallback_dir: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env_var) {
        let path = PathBuf::from(path);
        return is_executable(&path).then_some(path);
    }
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    path_dirs
        .iter()
        .map(PathBuf::as_path)
        .chain(fallback_dir)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A source file of the app (its Rust code, the engine's, the built UI,
/// the manifests) modified after `app` was built, if any: a stale binary
/// would test old code.
fn newer_source(app: &Path) -> Option<PathBuf> {
    let built = app.metadata().and_then(|m| m.modified()).ok()?;
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let roots = [
        "Cargo.toml",
        "tauri.conf.json",
        "src-tauri",
        "ui/dist",
        "crates/arena-core/src",
        "crates/arena-core/Cargo.toml",
    ];
    let mut stack: Vec<PathBuf> = roots.iter().map(|r| workspace.join(r)).collect();
    while let Some(path) = stack.pop() {
        let Ok(meta) = path.metadata() else { continue };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
        } else if meta.modified().is_ok_and(|m| m > built) {
            return Some(path.canonicalize().unwrap_or(path));
        }
    }
    None
}

/// `(target/<profile>, target)`, from where this test executable lives
/// (`target/<profile>/deps/<test>-<hash>`), so `CARGO_TARGET_DIR` and
/// profiles are followed; else `<workspace>/target/debug`.
fn build_dirs() -> (PathBuf, PathBuf) {
    let from_exe = std::env::current_exe().ok().and_then(|exe| {
        let mut dir = exe.parent()?.to_path_buf();
        if dir.file_name().is_some_and(|n| n == "deps") {
            dir.pop();
        }
        let target = dir.parent()?.to_path_buf();
        Some((dir, target))
    });
    from_exe.unwrap_or_else(|| {
        let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
        (target.join("debug"), target)
    })
}
