//! The environment key of a tree: a hash of the lockfiles and toolchain
//! pins it carries (`package-lock.json`, `uv.lock`, `Cargo.lock`, `go.sum`,
//! `.nvmrc`, …, at any depth up to [`DEPTH`]). Two trees with the same key
//! need the same dependency folders, so a battle whose base has the key of
//! the user's current tree can use the folders the user installed, and a
//! base with another key needs an environment prepared for it.
//!
//! [`key_at`] reads a commit of the user's repository (trusted: it is the
//! user's own history), [`key_of_tree`] the working files as they are now,
//! committed or not. Both hash the same thing for the same content: each
//! file's path and its git blob id (for `pyproject.toml`, only its
//! dependency tables), sorted by path.
//!
//! A Rust tree with `Cargo.toml` files and no `Cargo.lock` at all (a
//! library that does not commit its lockfile) is keyed by its manifests
//! instead: each `Cargo.toml` by the tables that decide what gets resolved
//! (its version, description, profiles and targets left out), and a
//! `Cargo.lock` marked absent. Its prepare resolves and fetches them
//! (`cargo generate-lockfile && cargo fetch`).
//!
//! Everything here is synchronous (git2 and files); callers run it in
//! `spawn_blocking`.

use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};
use sha2::{Digest, Sha256};

/// How deep below the root lockfiles are looked for.
pub const DEPTH: usize = 6;
/// How many tree entries (files and folders) are looked at, at most.
pub const ENTRIES: usize = 100_000;
/// The largest `pyproject.toml` or `Cargo.toml` read for its dependency
/// tables.
const PYPROJECT_BYTES: u64 = 1024 * 1024;
/// The id of the `Cargo.lock` a tree keyed by its manifests lacks.
pub const NO_LOCKFILE: &str = "absent: resolved when prepared";

/// Folders never looked into (installed dependencies, VCS data).
const NOT_WALKED: &[&str] = &[
    ".git",
    "node_modules",
    ".venv",
    "venv",
    "target",
    "__pycache__",
    ".hg",
    ".svn",
];

/// What went wrong reading a key.
#[derive(Debug, thiserror::Error)]
pub enum EnvKeyError {
    #[error("git could not {what}: {}", .source.message())]
    Git {
        what: String,
        #[source]
        source: git2::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A package manager or toolchain a tree's files call for, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ecosystem {
    Npm,
    Pnpm,
    Yarn,
    Bun,
    Uv,
    Poetry,
    Pipenv,
    /// `requirements*.txt`: a virtualenv and pip.
    Pip,
    Cargo,
    /// `Cargo.toml` with no `Cargo.lock` anywhere in the tree: the
    /// manifests, resolved when prepared.
    CargoManifests,
    Go,
    Gradle,
    /// A toolchain pin alone (`.nvmrc`, `rust-toolchain`, …).
    Pin,
}

/// One ecosystem found in a folder of the tree (`dir`: relative, empty for
/// the root) by the file `file` there.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Found {
    pub ecosystem: Ecosystem,
    pub dir: PathBuf,
    pub file: String,
}

/// A tree's environment key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EnvKey {
    /// The SHA-256, in hex (64 characters); of nothing when no file was found.
    pub hex: String,
    /// The files it covers: `(path, id)` sorted by path (the id is the git
    /// blob id, or for `pyproject.toml` the hash of its dependency tables).
    pub files: Vec<(String, String)>,
    /// What they call for, sorted.
    pub ecosystems: Vec<Found>,
}

impl EnvKey {
    /// The first 16 hex digits: a folder's name.
    pub fn short(&self) -> &str {
        &self.hex[..16]
    }

    /// Whether the tree carries no lockfile and no pin at all.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The command the lockfiles call for, run from the tree's root:
    /// one step per folder holding a lockfile (`cd` there first).
    pub fn prepare_command(&self) -> Option<String> {
        let key = self;
        let mut steps: Vec<String> = Vec::new();
        let mut dirs: Vec<&Path> = key.ecosystems.iter().map(|f| f.dir.as_path()).collect();
        dirs.sort();
        dirs.dedup();
        for dir in dirs {
            let here: Vec<&Found> = key.ecosystems.iter().filter(|f| f.dir == dir).collect();
            let has = |e: Ecosystem| here.iter().any(|f| f.ecosystem == e);
            let mut cmds: Vec<String> = Vec::new();
            if has(Ecosystem::Npm) {
                cmds.push("npm ci".into());
            } else if has(Ecosystem::Pnpm) {
                cmds.push("pnpm install --frozen-lockfile".into());
            } else if has(Ecosystem::Yarn) {
                cmds.push("yarn install --frozen-lockfile".into());
            } else if has(Ecosystem::Bun) {
                cmds.push("bun install --frozen-lockfile".into());
            }
            if has(Ecosystem::Uv) {
                cmds.push("uv sync --frozen".into());
            } else if has(Ecosystem::Poetry) {
                cmds.push("poetry install --no-interaction".into());
            } else if has(Ecosystem::Pipenv) {
                cmds.push("pipenv sync".into());
            } else if has(Ecosystem::Pip) {
                let files: Vec<String> = here
                    .iter()
                    .filter(|f| f.ecosystem == Ecosystem::Pip)
                    .map(|f| format!("-r {}", quoted(&f.file)))
                    .collect();
                cmds.push(format!(
                    "python3 -m venv .venv && .venv/bin/pip install {}",
                    files.join(" ")
                ));
            }
            if has(Ecosystem::Cargo) {
                cmds.push("cargo fetch --locked".into());
            } else if has(Ecosystem::CargoManifests) {
                // Resolved today (the newest versions the manifests
                // allow), as `cargo build` does for a user who clones it.
                cmds.push("cargo generate-lockfile && cargo fetch".into());
            }
            if here
                .iter()
                .any(|f| f.ecosystem == Ecosystem::Go && f.file == "go.mod")
            {
                cmds.push("go mod download".into());
            }
            if cmds.is_empty() {
                continue;
            }
            let cmd = cmds.join(" && ");
            if dir.as_os_str().is_empty() {
                steps.push(cmd);
            } else {
                steps.push(format!("(cd {} && {cmd})", quoted(&dir.to_string_lossy())));
            }
        }
        (!steps.is_empty()).then(|| steps.join(" && "))
    }

    /// The key of what a walk found: `manifests` (each `Cargo.toml`'s
    /// folder, path and id) count only when no `Cargo.lock` was found.
    fn found(
        mut files: Vec<(String, String)>,
        mut ecosystems: Vec<Found>,
        manifests: Vec<(PathBuf, String, String)>,
    ) -> EnvKey {
        let locked = ecosystems.iter().any(|f| f.ecosystem == Ecosystem::Cargo);
        if !locked && !manifests.is_empty() {
            // The prepare runs where a manifest has none above it (a
            // workspace's root, or a crate's); one absent lockfile each.
            let roots: Vec<&PathBuf> = manifests
                .iter()
                .map(|(dir, _, _)| dir)
                .filter(|dir| {
                    !manifests
                        .iter()
                        .any(|(other, _, _)| other != *dir && dir.starts_with(other))
                })
                .collect();
            for dir in roots {
                let marker = slash_path(&dir.join("Cargo.lock"));
                files.push((marker, NO_LOCKFILE.to_string()));
                ecosystems.push(Found {
                    ecosystem: Ecosystem::CargoManifests,
                    dir: dir.clone(),
                    file: "Cargo.toml".into(),
                });
            }
            files.extend(manifests.into_iter().map(|(_, path, id)| (path, id)));
        }
        EnvKey::of(files, ecosystems)
    }

    fn of(mut files: Vec<(String, String)>, mut ecosystems: Vec<Found>) -> EnvKey {
        files.sort();
        files.dedup();
        ecosystems.sort();
        ecosystems.dedup();
        let mut hash = Sha256::new();
        for (path, id) in &files {
            hash.update(path.as_bytes());
            hash.update([0]);
            hash.update(id.as_bytes());
            hash.update([b'\n']);
        }
        let hex = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
        EnvKey {
            hex,
            files,
            ecosystems,
        }
    }
}

/// What a file of this name is to the key: `None` when it is not part of
/// it; else the ecosystem it calls for.
pub fn classify(dir: &Path, name: &str) -> Option<Ecosystem> {
    let e = match name {
        "package-lock.json" | "npm-shrinkwrap.json" => Ecosystem::Npm,
        "pnpm-lock.yaml" => Ecosystem::Pnpm,
        "yarn.lock" => Ecosystem::Yarn,
        "bun.lockb" | "bun.lock" => Ecosystem::Bun,
        "uv.lock" => Ecosystem::Uv,
        "poetry.lock" => Ecosystem::Poetry,
        "Pipfile.lock" => Ecosystem::Pipenv,
        // Its dependency tables count; no command is guessed for it alone.
        "pyproject.toml" => Ecosystem::Pin,
        "Cargo.lock" => Ecosystem::Cargo,
        "go.sum" | "go.mod" => Ecosystem::Go,
        "gradle-wrapper.properties" if dir.ends_with("gradle/wrapper") => Ecosystem::Gradle,
        "gradle.lockfile" => Ecosystem::Gradle,
        "rust-toolchain"
        | "rust-toolchain.toml"
        | ".nvmrc"
        | ".node-version"
        | ".python-version"
        | ".tool-versions" => Ecosystem::Pin,
        _ if name.starts_with("requirements") && name.ends_with(".txt") => Ecosystem::Pip,
        _ => return None,
    };
    Some(e)
}

/// The key of `commit`'s tree in the repository at `repo`.
pub fn key_at(repo: &Path, commit: &str) -> Result<EnvKey, EnvKeyError> {
    let git = |what: &str| {
        let what = what.to_string();
        move |source| EnvKeyError::Git { what, source }
    };
    let repository = Repository::open(repo).map_err(git("open the project's repository"))?;
    let oid = Oid::from_str(commit).map_err(git("read the commit id"))?;
    let tree = repository
        .find_commit(oid)
        .and_then(|c| c.tree())
        .map_err(git(&format!("find commit {commit}")))?;
    let mut files = Vec::new();
    let mut ecosystems = Vec::new();
    let mut manifests = Vec::new();
    let mut seen = 0usize;
    let walked = tree.walk(TreeWalkMode::PreOrder, |parent, entry| {
        seen += 1;
        if seen > ENTRIES {
            return TreeWalkResult::Abort;
        }
        let Some(name) = entry.name() else {
            return TreeWalkResult::Skip;
        };
        let depth = parent.matches('/').count();
        match entry.kind() {
            Some(ObjectType::Tree) => {
                if depth >= DEPTH || NOT_WALKED.contains(&name) {
                    TreeWalkResult::Skip
                } else {
                    TreeWalkResult::Ok
                }
            }
            Some(ObjectType::Blob) => {
                let dir = Path::new(parent.trim_end_matches('/'));
                if name == "Cargo.toml" {
                    let id = repository
                        .find_blob(entry.id())
                        .ok()
                        .filter(|b| b.size() as u64 <= PYPROJECT_BYTES)
                        .map(|b| manifest_id(b.content()))
                        .unwrap_or_else(|| entry.id().to_string());
                    manifests.push((dir.to_path_buf(), format!("{parent}{name}"), id));
                } else if let Some(ecosystem) = classify(dir, name) {
                    let path = format!("{parent}{name}");
                    let id = if name == "pyproject.toml" {
                        repository
                            .find_blob(entry.id())
                            .ok()
                            .filter(|b| b.size() as u64 <= PYPROJECT_BYTES)
                            .map(|b| pyproject_id(b.content()))
                            .unwrap_or_else(|| entry.id().to_string())
                    } else {
                        entry.id().to_string()
                    };
                    push(&mut files, &mut ecosystems, dir, name, path, id, ecosystem);
                }
                TreeWalkResult::Ok
            }
            _ => TreeWalkResult::Ok,
        }
    });
    // Stopped at its bound, the walk says so as an error: what it read counts.
    if seen <= ENTRIES {
        walked.map_err(git("walk the commit's tree"))?;
    }
    Ok(EnvKey::found(files, ecosystems, manifests))
}

/// The key of the working files under `project` as they are now (committed
/// or not: a lockfile changed or added but not committed counts). What git
/// ignores there is passed over (a lockfile in a build's output is not the
/// project's, and a commit would not carry it); links are not followed.
pub fn key_of_tree(project: &Path) -> Result<EnvKey, EnvKeyError> {
    let repo = Repository::open(project)
        .ok()
        .filter(|r| r.workdir().is_some());
    let ignored = |rel: &Path, dir: bool| {
        let Some(repo) = &repo else { return false };
        let text = if dir {
            format!("{}/", slash_path(rel))
        } else {
            slash_path(rel)
        };
        repo.is_path_ignored(Path::new(&text)).unwrap_or(false)
    };
    let mut files = Vec::new();
    let mut ecosystems = Vec::new();
    let mut manifests = Vec::new();
    let mut queue = std::collections::VecDeque::from([(PathBuf::new(), 0usize)]);
    let mut seen = 0usize;
    while let Some((rel, depth)) = queue.pop_front() {
        let at = project.join(&rel);
        let entries = match std::fs::read_dir(&at) {
            Ok(e) => e,
            Err(source) if rel.as_os_str().is_empty() => {
                return Err(EnvKeyError::Io { path: at, source })
            }
            Err(_) => continue,
        };
        let mut names: Vec<(String, std::fs::FileType)> = entries
            .flatten()
            .filter_map(|e| Some((e.file_name().to_str()?.to_string(), e.file_type().ok()?)))
            .collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, kind) in names {
            seen += 1;
            if seen > ENTRIES {
                return Ok(EnvKey::found(files, ecosystems, manifests));
            }
            if kind.is_dir() {
                if depth < DEPTH
                    && !NOT_WALKED.contains(&name.as_str())
                    && !ignored(&rel.join(&name), true)
                {
                    queue.push_back((rel.join(&name), depth + 1));
                }
            } else if kind.is_file() {
                let manifest = name == "Cargo.toml";
                let ecosystem = classify(&rel, &name);
                if (!manifest && ecosystem.is_none()) || ignored(&rel.join(&name), false) {
                    continue;
                }
                let file = at.join(&name);
                let Some(ecosystem) = ecosystem else {
                    let id = match small_file(&file)? {
                        Some(bytes) => manifest_id(&bytes),
                        None => blob_id(&file)?,
                    };
                    manifests.push((rel.clone(), slash_path(&rel.join(&name)), id));
                    continue;
                };
                let id = if name == "pyproject.toml" {
                    let meta = std::fs::metadata(&file).map_err(|source| EnvKeyError::Io {
                        path: file.clone(),
                        source,
                    })?;
                    if meta.len() <= PYPROJECT_BYTES {
                        let bytes = std::fs::read(&file).map_err(|source| EnvKeyError::Io {
                            path: file.clone(),
                            source,
                        })?;
                        pyproject_id(&bytes)
                    } else {
                        blob_id(&file)?
                    }
                } else {
                    blob_id(&file)?
                };
                let path = slash_path(&rel.join(&name));
                push(
                    &mut files,
                    &mut ecosystems,
                    &rel,
                    &name,
                    path,
                    id,
                    ecosystem,
                );
            }
        }
    }
    Ok(EnvKey::found(files, ecosystems, manifests))
}

/// A file's bytes when it is no larger than [`PYPROJECT_BYTES`].
fn small_file(file: &Path) -> Result<Option<Vec<u8>>, EnvKeyError> {
    let io = |source| EnvKeyError::Io {
        path: file.to_path_buf(),
        source,
    };
    if std::fs::metadata(file).map_err(io)?.len() > PYPROJECT_BYTES {
        return Ok(None);
    }
    std::fs::read(file).map(Some).map_err(io)
}

/// The files of `commit`'s tree in the repository at `repo`, written into
/// `into` (made if missing): files with their executable bit, links as
/// links, no submodule. A repository of its own is made there (with no
/// commit) so that the tree's `.gitignore` files say what git ignores, as
/// they do in the project ([`crate::environment::find`] takes only ignored
/// folders).
pub fn checkout(repo: &Path, commit: &str, into: &Path) -> Result<(), EnvKeyError> {
    let git = |what: &str| {
        let what = what.to_string();
        move |source| EnvKeyError::Git { what, source }
    };
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| EnvKeyError::Io { path, source }
    };
    let repository = Repository::open(repo).map_err(git("open the project's repository"))?;
    let oid = Oid::from_str(commit).map_err(git("read the commit id"))?;
    let tree = repository
        .find_commit(oid)
        .and_then(|c| c.tree())
        .map_err(git(&format!("find commit {commit}")))?;
    std::fs::create_dir_all(into).map_err(io(into))?;
    let mut failed: Option<EnvKeyError> = None;
    let walked = tree.walk(TreeWalkMode::PreOrder, |parent, entry| {
        let Some(name) = entry.name() else {
            return TreeWalkResult::Skip;
        };
        if matches!(name, "." | ".." | ".git") || name.contains('/') {
            return TreeWalkResult::Skip;
        }
        let path = into.join(parent).join(name);
        let written = match entry.kind() {
            Some(ObjectType::Tree) => std::fs::create_dir_all(&path).map_err(io(&path)),
            Some(ObjectType::Blob) => repository
                .find_blob(entry.id())
                .map_err(git("read a file of the commit"))
                .and_then(|blob| write_entry(&path, entry.filemode(), blob.content())),
            // A submodule's commit: not checked out.
            _ => Ok(()),
        };
        match written {
            Ok(()) => TreeWalkResult::Ok,
            Err(e) => {
                failed = Some(e);
                TreeWalkResult::Abort
            }
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    walked.map_err(git("walk the commit's tree"))?;
    Repository::init(into).map_err(git("make the checkout's repository"))?;
    Ok(())
}

/// One blob of a checkout: a file (executable by its mode) or a link.
fn write_entry(path: &Path, mode: i32, content: &[u8]) -> Result<(), EnvKeyError> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let io = |source| EnvKeyError::Io {
        path: path.to_path_buf(),
        source,
    };
    if mode == 0o120000 {
        let target = std::ffi::OsStr::from_bytes(content);
        return std::os::unix::fs::symlink(target, path).map_err(io);
    }
    std::fs::write(path, content).map_err(io)?;
    if mode == 0o100755 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(io)?;
    }
    Ok(())
}

/// `text` as one word for `sh`.
fn quoted(text: &str) -> String {
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

fn push(
    files: &mut Vec<(String, String)>,
    ecosystems: &mut Vec<Found>,
    dir: &Path,
    name: &str,
    path: String,
    id: String,
    ecosystem: Ecosystem,
) {
    files.push((path, id));
    ecosystems.push(Found {
        ecosystem,
        dir: dir.to_path_buf(),
        file: name.to_string(),
    });
}

/// The git blob id of a file's content (the same as its id once committed).
fn blob_id(file: &Path) -> Result<String, EnvKeyError> {
    Oid::hash_file(ObjectType::Blob, file)
        .map(|o| o.to_string())
        .map_err(|source| EnvKeyError::Git {
            what: format!("hash {}", file.display()),
            source,
        })
}

/// A path with `/` between its parts, as git writes it.
fn slash_path(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The tables of a `pyproject.toml` that say what gets installed, as one
/// hash: a version bump or a tool's settings leave it alone. An unreadable
/// file is hashed whole.
fn pyproject_id(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let Ok(doc) = text.parse::<toml::Table>() else {
        return format!("raw:{}", hex_of(&Sha256::digest(bytes)));
    };
    let pick = |path: &[&str]| -> Option<toml::Value> {
        let mut at = doc.get(path[0])?;
        for part in &path[1..] {
            at = at.get(part)?;
        }
        Some(at.clone())
    };
    let tables: &[&[&str]] = &[
        &["build-system"],
        &["project", "dependencies"],
        &["project", "optional-dependencies"],
        &["project", "requires-python"],
        &["dependency-groups"],
        &["tool", "poetry", "dependencies"],
        &["tool", "poetry", "dev-dependencies"],
        &["tool", "poetry", "group"],
        &["tool", "uv"],
        &["tool", "pdm", "dev-dependencies"],
    ];
    let mut hash = Sha256::new();
    for path in tables {
        hash.update(path.join(".").as_bytes());
        hash.update([0]);
        if let Some(value) = pick(path) {
            // A `toml::Table` keeps its keys sorted: the text is canonical.
            hash.update(value.to_string().as_bytes());
        }
        hash.update([b'\n']);
    }
    format!("deps:{}", hex_of(&hash.finalize()))
}

/// Whether `key` is of a lockfile-less Rust tree (keyed by its manifests)
/// whose manifests at `commit` of `repo` declare any dependency: one that
/// only a resolve (and a fetch) makes buildable, whatever the user's tree.
pub fn resolves_dependencies(repo: &Path, commit: &str, key: &EnvKey) -> bool {
    if !key
        .ecosystems
        .iter()
        .any(|f| f.ecosystem == Ecosystem::CargoManifests)
    {
        return false;
    }
    let Ok(repository) = Repository::open(repo) else {
        return false;
    };
    let Ok(tree) = Oid::from_str(commit)
        .and_then(|oid| repository.find_commit(oid))
        .and_then(|c| c.tree())
    else {
        return false;
    };
    key.files
        .iter()
        .filter(|(path, _)| path == "Cargo.toml" || path.ends_with("/Cargo.toml"))
        .filter_map(|(path, _)| tree.get_path(Path::new(path)).ok())
        .filter_map(|entry| repository.find_blob(entry.id()).ok())
        .any(|blob| declares_dependencies(blob.content()))
}

/// Whether a `Cargo.toml` declares a dependency (of any kind, for any
/// target, or for its workspace).
fn declares_dependencies(bytes: &[u8]) -> bool {
    let Ok(doc) = String::from_utf8_lossy(bytes).parse::<toml::Table>() else {
        return false;
    };
    let kinds = ["dependencies", "dev-dependencies", "build-dependencies"];
    let some = |t: &toml::Table| {
        kinds.iter().any(|k| {
            t.get(*k)
                .and_then(|d| d.as_table())
                .is_some_and(|d| !d.is_empty())
        })
    };
    some(&doc)
        || doc
            .get("target")
            .and_then(|t| t.as_table())
            .is_some_and(|targets| targets.values().filter_map(|t| t.as_table()).any(some))
        || doc
            .get("workspace")
            .and_then(|w| w.as_table())
            .is_some_and(some)
}

/// What of a `Cargo.toml` decides what gets resolved, as one hash: all of
/// it but the package's metadata (version, authors, description, links,
/// docs.rs settings…), profiles and targets, so that a release or a new
/// keyword keeps the key. An unreadable file is hashed whole.
fn manifest_id(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let Ok(mut doc) = text.parse::<toml::Table>() else {
        return format!("raw:{}", hex_of(&Sha256::digest(bytes)));
    };
    const METADATA: &[&str] = &[
        "version",
        "authors",
        "description",
        "documentation",
        "homepage",
        "repository",
        "readme",
        "keywords",
        "categories",
        "license",
        "license-file",
        "exclude",
        "include",
        "publish",
        "metadata",
        "default-run",
        "build",
        "autobins",
        "autoexamples",
        "autotests",
        "autobenches",
    ];
    for table in [
        "badges", "profile", "lib", "bin", "test", "bench", "example",
    ] {
        doc.remove(table);
    }
    let strip = |t: Option<&mut toml::Value>| {
        if let Some(toml::Value::Table(t)) = t {
            for key in METADATA {
                t.remove(*key);
            }
        }
    };
    strip(doc.get_mut("package"));
    strip(doc.get_mut("project"));
    if let Some(toml::Value::Table(w)) = doc.get_mut("workspace") {
        w.remove("metadata");
        strip(w.get_mut("package"));
    }
    // A `toml::Table` keeps its keys sorted: the text is canonical.
    format!(
        "manifest:{}",
        hex_of(&Sha256::digest(doc.to_string().as_bytes()))
    )
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_declares_dependencies_of_any_kind() {
        assert!(!declares_dependencies(
            b"[package]\nname = \"x\"\n[features]\na = []\n"
        ));
        assert!(!declares_dependencies(b"[dependencies]\n"));
        assert!(declares_dependencies(b"[dependencies]\nserde = \"1\"\n"));
        assert!(declares_dependencies(
            b"[dev-dependencies]\nrand = \"0.8\"\n"
        ));
        assert!(declares_dependencies(
            b"[target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n"
        ));
        assert!(declares_dependencies(
            b"[workspace.dependencies]\nsyn = \"2\"\n"
        ));
        assert!(!declares_dependencies(b"not toml ["));
    }

    #[test]
    fn pyproject_id_ignores_the_version_and_tools() {
        let a = pyproject_id(
            b"[project]\nname='x'\nversion='1'\ndependencies=['attrs']\n[tool.ruff]\nline-length=90\n",
        );
        let b = pyproject_id(b"[project]\nname='x'\nversion='2'\ndependencies=['attrs']\n");
        let c = pyproject_id(b"[project]\nname='x'\nversion='2'\ndependencies=['attrs>=23']\n");
        assert_eq!(a, b);
        assert_ne!(b, c);
    }

    #[test]
    fn lockfiles_and_pins_are_classified() {
        let root = Path::new("");
        assert_eq!(classify(root, "package-lock.json"), Some(Ecosystem::Npm));
        assert_eq!(classify(root, "requirements-dev.txt"), Some(Ecosystem::Pip));
        assert_eq!(classify(root, ".nvmrc"), Some(Ecosystem::Pin));
        assert_eq!(classify(root, "package.json"), None);
        assert_eq!(classify(root, "gradle-wrapper.properties"), None);
        assert_eq!(
            classify(Path::new("gradle/wrapper"), "gradle-wrapper.properties"),
            Some(Ecosystem::Gradle)
        );
    }

    /// Commits every file of the repository's working tree; its id.
    fn commit_all(repo: &Repository, message: &str) -> String {
        let mut index = repo.index().expect("index");
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .expect("add");
        index.write().expect("write the index");
        let tree = repo
            .find_tree(index.write_tree().expect("tree"))
            .expect("tree");
        let sig = git2::Signature::now("t", "t@t").expect("sig");
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .expect("commit")
            .to_string()
    }

    #[test]
    fn a_rust_tree_without_a_lockfile_is_keyed_by_its_manifests() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Repository::init(dir.path()).expect("init");
        let manifest = |version: &str, itoa: &str| {
            format!(
                "[package]\nname = \"demo\"\nversion = \"{version}\"\nedition = \"2021\"\n\
                 description = \"A demo, {version}\"\n\n[dependencies]\nitoa = \"{itoa}\"\n\
                 macros = {{ path = \"macros\" }}\n\n[profile.release]\nlto = true\n\n\
                 [workspace]\nmembers = [\"macros\"]\n"
            )
        };
        std::fs::create_dir_all(dir.path().join("macros")).expect("mkdir");
        std::fs::write(dir.path().join("Cargo.toml"), manifest("0.1.0", "1")).expect("write");
        std::fs::write(
            dir.path().join("macros/Cargo.toml"),
            "[package]\nname = \"macros\"\nversion = \"0.1.0\"\n",
        )
        .expect("write");
        // The project ignores its lockfile, as such libraries do.
        std::fs::write(dir.path().join(".gitignore"), "/Cargo.lock\n/target\n").expect("write");
        let one = commit_all(&repo, "one");
        let key = key_at(dir.path(), &one).expect("key");
        assert!(!key.is_empty());
        let paths: Vec<&str> = key.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["Cargo.lock", "Cargo.toml", "macros/Cargo.toml"]);
        assert_eq!(key.files[0].1, NO_LOCKFILE);
        assert_eq!(
            key.ecosystems,
            vec![Found {
                ecosystem: Ecosystem::CargoManifests,
                dir: PathBuf::new(),
                file: "Cargo.toml".into(),
            }],
            "the prepare runs at the workspace's root only"
        );
        assert_eq!(
            key.prepare_command().as_deref(),
            Some("cargo generate-lockfile && cargo fetch")
        );
        // A lockfile the project ignores (a build made it) changes nothing.
        std::fs::write(dir.path().join("Cargo.lock"), "version = 3\n").expect("write");
        assert_eq!(key_of_tree(dir.path()).expect("key of tree"), key);
        // A release (version, description, profile) keeps the key…
        std::fs::write(dir.path().join("Cargo.toml"), manifest("0.2.0", "1")).expect("write");
        let release = commit_all(&repo, "release");
        assert_eq!(key_at(dir.path(), &release).expect("key").hex, key.hex);
        // …a dependency's requirement does not.
        std::fs::write(dir.path().join("Cargo.toml"), manifest("0.2.0", "1.0.9")).expect("write");
        let bumped = commit_all(&repo, "itoa 1.0.9");
        let other = key_at(dir.path(), &bumped).expect("key");
        assert_ne!(other.hex, key.hex);
        assert_eq!(key_of_tree(dir.path()).expect("key of tree"), other);
        // A member's dependency counts too.
        std::fs::write(
            dir.path().join("macros/Cargo.toml"),
            "[package]\nname = \"macros\"\nversion = \"0.1.0\"\n[dependencies]\nryu = \"1\"\n",
        )
        .expect("write");
        assert_ne!(key_of_tree(dir.path()).expect("key of tree").hex, other.hex);
        // A committed lockfile keys the tree alone, as before.
        std::fs::write(dir.path().join(".gitignore"), "/target\n").expect("write");
        let locked = commit_all(&repo, "lock");
        let locked = key_at(dir.path(), &locked).expect("key");
        let paths: Vec<&str> = locked.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["Cargo.lock"]);
        assert_eq!(
            locked.prepare_command().as_deref(),
            Some("cargo fetch --locked")
        );
    }

    #[test]
    fn one_step_per_folder_whatever_the_ecosystems_order() {
        let key = EnvKey::of(
            vec![("x".into(), "1".into())],
            vec![
                Found {
                    ecosystem: Ecosystem::Npm,
                    dir: PathBuf::new(),
                    file: "package-lock.json".into(),
                },
                Found {
                    ecosystem: Ecosystem::Pip,
                    dir: PathBuf::from("py"),
                    file: "requirements.txt".into(),
                },
                Found {
                    ecosystem: Ecosystem::Cargo,
                    dir: PathBuf::new(),
                    file: "Cargo.lock".into(),
                },
            ],
        );
        assert_eq!(
            key.prepare_command().as_deref(),
            Some(
                "npm ci && cargo fetch --locked && (cd py && python3 -m venv .venv && \
                 .venv/bin/pip install -r requirements.txt)"
            )
        );
    }

    #[test]
    fn the_key_is_the_same_for_a_commit_and_its_working_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Repository::init(dir.path()).expect("init");
        std::fs::create_dir_all(dir.path().join("web")).expect("mkdir");
        std::fs::write(dir.path().join("web/package-lock.json"), "{}\n").expect("write");
        std::fs::write(dir.path().join("Cargo.lock"), "# lock\n").expect("write");
        std::fs::write(dir.path().join("README"), "hi\n").expect("write");
        let mut index = repo.index().expect("index");
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .expect("add");
        let tree = repo
            .find_tree(index.write_tree().expect("tree"))
            .expect("tree");
        let sig = git2::Signature::now("t", "t@t").expect("sig");
        let commit = repo
            .commit(Some("HEAD"), &sig, &sig, "one", &tree, &[])
            .expect("commit");
        let at = key_at(dir.path(), &commit.to_string()).expect("key at");
        let now = key_of_tree(dir.path()).expect("key of tree");
        assert_eq!(at, now);
        assert_eq!(at.files.len(), 2);
        // A lockfile git ignores (a build's output) is not the project's.
        std::fs::write(dir.path().join(".git/info/exclude"), "dist/\n").expect("exclude");
        std::fs::create_dir_all(dir.path().join("dist")).expect("mkdir");
        std::fs::write(dir.path().join("dist/package-lock.json"), "{}\n").expect("write");
        assert_eq!(key_of_tree(dir.path()).expect("key of tree"), at);
        assert_eq!(at.short().len(), 16);
        std::fs::write(dir.path().join("web/package-lock.json"), "{ }\n").expect("write");
        assert_ne!(key_of_tree(dir.path()).expect("key").hex, at.hex);
    }
}
