//! Reading a patch in `git diff` format back into files and lines, for
//! display: which files changed and how, and every hunk line with its old
//! and new line numbers.
//!
//! [`parse`] is pure and lenient: it never fails, it skips what it does not
//! understand (a `format-patch` preamble, mode lines, `index` lines) and it
//! reads both `git diff` output and plain unified diffs (`---`/`+++` only).
//! It understands what the agent layer's `diff_worktree` writes: new, deleted
//! and renamed files, binary files (`Binary files … differ` or a
//! `GIT binary patch`), quoted paths (`"a/caf\303\251.txt"`) and
//! `\ No newline at end of file`.

use serde::{Deserialize, Serialize};

/// Totals over a diff. Binary files count as files with no lines.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct DiffStats {
    pub files: usize,
    pub insertions: usize,
    pub deletions: usize,
}

/// How a file changed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ChangeStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
}

/// One changed file.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// Its path (the new one for a rename, the old one for a deletion),
    /// relative to the repository's top folder, with `/` separators.
    pub path: String,
    /// The path it was renamed from.
    pub old_path: Option<String>,
    pub status: ChangeStatus,
    /// Whether the patch carries it as binary data (files git takes for
    /// binary, and text that is not UTF-8).
    pub binary: bool,
    pub insertions: usize,
    pub deletions: usize,
    /// Why the patch carries only its name, size and hash (too big for a
    /// diff); `None` when its change is in the patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<String>,
}

/// Everything a contestant changed, as a patch and as a list of files.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Diff {
    /// `git diff` format; empty when nothing changed.
    pub patch: String,
    pub stats: DiffStats,
    /// In the order of the patch (by path).
    pub files: Vec<FileChange>,
}

/// What a line of a file's diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// A hunk header (`@@ -1,3 +1,4 @@ fn main`).
    Hunk,
    /// Unchanged; also `\ No newline at end of file`, which has no numbers.
    Context,
    Add,
    Delete,
}

/// One line of a file's diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchLine {
    pub kind: LineKind,
    /// The line without its `+`/`-`/space marker and line ending; a hunk
    /// header in full.
    pub text: String,
    /// 1-based, in the old file (context and deleted lines).
    pub old_line: Option<u32>,
    /// 1-based, in the new file (context and added lines).
    pub new_line: Option<u32>,
}

/// One file of a patch: how it changed (as the agent layer's `diff_worktree`
/// lists it) and its lines (none for binary data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    pub file: FileChange,
    pub lines: Vec<PatchLine>,
}

/// A Coding contestant's latest changes (see `Engine::contestant_diff`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContestantDiff {
    /// 1 for its own run, 2, 3, … for a refinement round.
    pub round: u32,
    pub files: Vec<FilePatch>,
}

/// The files of `patch`, in order.
pub fn parse(patch: &str) -> Vec<FilePatch> {
    let mut files = Vec::new();
    let mut current: Option<Section> = None;
    // `lines` also takes the `\r` of a CRLF line ending.
    let mut lines = patch.lines();
    let mut pending: Option<&str> = None;
    while let Some(line) = pending.take().or_else(|| lines.next()) {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            files.extend(current.take().map(Section::finish));
            current = Some(Section::git(rest));
            continue;
        }
        // In a plain unified diff, a file starts at `---` followed by `+++`
        // (in `git diff` output, after a `diff --git` line).
        let plain_start = match &current {
            None => true,
            Some(section) => section.header_done && section.hunk.as_ref().is_none_or(|h| h.ended),
        };
        if let (true, Some(old)) = (plain_start, line.strip_prefix("--- ")) {
            let next = lines.next();
            match next.and_then(|n| n.strip_prefix("+++ ")) {
                Some(new) => {
                    files.extend(current.take().map(Section::finish));
                    current = Some(Section::plain(old, new));
                }
                None => pending = next,
            }
            continue;
        }
        let Some(section) = current.as_mut() else {
            continue;
        };
        if let Some(hunk) = section.hunk.as_mut() {
            if let Some(line) = hunk.body(line) {
                section.lines.push(line);
                continue;
            }
            section.hunk = None;
        }
        if line.starts_with("@@") {
            let hunk = Hunk::parse(line);
            section.lines.push(PatchLine {
                kind: LineKind::Hunk,
                text: line.to_string(),
                old_line: None,
                new_line: None,
            });
            section.hunk = Some(hunk);
        } else if let Some(old) = line.strip_prefix("--- ") {
            section.old = Some(header_path(old));
        } else if let Some(new) = line.strip_prefix("+++ ") {
            section.new = Some(header_path(new));
            section.header_done = true;
        } else {
            section.extended_header(line);
        }
    }
    files.extend(current.take().map(Section::finish));
    files
}

/// A file being read.
#[derive(Default)]
struct Section {
    /// From `diff --git`, when its two paths can be told apart.
    git_paths: Option<(String, String)>,
    /// From `---` / `+++` (`None` for `/dev/null`).
    old: Option<Option<String>>,
    new: Option<Option<String>>,
    rename_from: Option<String>,
    rename_to: Option<String>,
    added: bool,
    deleted: bool,
    binary: bool,
    /// `+++` was seen: a later `---` starts another file.
    header_done: bool,
    hunk: Option<Hunk>,
    lines: Vec<PatchLine>,
}

impl Section {
    fn git(paths: &str) -> Section {
        Section {
            git_paths: git_header_paths(paths),
            ..Section::default()
        }
    }

    fn plain(old: &str, new: &str) -> Section {
        Section {
            old: Some(header_path(old)),
            new: Some(header_path(new)),
            header_done: true,
            ..Section::default()
        }
    }

    fn extended_header(&mut self, line: &str) {
        if line.starts_with("new file mode") {
            self.added = true;
        } else if line.starts_with("deleted file mode") {
            self.deleted = true;
        } else if let Some(path) = line.strip_prefix("rename from ") {
            self.rename_from = Some(unquote(path));
        } else if let Some(path) = line.strip_prefix("rename to ") {
            self.rename_to = Some(unquote(path));
        } else if let Some(path) = line.strip_prefix("copy to ") {
            // A copy is a new file with the copied one's content.
            self.added = true;
            self.rename_to = Some(unquote(path));
        } else if line == "GIT binary patch"
            || (line.starts_with("Binary files ") && line.ends_with(" differ"))
        {
            self.binary = true;
            if let Some(paths) = line
                .strip_prefix("Binary files ")
                .and_then(|l| l.strip_suffix(" differ"))
            {
                if let Some((old, new)) = paths.split_once(" and ") {
                    self.old.get_or_insert(header_path(old));
                    self.new.get_or_insert(header_path(new));
                }
            }
        }
    }

    fn finish(self) -> FilePatch {
        let added = self.added || matches!(self.old, Some(None));
        let deleted = self.deleted || matches!(self.new, Some(None));
        let (git_old, git_new) = match self.git_paths {
            Some((old, new)) => (Some(old), Some(new)),
            None => (None, None),
        };
        let old = self
            .rename_from
            .clone()
            .or(self.old.flatten())
            .or(git_old)
            .unwrap_or_default();
        let new = self
            .rename_to
            .clone()
            .or(self.new.flatten())
            .or(git_new)
            .unwrap_or_default();
        let renamed = self.rename_from.is_some() && !added;
        let status = if added {
            ChangeStatus::Added
        } else if deleted {
            ChangeStatus::Deleted
        } else if renamed {
            ChangeStatus::Renamed
        } else {
            ChangeStatus::Modified
        };
        let count = |kind| self.lines.iter().filter(|l| l.kind == kind).count();
        FilePatch {
            file: FileChange {
                path: if deleted { old.clone() } else { new },
                old_path: renamed.then_some(old),
                status,
                binary: self.binary,
                insertions: count(LineKind::Add),
                deletions: count(LineKind::Delete),
                omitted: None,
            },
            lines: self.lines,
        }
    }
}

/// Where a hunk is, and how many of its lines are still to come.
struct Hunk {
    old_next: u32,
    new_next: u32,
    /// Old and new lines left, from the header; `None` when the header
    /// could not be read (then body lines are recognised by their marker).
    left: Option<(u32, u32)>,
    /// The last body line was read: only a `\ No newline` may follow.
    ended: bool,
}

impl Hunk {
    /// `@@ -12,5 +12,6 @@ optional text`; a count left out is 1.
    fn parse(header: &str) -> Hunk {
        let ranges = header
            .strip_prefix("@@ -")
            .and_then(|rest| rest.split_once(" @@"))
            .and_then(|(ranges, _)| ranges.split_once(" +"))
            .and_then(|(old, new)| Some((range(old)?, range(new)?)));
        match ranges {
            Some(((old_start, old_count), (new_start, new_count))) => Hunk {
                old_next: old_start,
                new_next: new_start,
                left: Some((old_count, new_count)),
                ended: old_count == 0 && new_count == 0,
            },
            None => Hunk {
                old_next: 1,
                new_next: 1,
                left: None,
                ended: false,
            },
        }
    }

    /// The body line `line` is, or `None` when the hunk is over.
    fn body(&mut self, line: &str) -> Option<PatchLine> {
        if line.starts_with('\\') {
            // `\ No newline at end of file`: about the line before it.
            return Some(PatchLine {
                kind: LineKind::Context,
                text: line.to_string(),
                old_line: None,
                new_line: None,
            });
        }
        if self.ended {
            return None;
        }
        let (marker, text) = match line.chars().next() {
            // Some tools strip the space of an empty context line.
            None => (' ', ""),
            Some(c @ (' ' | '+' | '-')) => (c, &line[1..]),
            Some(_) => return None,
        };
        if self.left.is_none() && line.is_empty() {
            return None;
        }
        let (kind, old_line, new_line) = match marker {
            '+' => (LineKind::Add, None, Some(self.new_next)),
            '-' => (LineKind::Delete, Some(self.old_next), None),
            _ => (LineKind::Context, Some(self.old_next), Some(self.new_next)),
        };
        if old_line.is_some() {
            self.old_next += 1;
        }
        if new_line.is_some() {
            self.new_next += 1;
        }
        if let Some((old_left, new_left)) = self.left.as_mut() {
            if old_line.is_some() {
                *old_left = old_left.saturating_sub(1);
            }
            if new_line.is_some() {
                *new_left = new_left.saturating_sub(1);
            }
            self.ended = *old_left == 0 && *new_left == 0;
        }
        Some(PatchLine {
            kind,
            text: text.to_string(),
            old_line,
            new_line,
        })
    }
}

/// `12,5` or `12` (count 1).
fn range(text: &str) -> Option<(u32, u32)> {
    match text.split_once(',') {
        Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
        None => Some((text.parse().ok()?, 1)),
    }
}

/// The path of a `---`/`+++` line (or a side of `Binary files … differ`):
/// `None` for `/dev/null`, else without its `a/`/`b/` prefix and anything
/// after a tab (git ends a path with spaces with one; plain diffs put a
/// timestamp there).
fn header_path(text: &str) -> Option<String> {
    let path = match split_quoted(text) {
        Some((path, _)) => path,
        None => text.split('\t').next().unwrap_or(text).to_string(),
    };
    (path != "/dev/null").then(|| strip_side(&path).to_string())
}

fn strip_side(path: &str) -> &str {
    path.strip_prefix("a/")
        .or_else(|| path.strip_prefix("b/"))
        .unwrap_or(path)
}

/// The two paths of `diff --git a/OLD b/NEW`: quoted ones are read as
/// such; unquoted ones are split where the halves match (`a/P b/P`), which
/// is all that a path with spaces allows. `None` when it cannot tell.
fn git_header_paths(text: &str) -> Option<(String, String)> {
    if text.starts_with('"') {
        let (old, rest) = split_quoted(text)?;
        let new = rest.trim_start();
        let new = if new.starts_with('"') {
            split_quoted(new)?.0
        } else {
            new.to_string()
        };
        return Some((strip_side(&old).to_string(), strip_side(&new).to_string()));
    }
    if let Some(at) = text.find(" \"") {
        let (new, _) = split_quoted(&text[at + 1..])?;
        return Some((
            strip_side(&text[..at]).to_string(),
            strip_side(&new).to_string(),
        ));
    }
    // Unquoted `a/P b/P`: same length halves.
    let rest = text.strip_prefix("a/")?;
    if rest.len() >= 3 && (rest.len() - 3) % 2 == 0 {
        let len = (rest.len() - 3) / 2;
        if let (Some(old), Some(tail)) = (rest.get(..len), rest.get(len..)) {
            if tail.strip_prefix(" b/") == Some(old) {
                return Some((old.to_string(), old.to_string()));
            }
        }
    }
    // Different paths without spaces (a rename header).
    let (old, new) = text.split_once(' ')?;
    (!new.contains(' ')).then(|| (strip_side(old).to_string(), strip_side(new).to_string()))
}

/// A leading C-quoted string of `text` (unquoted) and what follows it.
fn split_quoted(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('"')?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some((unquote(&text[..i + 2]), &body[i + 1..])),
            _ => {}
        }
    }
    None
}

/// Reads a path git may have C-quoted (`"caf\303\251 \"x\".txt"`): escapes
/// and octal bytes decoded, the bytes read as UTF-8. Unquoted text is
/// returned as it is.
fn unquote(text: &str) -> String {
    let Some(body) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return text.to_string();
    };
    let mut bytes = Vec::with_capacity(body.len());
    let mut chars = body.bytes().peekable();
    while let Some(b) = chars.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        let Some(e) = chars.next() else {
            bytes.push(b'\\');
            break;
        };
        match e {
            b'n' => bytes.push(b'\n'),
            b't' => bytes.push(b'\t'),
            b'r' => bytes.push(b'\r'),
            b'a' => bytes.push(0x07),
            b'b' => bytes.push(0x08),
            b'f' => bytes.push(0x0c),
            b'v' => bytes.push(0x0b),
            b'0'..=b'7' => {
                let mut value = u32::from(e - b'0');
                for _ in 0..2 {
                    match chars.peek() {
                        Some(d @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(d - b'0');
                            chars.next();
                        }
                        _ => break,
                    }
                }
                bytes.push((value & 0xff) as u8);
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: LineKind, text: &str, old: Option<u32>, new: Option<u32>) -> PatchLine {
        PatchLine {
            kind,
            text: text.into(),
            old_line: old,
            new_line: new,
        }
    }

    #[test]
    fn a_modified_file_gets_numbered_lines() {
        let files = parse(
            "diff --git a/src/lib.rs b/src/lib.rs\n\
             index 1111111..2222222 100644\n\
             --- a/src/lib.rs\n\
             +++ b/src/lib.rs\n\
             @@ -1,3 +1,3 @@ fn main\n\
             \x20one\n\
             -two\n\
             +deux\n\
             \x20three\n\
             @@ -10 +10,2 @@\n\
             \x20ten\n\
             +eleven\n",
        );
        assert_eq!(files.len(), 1);
        let f = &files[0];
        assert_eq!(f.file.path, "src/lib.rs");
        assert_eq!(f.file.old_path, None);
        assert_eq!(f.file.status, ChangeStatus::Modified);
        assert!(!f.file.binary);
        assert_eq!((f.file.insertions, f.file.deletions), (2, 1));
        use LineKind::*;
        assert_eq!(
            f.lines,
            vec![
                line(Hunk, "@@ -1,3 +1,3 @@ fn main", None, None),
                line(Context, "one", Some(1), Some(1)),
                line(Delete, "two", Some(2), None),
                line(Add, "deux", None, Some(2)),
                line(Context, "three", Some(3), Some(3)),
                line(Hunk, "@@ -10 +10,2 @@", None, None),
                line(Context, "ten", Some(10), Some(10)),
                line(Add, "eleven", None, Some(11)),
            ]
        );
    }

    #[test]
    fn new_deleted_and_renamed_files() {
        let files = parse(
            "diff --git a/new.txt b/new.txt\n\
             new file mode 100644\n\
             index 0000000..3b18e51\n\
             --- /dev/null\n\
             +++ b/new.txt\n\
             @@ -0,0 +1 @@\n\
             +hello\n\
             diff --git a/gone.txt b/gone.txt\n\
             deleted file mode 100644\n\
             index 3b18e51..0000000\n\
             --- a/gone.txt\n\
             +++ /dev/null\n\
             @@ -1,2 +0,0 @@\n\
             -bye\n\
             -now\n\
             diff --git a/old name.txt b/new name.txt\n\
             similarity index 90%\n\
             rename from old name.txt\n\
             rename to new name.txt\n\
             index 1111111..2222222 100644\n\
             --- a/old name.txt\n\
             +++ b/new name.txt\n\
             @@ -1 +1 @@\n\
             -a\n\
             +b\n\
             diff --git a/moved.rs b/src/moved.rs\n\
             similarity index 100%\n\
             rename from moved.rs\n\
             rename to src/moved.rs\n",
        );
        let summary: Vec<_> = files
            .iter()
            .map(|f| {
                (
                    f.file.path.as_str(),
                    f.file.old_path.as_deref(),
                    f.file.status,
                    f.file.insertions,
                    f.file.deletions,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("new.txt", None, ChangeStatus::Added, 1, 0),
                ("gone.txt", None, ChangeStatus::Deleted, 0, 2),
                (
                    "new name.txt",
                    Some("old name.txt"),
                    ChangeStatus::Renamed,
                    1,
                    1
                ),
                (
                    "src/moved.rs",
                    Some("moved.rs"),
                    ChangeStatus::Renamed,
                    0,
                    0
                ),
            ]
        );
        assert_eq!(
            files[0].lines[1],
            line(LineKind::Add, "hello", None, Some(1))
        );
        assert_eq!(
            files[1].lines[2],
            line(LineKind::Delete, "now", Some(2), None)
        );
        assert!(files[3].lines.is_empty());
    }

    #[test]
    fn binary_files_have_no_lines() {
        let files = parse(
            "diff --git a/logo.png b/logo.png\n\
             new file mode 100644\n\
             index 0000000..d5c8e0a\n\
             GIT binary patch\n\
             literal 12\n\
             TcmZ?wbhEHbWMp7uU|;|M2RH!w\n\
             \n\
             literal 0\n\
             HcmV?d00001\n\
             \n\
             diff --git a/data.bin b/data.bin\n\
             index 1111111..2222222 100644\n\
             Binary files a/data.bin and b/data.bin differ\n\
             diff --git a/old.bin b/old.bin\n\
             deleted file mode 100644\n\
             index 1111111..0000000\n\
             Binary files a/old.bin and /dev/null differ\n",
        );
        let summary: Vec<_> = files
            .iter()
            .map(|f| {
                (
                    f.file.path.as_str(),
                    f.file.status,
                    f.file.binary,
                    f.lines.len(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("logo.png", ChangeStatus::Added, true, 0),
                ("data.bin", ChangeStatus::Modified, true, 0),
                ("old.bin", ChangeStatus::Deleted, true, 0),
            ]
        );
    }

    #[test]
    fn no_newline_markers_are_context_without_numbers() {
        let files = parse(
            "diff --git a/a.txt b/a.txt\n\
             --- a/a.txt\n\
             +++ b/a.txt\n\
             @@ -1 +1 @@\n\
             -old\n\
             \\ No newline at end of file\n\
             +new\n\
             \\ No newline at end of file\n",
        );
        let f = &files[0];
        assert_eq!((f.file.insertions, f.file.deletions), (1, 1));
        assert_eq!(
            f.lines[2],
            line(
                LineKind::Context,
                "\\ No newline at end of file",
                None,
                None
            )
        );
        assert_eq!(f.lines[3], line(LineKind::Add, "new", None, Some(1)));
        assert_eq!(f.lines.len(), 5);
    }

    #[test]
    fn body_lines_that_look_like_headers_stay_in_their_hunk() {
        // A deleted "-- x" and an added "++ y" line, then a new file.
        let files = parse(
            "diff --git a/notes.md b/notes.md\n\
             --- a/notes.md\n\
             +++ b/notes.md\n\
             @@ -1,2 +1,2 @@\n\
             --- x\n\
             +++ y\n\
             \n\
             diff --git a/b.txt b/b.txt\n\
             --- a/b.txt\n\
             +++ b/b.txt\n\
             @@ -1 +1 @@\n\
             -1\n\
             +2\n",
        );
        assert_eq!(files.len(), 2);
        let kinds: Vec<_> = files[0]
            .lines
            .iter()
            .map(|l| (l.kind, l.text.as_str()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (LineKind::Hunk, "@@ -1,2 +1,2 @@"),
                (LineKind::Delete, "-- x"),
                (LineKind::Add, "++ y"),
                // An empty context line whose space was stripped.
                (LineKind::Context, ""),
            ]
        );
        assert_eq!(files[1].file.path, "b.txt");
    }

    #[test]
    fn quoted_paths_are_decoded() {
        let files = parse(
            "diff --git \"a/caf\\303\\251 \\\"menu\\\".txt\" \"b/caf\\303\\251 \\\"menu\\\".txt\"\n\
             new file mode 100644\n\
             --- /dev/null\n\
             +++ \"b/caf\\303\\251 \\\"menu\\\".txt\"\n\
             @@ -0,0 +1 @@\n\
             +x\n\
             diff --git \"a/tab\\there\" \"b/tab\\there\"\n\
             deleted file mode 100644\n\
             Binary files \"a/tab\\there\" and /dev/null differ\n",
        );
        assert_eq!(files[0].file.path, "café \"menu\".txt");
        assert_eq!(files[0].file.status, ChangeStatus::Added);
        assert_eq!(files[1].file.path, "tab\there");
        assert_eq!(files[1].file.status, ChangeStatus::Deleted);
    }

    #[test]
    fn plain_unified_diffs_and_crlf_are_read() {
        let files = parse(
            "Some preamble\r\n\
             --- a/one.txt\t2024-01-01 00:00:00\r\n\
             +++ b/one.txt\t2024-01-01 00:00:01\r\n\
             @@ -1 +1 @@\r\n\
             -a\r\n\
             +b\r\n\
             --- /dev/null\n\
             +++ b/two.txt\n\
             @@ -0,0 +1,2 @@\n\
             +x\n\
             +y\n",
        );
        let summary: Vec<_> = files
            .iter()
            .map(|f| {
                (
                    f.file.path.as_str(),
                    f.file.status,
                    f.file.insertions,
                    f.file.deletions,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("one.txt", ChangeStatus::Modified, 1, 1),
                ("two.txt", ChangeStatus::Added, 2, 0),
            ]
        );
        assert_eq!(files[0].lines[2].text, "b", "no carriage return left");
    }

    #[test]
    fn mode_changes_and_empty_files_have_no_lines() {
        let files = parse(
            "diff --git a/run.sh b/run.sh\n\
             old mode 100644\n\
             new mode 100755\n\
             diff --git a/empty.txt b/empty.txt\n\
             new file mode 100644\n\
             index 0000000..e69de29\n\
             diff --git a/was empty b/was empty\n\
             deleted file mode 100644\n\
             index e69de29..0000000\n\
             diff --git \"a/tab\\there\" \"b/tab\\there\"\n\
             old mode 100644\n\
             new mode 100755\n",
        );
        let summary: Vec<_> = files
            .iter()
            .map(|f| (f.file.path.as_str(), f.file.status, f.lines.len()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("run.sh", ChangeStatus::Modified, 0),
                ("empty.txt", ChangeStatus::Added, 0),
                ("was empty", ChangeStatus::Deleted, 0),
                ("tab\there", ChangeStatus::Modified, 0),
            ]
        );
    }

    #[test]
    fn nothing_and_garbage_give_no_files() {
        assert!(parse("").is_empty());
        assert!(parse("hello\nworld\n").is_empty());
        // A hunk header it cannot read still shows, with its lines.
        let files = parse("diff --git a/x b/x\n@@ bogus @@\n+1\n-2\n");
        assert_eq!(files[0].lines.len(), 3);
        assert_eq!(files[0].lines[1].new_line, Some(1));
    }
}
