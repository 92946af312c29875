//! Personas: the `AGENTS.md` registry in the data directory. Each `## Name`
//! section is one persona: optional `- key: value` settings right under the
//! heading, then the system prompt. The file is read at every battle start,
//! so edits apply to the next battle.
//!
//! The parser is a small line reader written here rather than a Markdown
//! library, because its errors must name the exact line of the file.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};

pub const REGISTRY_FILE: &str = "AGENTS.md";

/// One persona.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Persona {
    pub name: String,
    pub system_prompt: String,
    /// Tools this persona may use when it runs on an agent (none for plain Q&A).
    pub tools: Vec<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u64>,
    pub description: Option<String>,
}

/// The parsed registry and where it came from.
#[derive(Debug, Clone)]
pub struct Registry {
    pub path: PathBuf,
    pub personas: Vec<Persona>,
}

const KNOWN_KEYS: &[&str] = &["description", "tools", "temperature", "top_p", "max_tokens"];

impl Registry {
    /// Reads `<data_dir>/AGENTS.md`, writing the defaults first if it is missing.
    pub fn load_or_seed(data_dir: &Path) -> Result<Registry> {
        let path = data_dir.join(REGISTRY_FILE);
        if !path.exists() {
            std::fs::create_dir_all(data_dir).map_err(|e| Error::io(data_dir, e))?;
            // Written whole beside it, then linked into place unless another
            // process seeded it first: nobody reads a half-written registry,
            // and a registry that exists is never overwritten.
            let mut seed =
                tempfile::NamedTempFile::new_in(data_dir).map_err(|e| Error::io(data_dir, e))?;
            std::io::Write::write_all(&mut seed, DEFAULT_REGISTRY.as_bytes())
                .map_err(|e| Error::io(seed.path(), e))?;
            match seed.persist_noclobber(&path) {
                Ok(_) => {}
                Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(&path, e.error)),
            }
        }
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        Registry::parse(&path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Registry> {
        let err = |line: usize, message: String| Error::Persona {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut personas: Vec<(usize, Persona)> = Vec::new();
        // (heading line, persona, still reading settings, prompt lines)
        let mut current: Option<(usize, Persona, bool, Vec<&str>)> = None;

        let finish = |cur: Option<(usize, Persona, bool, Vec<&str>)>,
                      personas: &mut Vec<(usize, Persona)>|
         -> Result<()> {
            if let Some((line, mut p, _, prompt)) = cur {
                p.system_prompt = prompt.join("\n").trim().to_string();
                if p.system_prompt.is_empty() {
                    return Err(err(
                        line,
                        format!("persona `{}` has no system prompt", p.name),
                    ));
                }
                if let Some((first, _)) = personas.iter().find(|(_, q)| same_name(&q.name, &p.name))
                {
                    return Err(err(
                        line,
                        format!("persona `{}` is already defined on line {first}", p.name),
                    ));
                }
                personas.push((line, p));
            }
            Ok(())
        };

        for (idx, raw) in text.lines().enumerate() {
            let line_no = idx + 1;
            if let Some(name) = raw.strip_prefix("## ") {
                finish(current.take(), &mut personas)?;
                let name = name.trim();
                if name.is_empty() {
                    return Err(err(line_no, "a `## ` heading needs a persona name".into()));
                }
                current = Some((line_no, Persona::named(name), true, Vec::new()));
                continue;
            }
            let Some((_, persona, in_settings, prompt)) = current.as_mut() else {
                continue; // preamble before the first persona
            };
            if *in_settings {
                if raw.trim().is_empty() {
                    continue;
                }
                if let Some((key, value)) = setting(raw) {
                    persona
                        .apply(key, value)
                        .map_err(|message| err(line_no, message))?;
                    continue;
                }
                *in_settings = false;
            }
            prompt.push(raw);
        }
        finish(current.take(), &mut personas)?;
        Ok(Registry {
            path: path.to_path_buf(),
            personas: personas.into_iter().map(|(_, p)| p).collect(),
        })
    }

    /// Finds a persona by name, ignoring case and treating spaces, dashes and
    /// underscores alike (`code-reviewer` finds "Code Reviewer").
    pub fn find(&self, name: &str) -> Option<&Persona> {
        self.personas.iter().find(|p| same_name(&p.name, name))
    }

    pub fn names(&self) -> Vec<&str> {
        self.personas.iter().map(|p| p.name.as_str()).collect()
    }
}

fn normalise(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| match c {
            ' ' | '_' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

fn same_name(a: &str, b: &str) -> bool {
    normalise(a) == normalise(b)
}

/// `- key: value` where key is a lowercase identifier.
fn setting(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix("- ")?;
    let (key, value) = rest.split_once(':')?;
    let key = key.trim();
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
        return None;
    }
    Some((key, value.trim()))
}

impl Persona {
    fn named(name: &str) -> Persona {
        Persona {
            name: name.to_string(),
            system_prompt: String::new(),
            tools: Vec::new(),
            temperature: None,
            top_p: None,
            max_tokens: None,
            description: None,
        }
    }

    fn apply(&mut self, key: &str, value: &str) -> std::result::Result<(), String> {
        let number = |lo: f64, hi: f64| -> std::result::Result<f64, String> {
            let v: f64 = value
                .parse()
                .map_err(|_| format!("`{key}` must be a number, got `{value}`"))?;
            if !(lo..=hi).contains(&v) {
                return Err(format!("`{key}` must be between {lo} and {hi}, got {v}"));
            }
            Ok(v)
        };
        match key {
            "description" => self.description = Some(value.to_string()),
            "tools" => {
                self.tools = value
                    .split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(String::from)
                    .collect()
            }
            "temperature" => self.temperature = Some(number(0.0, 2.0)?),
            "top_p" => self.top_p = Some(number(0.0, 1.0)?),
            "max_tokens" => {
                let v: u64 = value
                    .parse()
                    .map_err(|_| format!("`max_tokens` must be a whole number, got `{value}`"))?;
                if v == 0 {
                    return Err("`max_tokens` must be at least 1".into());
                }
                self.max_tokens = Some(v)
            }
            other => {
                return Err(format!(
                    "unknown setting `{other}`; known settings: {}",
                    KNOWN_KEYS.join(", ")
                ))
            }
        }
        Ok(())
    }
}

/// Written to the data directory on first run.
pub const DEFAULT_REGISTRY: &str = r#"# Arena personas

Each `## Name` below is a persona a Q&A contestant can use (`-c debugger@MODEL`).
Right under the heading, optional settings as `- key: value` lines:
`description`, `tools` (comma-separated), `temperature` (0–2), `top_p` (0–1),
`max_tokens`. Everything after the settings is the system prompt. Arena reads
this file at the start of every battle.

## Debugger
- description: Finds the root cause of a bug and the smallest correct fix.
- tools: list_dir, read_file, run_command
- temperature: 0.2

You are a careful debugger. Restate the symptom, list the plausible causes in
order of likelihood, say how to confirm each one, then name the most likely
root cause and the smallest fix that addresses it (not the symptom). Show code
only where it changes. Say what you are unsure about.

## Explainer
- description: Explains code or a concept clearly, building from what the reader knows.
- temperature: 0.5

You are a patient teacher for experienced developers. Explain the subject from
the ground up in plain language: first the idea in two sentences, then how it
works, then a short concrete example, then the common pitfalls. Prefer precise
words to long ones. Do not pad.

## Architect
- description: Designs or reviews a system's structure and trade-offs.
- tools: list_dir, read_file
- temperature: 0.4

You are a pragmatic software architect. Clarify the requirements and
constraints first, then propose a design: the components, their
responsibilities, the data flow and the failure modes. Compare at least two
options with their trade-offs and recommend one, saying what would change your
mind. Keep it as simple as the problem allows.

## Code Reviewer
- description: Reviews a change for correctness, safety and clarity.
- tools: list_dir, read_file
- temperature: 0.2

You are a senior code reviewer. Review for correctness first (bugs, edge
cases, error handling, concurrency), then security, then performance, then
readability. For each finding give the location, why it matters and a concrete
fix, ordered by severity. Say plainly when something is good as it is.
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Registry> {
        Registry::parse(Path::new("AGENTS.md"), text)
    }

    #[test]
    fn default_registry_has_the_core_personas() {
        let r = parse(DEFAULT_REGISTRY).unwrap();
        assert_eq!(
            r.names(),
            vec!["Debugger", "Explainer", "Architect", "Code Reviewer"]
        );
        let cr = r.find("code-reviewer").unwrap();
        assert_eq!(cr.temperature, Some(0.2));
        assert_eq!(cr.tools, vec!["list_dir", "read_file"]);
        assert!(cr
            .system_prompt
            .starts_with("You are a senior code reviewer."));
        assert!(r.find("CODE_REVIEWER").is_some());
        assert!(r.find("poet").is_none());
    }

    #[test]
    fn a_prompt_may_start_with_a_list() {
        let r = parse("## Terse\n- temperature: 1\n\n- Be brief: always.\n- No filler.\n").unwrap();
        let p = &r.personas[0];
        assert_eq!(p.temperature, Some(1.0));
        assert_eq!(p.system_prompt, "- Be brief: always.\n- No filler.");
    }

    #[test]
    fn malformed_entries_name_the_line() {
        let cases = [
            ("## A\n- temperature: hot\nprompt\n", 2, "must be a number"),
            ("## A\n- temperature: 3\nprompt\n", 2, "between 0 and 2"),
            (
                "## A\n- colour: red\nprompt\n",
                2,
                "unknown setting `colour`",
            ),
            ("## A\n\n## B\nx\n", 1, "no system prompt"),
            ("intro\n## A\nx\n## a\ny\n", 4, "already defined on line 2"),
            ("## \nx\n", 1, "needs a persona name"),
            ("## A\n- max_tokens: 0\nx\n", 2, "at least 1"),
        ];
        for (text, line, needle) in cases {
            match parse(text) {
                Err(Error::Persona {
                    line: l, message, ..
                }) => {
                    assert_eq!(l, line, "{text:?}: {message}");
                    assert!(message.contains(needle), "{text:?}: {message}");
                }
                other => panic!("{text:?}: expected a persona error, got {other:?}"),
            }
        }
    }

    #[test]
    fn seeds_the_file_once() {
        let dir = tempfile::tempdir().unwrap();
        let r = Registry::load_or_seed(dir.path()).unwrap();
        assert_eq!(r.personas.len(), 4);
        std::fs::write(dir.path().join(REGISTRY_FILE), "## Only\nhello\n").unwrap();
        let r = Registry::load_or_seed(dir.path()).unwrap();
        assert_eq!(r.names(), vec!["Only"]);
    }
}
