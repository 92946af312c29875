//! Where a request through the door may go: the provider's API, under its
//! path prefix, and nowhere else on its origin.
//!
//! The request target an agent sends is parsed by the same URL parser
//! that builds the outgoing request (`url`, through reqwest), and the
//! check is made on what that parser makes of it — the path it would
//! send — never on the raw text. A target the parser would rewrite is
//! refused rather than sent rewritten, and so is any dot segment in any
//! spelling (`..`, `%2e%2e`, `.%2E`, double-encoded `%252e`), a backslash
//! (`\`, `%5c`: the parser reads it as a slash), an encoded slash (`%2f`)
//! or a NUL: a server behind the provider's origin may decode once more
//! than the parser does.

use reqwest::Url;

/// The URL to send a request for `target` (the request's path and query,
/// as the agent sent them) to, on `origin`, when its path is `prefix` or
/// under it; None when the door must refuse it.
pub fn checked(origin: &Url, prefix: &str, target: &str) -> Option<Url> {
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (target, None),
    };
    if !path.starts_with('/')
        || path.contains(['\\', '#'])
        || query.is_some_and(|q| q.contains('#'))
    {
        return None;
    }
    if path.split('/').any(refused_segment) {
        return None;
    }
    let mut url = origin.clone();
    url.set_path(path);
    url.set_query(query);
    // The parser may still have changed the path (a dot segment it
    // recognises, a character it escapes): only what was checked is sent.
    if url.origin() != origin.origin() || url.path() != path {
        return None;
    }
    let under = prefix.is_empty()
        || url.path() == prefix
        || url
            .path()
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'));
    under.then_some(url)
}

/// A segment that names no file of its own once decoded (as many times as
/// it decodes): `.`, `..` and any other run of dots (some servers trim
/// trailing dots and spaces), or one that hides a separator or a NUL.
fn refused_segment(segment: &str) -> bool {
    let mut decoded = segment.as_bytes().to_vec();
    for round in 0.. {
        let (next, changed) = percent_decoded(&decoded);
        if !changed {
            break;
        }
        if round == 4 {
            // Still encoded after four rounds: refuse rather than guess.
            return true;
        }
        decoded = next;
    }
    if decoded.iter().any(|b| matches!(b, b'/' | b'\\' | 0)) {
        return true;
    }
    let trimmed = decoded.trim_ascii();
    if trimmed.is_empty() {
        // Whitespace only: empty once trimmed.
        return !decoded.is_empty();
    }
    trimmed.iter().all(|&b| b == b'.')
}

fn percent_decoded(text: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'%' && i + 2 < text.len() {
            if let (Some(high), Some(low)) = (hex(text[i + 1]), hex(text[i + 2])) {
                out.push(high << 4 | low);
                changed = true;
                i += 3;
                continue;
            }
        }
        out.push(text[i]);
        i += 1;
    }
    (out, changed)
}

fn hex(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(target: &str) -> Option<String> {
        let origin = Url::parse("http://127.0.0.1:9/").ok()?;
        checked(&origin, "/api/v1", target).map(|u| u.to_string())
    }

    #[test]
    fn paths_under_the_prefix_are_sent_as_they_came() {
        for target in [
            "/api/v1",
            "/api/v1/",
            "/api/v1/chat/completions",
            "/api/v1/models/gpt-4o.mini",
            "/api/v1/messages?beta=true&x=a%20b",
            "/api/v1/files/file-abc..def",
            "/api/v1?x=..",
        ] {
            assert_eq!(
                check(target).as_deref(),
                Some(format!("http://127.0.0.1:9{target}").as_str()),
                "{target}"
            );
        }
    }

    #[test]
    fn every_way_out_of_the_prefix_is_refused() {
        for target in [
            "/api/v1/%2e%2e/%2e%2e/admin/keys",
            "/api/v1/..",
            "/api/v1/.%2e/x",
            "/api/v1/%2E./x",
            "/api/v1/%2E%2E/x",
            "/api/v1/./x",
            "/api/v1/%2e/x",
            "/api/v1/..\\..\\bs",
            "/api/v1/%5c..%5Cbs",
            "/api/v1/x%2f..%2F..%2fadmin",
            "/api/v1/%252e%252e/admin",
            "/api/v1/%25252e%25252e/admin",
            "/api/v1/.../admin",
            "/api/v1/..%20/admin",
            "/api/v1/..%00/admin",
            "/api/v1x",
            "/api",
            "/admin/keys",
            "//evil.example/api/v1",
            "api/v1",
            "*",
            "/api/v1/x#/../..",
            "/api/v1/{x}",
        ] {
            assert_eq!(check(target), None, "{target}");
        }
    }

    #[test]
    fn an_empty_prefix_still_refuses_dot_segments() {
        let origin = Url::parse("http://127.0.0.1:9").ok();
        let origin = origin.as_ref().map(|o| (o, checked(o, "", "/v1/x")));
        assert!(matches!(origin, Some((_, Some(_)))));
        let origin = Url::parse("http://127.0.0.1:9").ok();
        assert!(origin.is_some_and(|o| checked(&o, "", "/v1/../x").is_none()));
    }
}
