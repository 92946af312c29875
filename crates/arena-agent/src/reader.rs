//! The reader: what Arena computes from files an agent made runs in a
//! process of its own, never in Arena's. An agent's worktree can hold a
//! FIFO where git expects a file, a file that takes minutes to hash or a
//! tree that takes gigabytes to walk; a thread of Arena's blocked on one
//! can be abandoned but never stopped, and it shares Arena's memory. A
//! reader process is started like a check (in the contestant's jail, read
//! only, no network, its own memory and a deadline), is killed when the
//! deadline passes or the battle is cancelled, and hands back one bounded
//! answer, which Arena parses as untrusted input.
//!
//! The reader is Arena's own binary: its `main` starts with
//! [`reader_main`], which answers `BIN __arena_read REQUEST ANSWER-FILE`
//! (the request as JSON on the command line, the answer written as JSON to
//! the file, which is in the reader's own scratch folder).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::diff::{self, Diff, DiffLimits};
use crate::left_out;

/// The first argument that makes an Arena binary a reader.
pub const READ: &str = "__arena_read";

/// What a reader is asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "read", rename_all = "snake_case")]
pub enum Request {
    /// [`diff::diff_files`] of a worktree.
    Diff {
        worktree: PathBuf,
        base: String,
        objects: Vec<PathBuf>,
        file_bytes: u64,
        total_bytes: u64,
    },
    /// [`left_out::left_out`] of an agent's worktree against the tree its
    /// check runs on.
    LeftOut {
        worktree: PathBuf,
        there: left_out::There,
    },
}

/// What a reader answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    Diff {
        diff: Diff,
    },
    LeftOut {
        left: left_out::LeftOut,
    },
    /// The read failed; the reason, in words.
    Failed {
        reason: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ReaderError {
    #[error("the reader left no answer at {}: {source}", path.display())]
    Missing {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the reader's answer at {} is not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("the reader's answer is over its {limit} bytes")]
    TooBig { limit: u64 },
    #[error("the reader's answer is not one Arena understands: {0}")]
    Unreadable(#[from] serde_json::Error),
}

impl Request {
    /// The reader's arguments, after the program: `__arena_read REQUEST
    /// ANSWER-FILE`.
    pub fn args(&self, answer: &Path) -> Vec<String> {
        vec![
            READ.to_string(),
            serde_json::to_string(self).unwrap_or_default(),
            answer.to_string_lossy().into_owned(),
        ]
    }

    /// The largest answer this request can have: the patch and the file
    /// list, written as JSON (every byte of the patch escaped at worst).
    pub fn answer_limit(&self) -> u64 {
        match self {
            Request::Diff { total_bytes, .. } => total_bytes.saturating_mul(6) + (64 << 20),
            // A bounded list of bounded paths, escaped at worst.
            Request::LeftOut { .. } => 4 << 20,
        }
    }

    /// Does the read here, in this process (the reader's work; also what
    /// Arena does itself where no reader can be started).
    pub fn answer(&self) -> Answer {
        match self {
            Request::Diff {
                worktree,
                base,
                objects,
                file_bytes,
                total_bytes,
            } => {
                let limits = DiffLimits {
                    file_bytes: *file_bytes,
                    total_bytes: *total_bytes,
                };
                match diff::diff_files(worktree, base, objects, limits) {
                    Ok(diff) => Answer::Diff { diff },
                    Err(e) => Answer::Failed {
                        reason: e.to_string(),
                    },
                }
            }
            Request::LeftOut { worktree, there } => Answer::LeftOut {
                left: left_out::left_out(worktree, there),
            },
        }
    }
}

/// The reader's entry point: when this process was started as a reader
/// (`BIN __arena_read REQUEST ANSWER-FILE`), answers and returns the exit
/// code; otherwise `None` (go on with the real `main`). Call it first
/// thing in `main`, beside [`crate::jail::confine_main`].
pub fn reader_main() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != READ {
        return None;
    }
    let (Some(request), Some(answer_path), None) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: {READ} REQUEST ANSWER-FILE");
        return Some(2);
    };
    let request: Request = match request.to_str().map(serde_json::from_str) {
        Some(Ok(request)) => request,
        _ => {
            eprintln!("{READ}: the request is not one this Arena understands");
            return Some(2);
        }
    };
    let answer = request.answer();
    let written = serde_json::to_vec(&answer)
        .map_err(std::io::Error::other)
        .and_then(|bytes| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&answer_path)
                .and_then(|mut file| std::io::Write::write_all(&mut file, &bytes))
        });
    match written {
        Ok(()) => Some(0),
        Err(e) => {
            eprintln!("{READ}: cannot write the answer: {e}");
            Some(1)
        }
    }
}

/// Reads a reader's answer from `path`: a regular file (no link followed),
/// at most `limit` bytes, parsed as untrusted input.
pub fn read_answer(path: &Path, limit: u64) -> Result<Answer, ReaderError> {
    let missing = |source| ReaderError::Missing {
        path: path.to_path_buf(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(missing)?;
    let meta = file.metadata().map_err(missing)?;
    if !meta.file_type().is_file() {
        return Err(ReaderError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    if meta.len() > limit {
        return Err(ReaderError::TooBig { limit });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(missing)?;
    if bytes.len() as u64 > limit {
        return Err(ReaderError::TooBig { limit });
    }
    Ok(serde_json::from_slice(&bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_goes_through_its_arguments_whole() {
        let request = Request::Diff {
            worktree: "/data/worktrees/b/1 é".into(),
            base: "abc".into(),
            objects: vec!["/p/.git/objects".into()],
            file_bytes: 1,
            total_bytes: 2,
        };
        let args = request.args(Path::new("/s/answer.json"));
        assert_eq!(args[0], READ);
        assert_eq!(serde_json::from_str::<Request>(&args[1]).unwrap(), request);
        assert_eq!(args[2], "/s/answer.json");
    }

    #[test]
    fn an_answer_is_read_only_from_a_small_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.json");
        let answer = Answer::Failed {
            reason: "no".into(),
        };
        std::fs::write(&good, serde_json::to_vec(&answer).unwrap()).unwrap();
        assert_eq!(read_answer(&good, 1000).unwrap(), answer);
        assert!(matches!(
            read_answer(&good, 5),
            Err(ReaderError::TooBig { .. })
        ));
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&good, &link).unwrap();
        assert!(matches!(
            read_answer(&link, 1000),
            Err(ReaderError::Missing { .. })
        ));
        let fifo = dir.path().join("fifo.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a plain mkfifo on a path made here.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read_answer(&fifo, 1000),
            Err(ReaderError::NotAFile { .. })
        ));
        std::fs::write(dir.path().join("bad.json"), "{\"answer\": \"what\"}").unwrap();
        assert!(matches!(
            read_answer(&dir.path().join("bad.json"), 1000),
            Err(ReaderError::Unreadable(_))
        ));
    }
}
