//! A scripted judge for Arena's own judging prompts: it prefers the answer
//! that contains a word. It digests each answer (`MARK-BEST` when the word
//! is in it, else `MARK-MEH`), names the marked answer the winner, and
//! passes a goal check exactly when the answer contains the word.

use crate::ModelScript;

/// The text of the first (system) and last (user) message of a request.
fn texts(body: &serde_json::Value) -> (&str, &str) {
    let messages = body["messages"].as_array();
    let first = messages.and_then(|m| m.first());
    let last = messages.and_then(|m| m.last());
    (
        first.and_then(|m| m["content"].as_str()).unwrap_or(""),
        last.and_then(|m| m["content"].as_str()).unwrap_or(""),
    )
}

impl ModelScript {
    /// A judge (digests, verdict and goal checks) that prefers answers
    /// containing `word`.
    pub fn judge_preferring(word: &str) -> ModelScript {
        let word = word.to_string();
        ModelScript::respond_with(move |body| {
            let (system, user) = texts(body);
            if system.contains("You summarise one answer") {
                let mark = if user.contains(&word) {
                    "MARK-BEST"
                } else {
                    "MARK-MEH"
                };
                return format!("{mark} a summary");
            }
            if system.contains("achieves a goal") {
                let answer = user.rsplit("answer\n").next().unwrap_or("");
                let pass = answer.contains(&word);
                return format!("{{\"pass\": {pass}, \"reason\": \"looked for {word}\"}}");
            }
            let (mut label, mut best) = ("A", "A");
            for line in user.lines() {
                if let Some(rest) = line.strip_prefix("Answer ") {
                    label = rest.get(..1).unwrap_or("A");
                }
                if line.contains("MARK-BEST") {
                    best = label;
                }
            }
            format!("{{\"winner\": \"{best}\", \"reasons\": {{\"{best}\": \"has {word}\"}}}}")
        })
    }
}
