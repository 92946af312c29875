//! Reading a pack's files as hostile input: every file bounded in size,
//! no symbolic link followed (nor taken: a pack holds plain files and
//! folders only), no device or pipe opened, every error naming the file
//! and the fix.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use super::PackError;

/// The largest instruction.md.
pub const MAX_INSTRUCTION: u64 = 1 << 20;
/// The largest task.toml or pack.toml.
pub const MAX_TOML: u64 = 256 << 10;
/// The largest patch or tests.json.
pub const MAX_PATCH: u64 = 32 << 20;
/// The largest single file of a task folder.
pub const MAX_FILE: u64 = 256 << 20;
/// The most a task folder may hold, all files together.
pub const MAX_TASK_BYTES: u64 = 1 << 30;
/// The most files a task folder may hold.
pub const MAX_TASK_FILES: usize = 20_000;
/// The most tasks a pack may hold.
pub const MAX_TASKS: usize = 50_000;
/// The deepest folder in a task.
const MAX_DEPTH: usize = 32;

fn refused(path: &Path, message: impl Into<String>) -> PackError {
    PackError::Refused {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PackError + '_ {
    move |source| PackError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The metadata of `root/rel`, refusing a link at any step below `root`;
/// `None` when it does not exist.
pub fn entry(root: &Path, rel: &Path) -> Result<Option<Metadata>, PackError> {
    let mut at = root.to_path_buf();
    let mut last = None;
    for part in rel.components() {
        let Component::Normal(name) = part else {
            return Err(refused(
                &root.join(rel),
                "is not a plain path inside the pack",
            ));
        };
        at.push(name);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(refused(
                    &at,
                    "is a symbolic link; a pack holds plain files only (replace the link with what it points to)",
                ))
            }
            Ok(m) => last = Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(&at)(e)),
        }
    }
    Ok(last)
}

/// Opens `path` for reading without following a link or blocking on a
/// pipe, and checks it is a regular file.
pub fn open_checked(path: &Path) -> Result<(File, Metadata), PackError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                refused(path, "is a symbolic link; a pack holds plain files only")
            } else {
                io(path)(e)
            }
        })?;
    let meta = file.metadata().map_err(io(path))?;
    if !meta.is_file() {
        return Err(refused(path, "is not a regular file"));
    }
    Ok((file, meta))
}

/// The bytes of `root/rel`, at most `limit`; `None` when it is absent.
pub fn read(root: &Path, rel: &str, limit: u64) -> Result<Option<Vec<u8>>, PackError> {
    let path = root.join(rel);
    if entry(root, Path::new(rel))?.is_none() {
        return Ok(None);
    }
    read_plain(&path, limit).map(Some)
}

/// The bytes of a file the caller checked is inside its folder, at most
/// `limit`.
pub fn read_plain(path: &Path, limit: u64) -> Result<Vec<u8>, PackError> {
    let (file, _) = open_checked(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(io(path))?;
    if bytes.len() as u64 > limit {
        return Err(refused(
            path,
            format!(
                "is larger than {}; Arena reads at most that much of it",
                size(limit)
            ),
        ));
    }
    Ok(bytes)
}

/// The text of `root/rel` (UTF-8), at most `limit` bytes; `None` when absent.
pub fn read_text(root: &Path, rel: &str, limit: u64) -> Result<Option<String>, PackError> {
    match read(root, rel, limit)? {
        None => Ok(None),
        Some(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| refused(&root.join(rel), "is not UTF-8 text; save it as UTF-8")),
    }
}

/// `n` bytes in words.
pub fn size(n: u64) -> String {
    if n >= 1 << 30 {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{} KiB", n >> 10)
    }
}

/// One file of a folder: its path relative to the folder, and whether it
/// is executable.
#[derive(Debug, Clone)]
pub struct Walked {
    pub rel: PathBuf,
    pub executable: bool,
    pub len: u64,
}

/// Every file under `dir` (sorted), refusing links, devices, pipes and
/// sockets, and folders deeper, fuller or larger than a task may be.
pub fn walk(dir: &Path) -> Result<Vec<Walked>, PackError> {
    let mut files = Vec::new();
    let mut total = 0u64;
    walk_into(dir, Path::new(""), 0, &mut files, &mut total)?;
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(files)
}

fn walk_into(
    root: &Path,
    rel: &Path,
    depth: usize,
    files: &mut Vec<Walked>,
    total: &mut u64,
) -> Result<(), PackError> {
    let dir = root.join(rel);
    if depth > MAX_DEPTH {
        return Err(refused(
            &dir,
            format!("is nested more than {MAX_DEPTH} folders deep"),
        ));
    }
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .map_err(io(&dir))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(io(&dir))?;
    names.sort();
    for name in names {
        let rel = rel.join(&name);
        let path = root.join(&rel);
        let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
        let kind = meta.file_type();
        if kind.is_symlink() {
            return Err(refused(
                &path,
                "is a symbolic link; a pack holds plain files only (replace the link with what it points to)",
            ));
        } else if kind.is_dir() {
            walk_into(root, &rel, depth + 1, files, total)?;
        } else if kind.is_file() {
            if meta.len() > MAX_FILE {
                return Err(refused(&path, format!("is larger than {}", size(MAX_FILE))));
            }
            *total += meta.len();
            if *total > MAX_TASK_BYTES {
                return Err(refused(
                    root,
                    format!("holds more than {} of files", size(MAX_TASK_BYTES)),
                ));
            }
            files.push(Walked {
                rel,
                executable: meta.permissions().mode() & 0o111 != 0,
                len: meta.len(),
            });
            if files.len() > MAX_TASK_FILES {
                return Err(refused(
                    root,
                    format!("holds more than {MAX_TASK_FILES} files"),
                ));
            }
        } else {
            return Err(refused(
                &path,
                "is a device, pipe or socket; a pack holds plain files only",
            ));
        }
    }
    Ok(())
}

/// Copies the folder `from` into `to` (which must not exist) file by file,
/// byte for byte, keeping the executable bit; refuses what [`walk`] refuses.
pub fn copy_folder(from: &Path, to: &Path) -> Result<(), PackError> {
    let files = walk(from)?;
    std::fs::create_dir_all(to).map_err(io(to))?;
    for f in files {
        let src = from.join(&f.rel);
        let dst = to.join(&f.rel);
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let bytes = read_plain(&src, MAX_FILE)?;
        write_file(&dst, &bytes, f.executable)?;
    }
    Ok(())
}

/// Writes a new file (`executable`: mode 755, else 644).
pub fn write_file(path: &Path, bytes: &[u8], executable: bool) -> Result<(), PackError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    let mode = if executable { 0o755 } else { 0o644 };
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(io(path))?;
    std::io::Write::write_all(&mut file, bytes).map_err(io(path))?;
    // The umask may have taken bits the file needs.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io(path))?;
    Ok(())
}
