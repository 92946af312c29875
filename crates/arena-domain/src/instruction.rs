//! A mined task's instruction, without the answer (issue 41, point 5):
//! the rules the writer model works under, the *interface* section Arena
//! computes itself from the patches, the audit that rejects an instruction
//! giving the fix away, and a task's review state in its task.toml.
//!
//! The model writes the behaviour (what is wrong or missing, what is
//! expected) from the commit message, the hidden test patch and the RED
//! run's failure output. Arena adds the interface: the names and
//! signatures the hidden tests call that the gold patch adds or changes —
//! without them hidden tests fail to compile whatever the agent does. The
//! extraction is line-based (Python `def`/`class`, Rust
//! `fn`/`struct`/`enum`/`trait`/`type` and methods inside `impl`, Go
//! `func`/`type`, JS/TS `function`/`class`/`export`): careful about
//! multi-line signatures, not a parser, so a definition a macro or a
//! generator makes is not found.
//!
//! The audit ([`audit`]) rejects an instruction holding any added line of
//! the gold patch of [`MIN_LEAKED_LINE`] or more characters (trimmed), an
//! identifier only the gold patch introduces that the tests do not
//! reference, a commit hash, an issue or PR number, a URL.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::pack::PackFormatError;

/// The RED run's failure output of a validated task (a bounded tail),
/// kept beside the hidden tests: `tests/` is never bound into an agent's
/// jail.
pub const RED_OUTPUT_FILE: &str = "tests/red-output.txt";
/// The mined commit's whole message, beside the hidden tests.
pub const COMMIT_MESSAGE_FILE: &str = "tests/commit-message.txt";
/// The shortest added gold line the audit looks for.
pub const MIN_LEAKED_LINE: usize = 20;
/// The heading of the section Arena adds.
pub const INTERFACE_HEADING: &str = "## Interface";
/// How much of the RED output and of the test patch the prompt carries.
pub const PROMPT_PART_BYTES: usize = 12 * 1024;

// ------------------------------------------------------------------ patches

/// One line of a unified diff, with the file it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Added,
    Removed,
    Context,
}

struct DiffLine<'a> {
    file: &'a str,
    side: Side,
    text: &'a str,
    /// The hunk header's context (`@@ … @@ impl Foo {`).
    header: &'a str,
}

fn diff_lines(patch: &str) -> Vec<DiffLine<'_>> {
    let mut out = Vec::new();
    let (mut file, mut header, mut in_hunk) = ("", "", false);
    for line in patch.lines() {
        if let Some(rest) = line.strip_prefix("+++ ") {
            file = rest.strip_prefix("b/").unwrap_or(rest).trim_end();
            in_hunk = false;
            continue;
        }
        if line.starts_with("--- ") && !in_hunk {
            continue;
        }
        if line.starts_with("diff --git ") {
            in_hunk = false;
            continue;
        }
        if let Some(rest) = line.strip_prefix("@@") {
            in_hunk = true;
            header = rest.split_once("@@").map(|(_, h)| h.trim()).unwrap_or("");
            continue;
        }
        if !in_hunk {
            continue;
        }
        let (side, text) = match line.as_bytes().first() {
            Some(b'+') => (Side::Added, &line[1..]),
            Some(b'-') => (Side::Removed, &line[1..]),
            Some(b' ') => (Side::Context, &line[1..]),
            None => (Side::Context, ""),
            _ => continue,
        };
        out.push(DiffLine {
            file,
            side,
            text,
            header,
        });
    }
    out
}

/// The added lines of a patch.
pub fn added_lines(patch: &str) -> Vec<&str> {
    diff_lines(patch)
        .into_iter()
        .filter(|l| l.side == Side::Added)
        .map(|l| l.text)
        .collect()
}

/// The identifiers (`[A-Za-z_][A-Za-z0-9_]*`) of `text`.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            w.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        })
}

/// An identifier that reads as code, not as an English word: it has an
/// underscore, a digit, or a capital after its first letter, and 4 or
/// more characters. Plain words (`sorted`, `median`) are what a behaviour
/// is written in; the audit cannot tell them from code and does not try.
fn is_code_like(word: &str) -> bool {
    word.len() >= 4
        && word.chars().any(|c| c.is_ascii_alphabetic())
        && (word.trim_matches('_').contains('_')
            || word.chars().any(|c| c.is_ascii_digit())
            || word.chars().skip(1).any(|c| c.is_ascii_uppercase()))
        && !word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
}

// ------------------------------------------------------------------ audit

/// Why an instruction was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", content = "found", rename_all = "snake_case")]
pub enum Leak {
    /// It holds an added line of the gold patch (trimmed, ≥ 20 characters).
    GoldLine(String),
    /// It names an identifier only the gold patch introduces and the tests
    /// do not reference.
    GoldIdentifier(String),
    /// It holds something that reads as a commit hash (7–40 hex digits
    /// with at least one digit and one letter).
    CommitHash(String),
    /// It holds an issue or PR number (`#123`, `GH-123`).
    IssueNumber(String),
    /// It holds a URL.
    Url(String),
}

impl std::fmt::Display for Leak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Leak::GoldLine(l) => write!(f, "it copies a line of the fix: `{l}`"),
            Leak::GoldIdentifier(w) => {
                write!(f, "it names `{w}`, which only the fix introduces")
            }
            Leak::CommitHash(h) => write!(f, "it holds a commit hash: `{h}`"),
            Leak::IssueNumber(n) => write!(f, "it holds an issue or PR number: `{n}`"),
            Leak::Url(u) => write!(f, "it holds a URL: `{u}`"),
        }
    }
}

/// What the audit rejects in `text`, given the task's gold and test
/// patches: nothing when the instruction may be shown.
pub fn audit(text: &str, gold_patch: &str, test_patch: &str) -> Vec<Leak> {
    let mut leaks = Vec::new();
    let mut seen = BTreeSet::new();
    for line in added_lines(gold_patch) {
        let line = line.trim();
        if line.chars().count() >= MIN_LEAKED_LINE && text.contains(line) && seen.insert(line) {
            leaks.push(Leak::GoldLine(line.to_string()));
        }
    }
    for word in gold_only_identifiers(gold_patch, test_patch) {
        if identifiers(text).any(|w| w == word) {
            leaks.push(Leak::GoldIdentifier(word));
        }
    }
    leaks.extend(urls(text).into_iter().map(Leak::Url));
    leaks.extend(issue_numbers(text).into_iter().map(Leak::IssueNumber));
    leaks.extend(commit_hashes(text).into_iter().map(Leak::CommitHash));
    leaks
}

/// The code-like identifiers ([`is_code_like`]) of the gold patch's added
/// lines that neither its removed or context lines (what the base shows
/// of itself) nor the test patch hold.
pub fn gold_only_identifiers(gold_patch: &str, test_patch: &str) -> BTreeSet<String> {
    let lines = diff_lines(gold_patch);
    let mut base: BTreeSet<&str> = BTreeSet::new();
    for l in &lines {
        if l.side != Side::Added {
            base.extend(identifiers(l.text));
        }
        base.extend(identifiers(l.header));
    }
    let tests: BTreeSet<&str> = identifiers(test_patch).collect();
    lines
        .iter()
        .filter(|l| l.side == Side::Added)
        .flat_map(|l| identifiers(l.text))
        .filter(|w| is_code_like(w) && !base.contains(w) && !tests.contains(w))
        .map(str::to_string)
        .collect()
}

fn urls(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lower = text.to_ascii_lowercase();
    for scheme in ["http://", "https://", "ftp://", "git@", "www."] {
        let mut from = 0;
        while let Some(at) = lower[from..].find(scheme) {
            let start = from + at;
            let end = text[start..]
                .find(|c: char| c.is_whitespace() || matches!(c, ')' | '>' | '`' | '"' | '\''))
                .map_or(text.len(), |e| start + e);
            out.push(text[start..end].to_string());
            from = end.max(start + scheme.len());
        }
    }
    out
}

fn issue_numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        let digits_from = if c == '#' {
            // Not a Markdown heading's `#` (followed by a space) and not
            // part of a word (`C#1`).
            let before = text[..i].chars().next_back();
            if before.is_some_and(|b| b.is_ascii_alphanumeric()) {
                continue;
            }
            i + 1
        } else if (c == 'G' || c == 'g')
            && text[i..].len() >= 3
            && text[i..i + 3].eq_ignore_ascii_case("gh-")
            && !text[..i]
                .chars()
                .next_back()
                .is_some_and(|b| b.is_ascii_alphanumeric())
        {
            i + 3
        } else {
            continue;
        };
        let n = bytes[digits_from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if n > 0 {
            out.push(text[i..digits_from + n].to_string());
        }
    }
    out
}

fn commit_hashes(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            (7..=40).contains(&w.len())
                && w.chars().all(|c| c.is_ascii_hexdigit())
                && w.chars().any(|c| c.is_ascii_digit())
                && w.chars().any(|c| c.is_ascii_alphabetic())
        })
        .map(str::to_string)
        .collect()
}

// ------------------------------------------------------------------ interface

/// What a definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    Function,
    Method,
    Class,
    Struct,
    Enum,
    Trait,
    Type,
    Constant,
}

impl ItemKind {
    fn word(self) -> &'static str {
        match self {
            ItemKind::Function => "function",
            ItemKind::Method => "method",
            ItemKind::Class => "class",
            ItemKind::Struct => "struct",
            ItemKind::Enum => "enum",
            ItemKind::Trait => "trait",
            ItemKind::Type => "type",
            ItemKind::Constant => "constant",
        }
    }
}

/// A name the hidden tests call that the gold patch adds or changes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct InterfaceItem {
    pub file: String,
    pub kind: ItemKind,
    pub name: String,
    /// The type or class it belongs to (a method).
    pub owner: Option<String>,
    /// Its signature without the keyword that defines it and the name's
    /// visibility (`median(xs)`, `parse(input: &str) -> Result<Range>`);
    /// empty for a type.
    pub signature: String,
}

/// The names and signatures the test patch references that the gold
/// patch defines on an added line (a new definition, or one whose
/// signature changed), per the file's language.
pub fn interface(gold_patch: &str, test_patch: &str) -> Vec<InterfaceItem> {
    let tests: BTreeSet<&str> = diff_lines(test_patch)
        .into_iter()
        .filter(|l| l.side != Side::Removed)
        .flat_map(|l| identifiers(l.text))
        .collect();
    let lines = diff_lines(gold_patch);
    let mut items = BTreeSet::new();
    let mut owner: Option<(String, usize)> = None;
    let mut file = "";
    for (i, line) in lines.iter().enumerate() {
        if line.file != file {
            file = line.file;
            owner = None;
        }
        let Some(lang) = Lang::of(file) else { continue };
        if line.side == Side::Removed {
            continue;
        }
        let indent = line.text.len() - line.text.trim_start().len();
        // The owner (class, impl) a line's indentation sits in.
        if let Some((_, at)) = &owner {
            if indent <= *at && !line.text.trim().is_empty() && lang != Lang::Go {
                owner = None;
            }
        }
        if owner.is_none() {
            if let Some(o) = header_owner(lang, line.header) {
                owner = Some((o, 0));
            }
        }
        let Some(mut found) = definition(lang, line.text.trim_start()) else {
            continue;
        };
        if matches!(found.kind, ItemKind::Class)
            || (lang == Lang::Rust && found.kind == ItemKind::Type && found.signature == "impl")
        {
            owner = Some((found.name.clone(), indent));
            if found.signature == "impl" {
                continue;
            }
        }
        if line.side != Side::Added {
            continue;
        }
        // A signature over several lines: join what follows until it closes.
        if !found.signature.is_empty() {
            let mut sig = found.signature.clone();
            let mut j = i + 1;
            while !balanced(&sig) && j < lines.len() && j < i + 12 && lines[j].side == Side::Added {
                sig.push(' ');
                sig.push_str(lines[j].text.trim());
                j += 1;
            }
            found.signature = finish_signature(lang, &sig);
        }
        if found.kind == ItemKind::Function && indent > 0 {
            if let Some((o, _)) = &owner {
                found.kind = ItemKind::Method;
                found.owner = Some(o.clone());
            }
        }
        if lang == Lang::Go {
            if let Some(recv) = found.owner.clone() {
                found.kind = ItemKind::Method;
                found.owner = Some(recv);
            }
        }
        if !tests.contains(found.name.as_str()) {
            continue;
        }
        found.file = file.to_string();
        items.insert(found);
    }
    items.into_iter().collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Python,
    Rust,
    Go,
    Script,
}

impl Lang {
    fn of(file: &str) -> Option<Lang> {
        let ext = file.rsplit_once('.').map(|(_, e)| e)?;
        match ext {
            "py" | "pyi" => Some(Lang::Python),
            "rs" => Some(Lang::Rust),
            "go" => Some(Lang::Go),
            "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "mts" | "cts" => Some(Lang::Script),
            _ => None,
        }
    }
}

fn ident_at(s: &str) -> Option<(&str, &str)> {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(s.len());
    let name = &s[..end];
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then(|| (name, &s[end..]))
}

fn strip_words<'a>(mut s: &'a str, words: &[&str]) -> &'a str {
    loop {
        let before = s;
        for w in words {
            if let Some(rest) = s.strip_prefix(w) {
                if rest.starts_with(|c: char| c.is_whitespace() || c == '(') {
                    s = rest.trim_start();
                    if w == &"pub" && s.starts_with('(') {
                        s = s.find(')').map_or(s, |e| s[e + 1..].trim_start());
                    }
                }
            }
        }
        if s == before {
            return s;
        }
    }
}

fn item(kind: ItemKind, name: &str, signature: String) -> InterfaceItem {
    InterfaceItem {
        file: String::new(),
        kind,
        name: name.to_string(),
        owner: None,
        signature,
    }
}

/// A definition on `line` (trimmed at its start).
fn definition(lang: Lang, line: &str) -> Option<InterfaceItem> {
    match lang {
        Lang::Python => {
            let s = strip_words(line, &["async"]);
            if let Some(rest) = s.strip_prefix("def ") {
                let (name, _) = ident_at(rest.trim_start())?;
                return Some(item(ItemKind::Function, name, rest.trim().to_string()));
            }
            let rest = s.strip_prefix("class ")?;
            let (name, _) = ident_at(rest.trim_start())?;
            Some(item(ItemKind::Class, name, String::new()))
        }
        Lang::Rust => {
            let s = strip_words(
                line,
                &[
                    "pub", "const", "async", "unsafe", "extern", "default", "\"C\"",
                ],
            );
            if let Some(rest) = s.strip_prefix("fn ") {
                let (name, _) = ident_at(rest.trim_start())?;
                return Some(item(ItemKind::Function, name, rest.trim().to_string()));
            }
            if let Some(rest) = s.strip_prefix("impl") {
                // `impl<T> Trait for Type<T> {` → Type; `impl Type {` → Type.
                let rest = rest.split('{').next().unwrap_or("");
                let target = rest.rsplit(" for ").next().unwrap_or(rest).trim();
                let target = target.strip_prefix('<').map_or(target, |t| {
                    t.split_once('>').map_or(t, |(_, after)| after.trim())
                });
                let (name, _) = ident_at(target.trim_start_matches('&'))?;
                return Some(item(ItemKind::Type, name, "impl".into()));
            }
            for (kw, kind) in [
                ("struct ", ItemKind::Struct),
                ("enum ", ItemKind::Enum),
                ("trait ", ItemKind::Trait),
                ("type ", ItemKind::Type),
            ] {
                if let Some(rest) = s.strip_prefix(kw) {
                    let (name, _) = ident_at(rest.trim_start())?;
                    return Some(item(kind, name, String::new()));
                }
            }
            None
        }
        Lang::Go => {
            if let Some(rest) = line.strip_prefix("func ") {
                let rest = rest.trim_start();
                let (owner, rest) = match rest.strip_prefix('(') {
                    Some(r) => {
                        let (recv, after) = r.split_once(')')?;
                        let ty = recv.split_whitespace().last()?.trim_start_matches('*');
                        let ty = ty.split('[').next().unwrap_or(ty);
                        (Some(ty.to_string()), after.trim_start())
                    }
                    None => (None, rest),
                };
                let (name, _) = ident_at(rest)?;
                let mut found = item(ItemKind::Function, name, rest.trim().to_string());
                found.owner = owner;
                return Some(found);
            }
            let rest = line.strip_prefix("type ")?;
            let (name, after) = ident_at(rest.trim_start())?;
            let kind = if after.trim_start().starts_with("interface") {
                ItemKind::Trait
            } else if after.trim_start().starts_with("struct") {
                ItemKind::Struct
            } else {
                ItemKind::Type
            };
            Some(item(kind, name, String::new()))
        }
        Lang::Script => {
            let s = strip_words(line, &["export", "default", "declare", "async"]);
            if let Some(rest) = s.strip_prefix("function") {
                let rest = rest.trim_start_matches('*').trim_start();
                let (name, _) = ident_at(rest)?;
                return Some(item(ItemKind::Function, name, rest.trim().to_string()));
            }
            if let Some(rest) = s.strip_prefix("class ") {
                let (name, _) = ident_at(rest.trim_start())?;
                return Some(item(ItemKind::Class, name, String::new()));
            }
            for (kw, kind) in [
                ("interface ", ItemKind::Trait),
                ("type ", ItemKind::Type),
                ("enum ", ItemKind::Enum),
            ] {
                if let Some(rest) = s.strip_prefix(kw) {
                    let (name, _) = ident_at(rest.trim_start())?;
                    return Some(item(kind, name, String::new()));
                }
            }
            if line.starts_with("export") {
                for kw in ["const ", "let ", "var "] {
                    if let Some(rest) = s.strip_prefix(kw) {
                        let (name, after) = ident_at(rest.trim_start())?;
                        let after = after.trim_start().strip_prefix('=').unwrap_or("").trim();
                        let after = strip_words(after, &["async"]);
                        // An exported arrow function keeps its parameters.
                        if after.starts_with('(') {
                            let params = after.split("=>").next().unwrap_or(after).trim();
                            return Some(item(ItemKind::Function, name, format!("{name}{params}")));
                        }
                        return Some(item(ItemKind::Constant, name, String::new()));
                    }
                }
            }
            // A method in a class body: `name(args) {`.
            let (name, after) = ident_at(s)?;
            let reserved = [
                "if", "for", "while", "switch", "return", "catch", "function",
            ];
            if after.starts_with('(')
                && line.trim_end().ends_with('{')
                && !reserved.contains(&name)
                && !line.contains(';')
            {
                return Some(item(ItemKind::Function, name, s.trim().to_string()));
            }
            None
        }
    }
}

/// The owner a hunk header names (`@@ … @@ class Foo:`, `impl Foo {`).
fn header_owner(lang: Lang, header: &str) -> Option<String> {
    let d = definition(lang, header.trim_start())?;
    match d.kind {
        ItemKind::Class => Some(d.name),
        ItemKind::Type if d.signature == "impl" => Some(d.name),
        _ => None,
    }
}

fn balanced(sig: &str) -> bool {
    let (mut depth, mut opened) = (0i32, false);
    for c in sig.chars() {
        match c {
            '(' => {
                depth += 1;
                opened = true;
            }
            ')' => depth -= 1,
            _ => {}
        }
    }
    opened && depth <= 0
}

/// A signature's text up to where its body starts.
fn finish_signature(lang: Lang, sig: &str) -> String {
    let sig = sig.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut = match lang {
        Lang::Python => sig.rfind(':').filter(|_| sig.trim_end().ends_with(':')),
        Lang::Rust => sig
            .find(" where ")
            .or_else(|| sig.rfind('{'))
            .or_else(|| sig.rfind(';')),
        Lang::Go | Lang::Script => sig.rfind('{'),
    };
    let sig = match cut {
        Some(at) => &sig[..at],
        None => &sig[..],
    };
    sig.trim().trim_end_matches(',').to_string()
}

/// The interface section for `items`: empty when there is none.
pub fn interface_section(items: &[InterfaceItem]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "{INTERFACE_HEADING}\n\nThe tests call these names; keep them as written here:\n\n"
    );
    for i in items {
        let what = match (&i.owner, i.signature.is_empty()) {
            (Some(o), false) => format!("{} `{}` of `{o}`", i.kind.word(), i.signature),
            (Some(o), true) => format!("{} `{}` of `{o}`", i.kind.word(), i.name),
            (None, false) => format!("{} `{}`", i.kind.word(), i.signature),
            (None, true) => format!("{} `{}`", i.kind.word(), i.name),
        };
        s.push_str(&format!("- {what} in `{}`\n", i.file));
    }
    s
}

/// The instruction: the behaviour, then the interface section.
pub fn compose(behaviour: &str, items: &[InterfaceItem]) -> String {
    let mut text = behaviour.trim().to_string();
    text.push('\n');
    let section = interface_section(items);
    if !section.is_empty() {
        text.push('\n');
        text.push_str(&section);
    }
    text
}

// ------------------------------------------------------------------ prompts

/// What the writer is given.
#[derive(Debug, Clone, Default)]
pub struct WriterInput<'a> {
    pub commit_message: &'a str,
    pub test_patch: &'a str,
    pub red_output: &'a str,
    /// The names the interface section will give (so the model may use
    /// them).
    pub interface: &'a [InterfaceItem],
}

/// The writer's rules.
pub const WRITER_SYSTEM: &str = "You write the task statement of a coding task for a developer \
who has not seen the change that solved it. Describe the BEHAVIOUR only: what is wrong or \
missing today, and what is expected instead, with concrete inputs and outputs where the tests \
show them. Rules: do not describe how to fix it or which code to change; do not mention tests, \
test files, test names or test frameworks; do not name commands to run; do not copy code from \
what you are given; do not include commit hashes, issue or pull request numbers, or URLs; do \
not name helpers or internals, only the public names the statement needs. Write plain \
Markdown: a one-line title, then one or two short paragraphs. Answer with the statement only.";

fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut at = text.len() - max;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    &text[at..]
}

fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut at = max;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    &text[..at]
}

/// The writer's first prompt.
pub fn writer_prompt(input: &WriterInput<'_>) -> String {
    let mut s = String::new();
    s.push_str("The commit message of the change:\n<message>\n");
    s.push_str(input.commit_message.trim());
    s.push_str("\n</message>\n\nThe tests that decide the task (they are hidden from the developer):\n<tests>\n");
    s.push_str(head(input.test_patch, PROMPT_PART_BYTES));
    s.push_str("\n</tests>\n\nHow they fail today:\n<failure>\n");
    s.push_str(tail(input.red_output, PROMPT_PART_BYTES));
    s.push_str("\n</failure>\n");
    if !input.interface.is_empty() {
        s.push_str("\nThe statement will end with these names (you may use them):\n");
        for i in input.interface {
            s.push_str(&format!("- {}\n", i.name));
        }
    }
    s.push_str("\nWrite the task statement.");
    s
}

/// The prompt asking for a rewrite after the audit rejected `draft` for
/// `reasons` (each a [`Leak`]'s words, or another reason).
pub fn rewrite_prompt(draft: &str, reasons: &[String]) -> String {
    let mut s = String::from("Your statement was rejected:\n");
    for r in reasons {
        s.push_str(&format!("- {r}\n"));
    }
    s.push_str("\nYour statement was:\n<statement>\n");
    s.push_str(draft.trim());
    s.push_str("\n</statement>\n\nWrite it again without any of these, under the same rules.");
    s
}

/// A model's answer as a statement: its reasoning (`<think>…</think>`)
/// and a fence around the whole answer taken out.
pub fn clean_answer(answer: &str) -> String {
    let mut text = answer.to_string();
    while let Some(start) = text.find("<think>") {
        match text[start..].find("</think>") {
            Some(end) => text.replace_range(start..start + end + "</think>".len(), ""),
            None => text.truncate(start),
        }
    }
    let trimmed = text.trim();
    if let Some(inner) = trimmed
        .strip_prefix("```")
        .and_then(|r| r.strip_suffix("```"))
    {
        let inner = inner.split_once('\n').map_or("", |(_, body)| body);
        return inner.trim().to_string();
    }
    trimmed.to_string()
}

// ------------------------------------------------------------------ review

/// Where a mined task's instruction stands: `[metadata.arena] review`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewState {
    /// Written and audited, waiting for a person.
    Pending,
    Approved,
    /// Dropped by the audit (after one rewrite) or by a person; the reason
    /// is `review_reason`.
    Dropped,
}

impl ReviewState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewState::Pending => "pending",
            ReviewState::Approved => "approved",
            ReviewState::Dropped => "dropped",
        }
    }

    pub fn parse(s: &str) -> Option<ReviewState> {
        match s {
            "pending" => Some(ReviewState::Pending),
            "approved" => Some(ReviewState::Approved),
            "dropped" => Some(ReviewState::Dropped),
            _ => None,
        }
    }
}

/// The review key of `[metadata.arena]`.
pub const REVIEW_KEY: &str = "review";
/// Why a task was dropped.
pub const REVIEW_REASON_KEY: &str = "review_reason";
/// The writer model, as `[metadata.arena] instruction_writer`.
pub const WRITER_KEY: &str = "instruction_writer";

/// A task's review state, from its `[metadata.arena]` keys Arena does not
/// otherwise read: `None` for a task whose instruction Arena did not write.
pub fn review_of(other: &toml::Table) -> Option<(ReviewState, Option<String>)> {
    let state = ReviewState::parse(other.get(REVIEW_KEY)?.as_str()?)?;
    let reason = other
        .get(REVIEW_REASON_KEY)
        .and_then(toml::Value::as_str)
        .map(str::to_string);
    Some((state, reason))
}

/// `task.toml`'s text with `[metadata.arena]`'s review set (and the
/// writer, when given); everything else of the file kept as it was.
pub fn set_review(
    file: &str,
    text: &str,
    state: ReviewState,
    reason: Option<&str>,
    writer: Option<&str>,
) -> Result<String, PackFormatError> {
    let bad = |message: String| PackFormatError::File {
        file: file.to_string(),
        message,
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| bad(e.message().to_string()))?;
    let arena = doc
        .get_mut("metadata")
        .and_then(|m| m.as_table_like_mut())
        .and_then(|m| m.get_mut("arena"))
        .and_then(|a| a.as_table_like_mut())
        .ok_or_else(|| {
            bad("has no [metadata.arena]: only a repo-native task is reviewed".into())
        })?;
    arena.insert(REVIEW_KEY, toml_edit::value(state.as_str()));
    match reason {
        Some(r) => {
            arena.insert(REVIEW_REASON_KEY, toml_edit::value(r));
        }
        None => {
            arena.remove(REVIEW_REASON_KEY);
        }
    }
    if let Some(w) = writer {
        arena.insert(WRITER_KEY, toml_edit::value(w));
    }
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEDIAN_GOLD: &str =
        include_str!("../../../packs/sample/tasks/textkit__add-median/solution/gold.patch");
    const MEDIAN_TEST: &str =
        include_str!("../../../packs/sample/tasks/textkit__add-median/tests/test.patch");
    const ROMAN_GOLD: &str =
        include_str!("../../../packs/sample/tasks/textkit__roman-range/solution/gold.patch");
    const ROMAN_TEST: &str =
        include_str!("../../../packs/sample/tasks/textkit__roman-range/tests/test.patch");
    const TITLE_GOLD: &str = include_str!(
        "../../../packs/sample/tasks/textkit__title-case-apostrophes/solution/gold.patch"
    );
    const TITLE_TEST: &str = include_str!(
        "../../../packs/sample/tasks/textkit__title-case-apostrophes/tests/test.patch"
    );
    const TITLE_INSTRUCTION: &str =
        include_str!("../../../packs/sample/tasks/textkit__title-case-apostrophes/instruction.md");

    /// A real Rust change of this repository's history shape: a new
    /// method on a struct and its `#[cfg(test)]` test.
    const RUST_GOLD: &str = "diff --git a/src/range.rs b/src/range.rs
--- a/src/range.rs
+++ b/src/range.rs
@@ -10,6 +10,16 @@ impl Range {
     pub fn len(&self) -> u64 {
         self.end - self.start
     }
+
+    pub fn overlaps_with(
+        &self,
+        other: &Range,
+    ) -> bool {
+        let widest_start = self.start.max(other.start);
+        widest_start < self.end.min(other.end)
+    }
 }
+
+pub struct RangeSet { ranges: Vec<Range> }
";
    const RUST_TEST: &str = "diff --git a/tests/range.rs b/tests/range.rs
--- a/tests/range.rs
+++ b/tests/range.rs
@@ -1,3 +1,8 @@
 use lib::range::Range;
+#[test]
+fn overlapping() {
+    let (a, b) = (Range::new(0, 5), Range::new(3, 9));
+    assert!(a.overlaps_with(&b));
+}
";

    #[test]
    fn the_sample_instructions_pass_their_own_audit() {
        assert!(audit(TITLE_INSTRUCTION, TITLE_GOLD, TITLE_TEST).is_empty());
        let median = "Add `median` to `textkit.stats`\n\nIt should return the middle value, \
                      or the mean of the two middle values; empty lists raise ValueError.";
        assert_eq!(audit(median, MEDIAN_GOLD, MEDIAN_TEST), vec![]);
    }

    #[test]
    fn a_copied_gold_line_of_20_characters_is_a_leak_and_a_shorter_one_is_not() {
        let text = "Fix it: `return \" \".join(w[:1].upper() + w[1:] for w in s.split(\" \"))`.";
        let leaks = audit(text, TITLE_GOLD, TITLE_TEST);
        assert!(
            leaks.iter().any(
                |l| matches!(l, Leak::GoldLine(line) if line.starts_with("return \" \".join"))
            ),
            "{leaks:?}"
        );
        // `mid = len(s) // 2` is 17 characters trimmed: not looked for.
        assert!(
            audit("Use mid = len(s) // 2 somewhere.", MEDIAN_GOLD, MEDIAN_TEST)
                .iter()
                .all(|l| !matches!(l, Leak::GoldLine(_)))
        );
        let roman = "Raise if not isinstance(n, int) or not 1 <= n <= 3999:";
        assert!(audit(roman, ROMAN_GOLD, ROMAN_TEST)
            .iter()
            .any(|l| matches!(l, Leak::GoldLine(_))));
    }

    #[test]
    fn an_identifier_only_the_fix_introduces_is_a_leak_unless_the_tests_use_it() {
        let only_gold = gold_only_identifiers(RUST_GOLD, RUST_TEST);
        assert!(only_gold.contains("widest_start"), "{only_gold:?}");
        assert!(only_gold.contains("RangeSet"), "{only_gold:?}");
        // The tests call it: the agent must be told it.
        assert!(!only_gold.contains("overlaps_with"));
        let leaks = audit(
            "Ranges cannot tell whether they overlap; add `overlaps_with` using a RangeSet.",
            RUST_GOLD,
            RUST_TEST,
        );
        assert_eq!(leaks, vec![Leak::GoldIdentifier("RangeSet".into())]);
        // English words of the fix are not identifiers the audit can own.
        assert!(audit("Return the sorted middle.", MEDIAN_GOLD, MEDIAN_TEST).is_empty());
    }

    #[test]
    fn hashes_issue_numbers_and_urls_are_leaks() {
        let text = "Since 3f2693a (see #412 and GH-77, https://example.org/x) the range breaks. \
                    A heading # 1 and C#2 and the word deadbeef are fine; so is 1234567.";
        let leaks = audit(text, MEDIAN_GOLD, MEDIAN_TEST);
        assert!(
            leaks.contains(&Leak::CommitHash("3f2693a".into())),
            "{leaks:?}"
        );
        assert!(
            leaks.contains(&Leak::IssueNumber("#412".into())),
            "{leaks:?}"
        );
        assert!(
            leaks.contains(&Leak::IssueNumber("GH-77".into())),
            "{leaks:?}"
        );
        assert!(
            leaks.contains(&Leak::Url("https://example.org/x".into())),
            "{leaks:?}"
        );
        assert_eq!(leaks.len(), 4, "{leaks:?}");
    }

    #[test]
    fn the_interface_is_what_the_tests_call_that_the_fix_adds() {
        let python = interface(MEDIAN_GOLD, MEDIAN_TEST);
        assert_eq!(
            python,
            vec![InterfaceItem {
                file: "textkit/stats.py".into(),
                kind: ItemKind::Function,
                name: "median".into(),
                owner: None,
                signature: "median(xs)".into(),
            }]
        );
        // A changed body under an unchanged signature needs no interface.
        assert!(interface(ROMAN_GOLD, ROMAN_TEST).is_empty());
        let rust = interface(RUST_GOLD, RUST_TEST);
        assert_eq!(rust.len(), 1, "{rust:?}");
        assert_eq!(rust[0].kind, ItemKind::Method);
        assert_eq!(rust[0].owner.as_deref(), Some("Range"));
        assert_eq!(
            rust[0].signature,
            "overlaps_with( &self, other: &Range, ) -> bool"
        );
        let section = interface_section(&rust);
        assert!(section.contains("method `overlaps_with("), "{section}");
        // The section itself passes the audit's line rule.
        assert!(audit(
            &compose("Ranges should tell overlaps.", &rust),
            RUST_GOLD,
            RUST_TEST
        )
        .is_empty());
    }

    #[test]
    fn go_and_script_definitions_are_found() {
        let gold = "--- a/pkg/x.go\n+++ b/pkg/x.go\n@@ -1,1 +1,4 @@\n package x\n+func (c *Cache) Evict(key string) error {\n+type Policy interface {\n+func NewPolicy(n int) Policy {\n\
                    --- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,1 +1,3 @@\n x\n+export async function loadAll(dir: string): Promise<void> {\n+export const toSlug = (s: string) => s.trim();\n";
        let test =
            "+++ b/pkg/x_test.go\n@@ -0,0 +1 @@\n+ c.Evict(\"k\"); NewPolicy(3); var _ Policy\n\
                    +++ b/src/a.test.ts\n@@ -0,0 +1 @@\n+ await loadAll('d'); toSlug(' A ')\n";
        let items = interface(gold, test);
        let names: Vec<(&str, ItemKind)> =
            items.iter().map(|i| (i.name.as_str(), i.kind)).collect();
        assert_eq!(
            names,
            vec![
                ("NewPolicy", ItemKind::Function),
                ("Evict", ItemKind::Method),
                ("Policy", ItemKind::Trait),
                ("loadAll", ItemKind::Function),
                ("toSlug", ItemKind::Function),
            ]
        );
        let evict = items.iter().find(|i| i.name == "Evict").unwrap();
        assert_eq!(evict.owner.as_deref(), Some("Cache"));
        assert_eq!(evict.signature, "Evict(key string) error");
        let slug = items.iter().find(|i| i.name == "toSlug").unwrap();
        assert_eq!(slug.signature, "toSlug(s: string)");
    }

    #[test]
    fn a_model_s_reasoning_and_fence_are_taken_out() {
        assert_eq!(
            clean_answer("<think>the fix is x</think>\n```markdown\nTitle\n\nBody\n```"),
            "Title\n\nBody"
        );
        assert_eq!(clean_answer("Plain"), "Plain");
    }

    #[test]
    fn the_review_state_is_set_in_task_toml_keeping_the_rest() {
        let text = "version = \"1.0\"\n\n# kept\n[metadata.arena]\nkind = \"repo\"\nbase_commit = \"e163c90c338d3812dfdc43193050d41450d67c2e\"\ntest_command = \"pytest\"\n\n[metadata.arena.swebench]\nrepo = \"x\"\n";
        let out = set_review(
            "task.toml",
            text,
            ReviewState::Dropped,
            Some("it copies a line"),
            Some("local/qwen"),
        )
        .unwrap();
        assert!(out.contains("# kept"));
        let parsed = crate::pack::TaskToml::parse("task.toml", &out).unwrap();
        let meta = parsed.arena.unwrap();
        assert_eq!(
            review_of(&meta.other),
            Some((ReviewState::Dropped, Some("it copies a line".into())))
        );
        assert_eq!(meta.swebench.unwrap()["repo"].as_str(), Some("x"));
        let again = set_review("task.toml", &out, ReviewState::Approved, None, None).unwrap();
        let meta = crate::pack::TaskToml::parse("task.toml", &again)
            .unwrap()
            .arena
            .unwrap();
        assert_eq!(review_of(&meta.other), Some((ReviewState::Approved, None)));
        assert_eq!(
            meta.other["instruction_writer"].as_str(),
            Some("local/qwen")
        );
        assert!(set_review("t", "version = \"1\"\n", ReviewState::Approved, None, None).is_err());
    }
}
