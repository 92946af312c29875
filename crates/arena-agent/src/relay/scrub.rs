//! The provider's key, taken out of everything the door passes back into a
//! jail: a gateway's error page or a debug proxy may quote the request's
//! headers, and what the agent reads it can print, keep and write into its
//! change.
//!
//! Every occurrence of the key is replaced by [`MASK`], in any ASCII case,
//! and so are its other spellings: JSON-escaped, percent-encoded, and
//! base64 (standard and URL-safe alphabets) at each of the three
//! alignments it can have inside a longer base64 text — so `Basic
//! base64(user:key)` and the base64 of a whole quoted header block are
//! caught too, not just `base64(key)`. `Bearer <key>` contains the key.
//! A body streamed in chunks is scrubbed across the chunks' boundaries:
//! [`Scrubber`] holds back only a chunk's tail that could begin a
//! spelling (at most the longest one less a byte), so an answer that ends
//! its events with a newline is passed on at once.

use std::borrow::Cow;

/// What a spelling of the key is replaced with.
pub const MASK: &[u8] = b"[key removed by Arena]";

/// Spellings shorter than this are not searched for: a key this short is a
/// placeholder (`ollama`, `none`), and masking it everywhere would garble
/// answers without keeping anything secret.
const SHORTEST: usize = 8;

/// The spellings of one key (its `Debug` says how many, never which).
#[derive(Clone)]
pub struct Needles {
    /// Lowercase (matching ignores ASCII case), longest first.
    needles: Vec<Vec<u8>>,
    /// Whether some spelling begins with this byte, in either case.
    first: [bool; 256],
    longest: usize,
}

impl Needles {
    pub fn for_key(key: &str) -> Self {
        let key = key.as_bytes();
        let mut needles: Vec<Vec<u8>> = Vec::new();
        if key.len() < SHORTEST {
            return Needles {
                needles,
                first: [false; 256],
                longest: 0,
            };
        }
        let mut add = |spelling: Vec<u8>| {
            let spelling = spelling.to_ascii_lowercase();
            if spelling.len() >= SHORTEST && !needles.contains(&spelling) {
                needles.push(spelling);
            }
        };
        add(key.to_vec());
        add(json_escaped(key));
        add(percent_encoded(key));
        for alphabet in [STANDARD, URL_SAFE] {
            for offset in 0..3 {
                add(base64_core(key, offset, alphabet));
            }
        }
        needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        let mut first = [false; 256];
        for needle in &needles {
            first[usize::from(needle[0])] = true;
            first[usize::from(needle[0].to_ascii_uppercase())] = true;
        }
        let longest = needles.first().map_or(0, Vec::len);
        Needles {
            needles,
            first,
            longest,
        }
    }

    /// No spelling to search for (no key, or a placeholder-short one).
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every spelling of the key masked.
    pub fn scrub<'a>(&self, text: &'a [u8]) -> Cow<'a, [u8]> {
        let (out, _) = self.scan(text, true);
        match out {
            Some(out) => Cow::Owned(out),
            None => Cow::Borrowed(text),
        }
    }

    /// Whether `text` holds a spelling of the key.
    pub fn found_in(&self, text: &[u8]) -> bool {
        matches!(self.scrub(text), Cow::Owned(_))
    }

    /// A scrubber for one streamed body.
    pub fn scrubber(&self) -> Scrubber {
        Scrubber {
            needles: self.clone(),
            held: Vec::new(),
        }
    }

    /// The spelling that starts at `at`, if one does.
    fn match_at(&self, text: &[u8], at: usize) -> Option<usize> {
        if !self.first[usize::from(text[at])] {
            return None;
        }
        let rest = &text[at..];
        self.needles
            .iter()
            .find(|n| rest.len() >= n.len() && rest[..n.len()].eq_ignore_ascii_case(n))
            .map(Vec::len)
    }

    /// Whether `tail` (running to the end of what has come so far) is the
    /// beginning of some spelling, which the next chunk may complete.
    fn could_begin(&self, tail: &[u8]) -> bool {
        self.first[usize::from(tail[0])]
            && self
                .needles
                .iter()
                .any(|n| n.len() > tail.len() && n[..tail.len()].eq_ignore_ascii_case(tail))
    }

    /// Masks the spellings in `text`: the scrubbed text (None when nothing
    /// was masked and nothing is held back) and how much of `text` it
    /// covers; the rest, when `complete` is false, may begin a spelling
    /// and waits for more.
    fn scan(&self, text: &[u8], complete: bool) -> (Option<Vec<u8>>, usize) {
        let mut out: Option<Vec<u8>> = None;
        let (mut at, mut copied) = (0, 0);
        while at < text.len() {
            match self.match_at(text, at) {
                Some(length) => {
                    let out = out.get_or_insert_with(|| Vec::with_capacity(text.len()));
                    out.extend_from_slice(&text[copied..at]);
                    out.extend_from_slice(MASK);
                    at += length;
                    copied = at;
                }
                None => at += 1,
            }
        }
        let mut cut = text.len();
        if !complete && self.longest > 1 {
            let earliest = copied.max(text.len().saturating_sub(self.longest - 1));
            if let Some(start) = (earliest..text.len()).find(|&q| self.could_begin(&text[q..])) {
                cut = start;
            }
        }
        match out {
            Some(mut out) => {
                out.extend_from_slice(&text[copied..cut]);
                (Some(out), cut)
            }
            None if cut == text.len() => (None, cut),
            None => (Some(text[..cut].to_vec()), cut),
        }
    }
}

/// Scrubs one streamed body, chunk by chunk.
pub struct Scrubber {
    needles: Needles,
    /// The end of what came so far that may begin a spelling.
    held: Vec<u8>,
}

impl Scrubber {
    /// What of `chunk` (and what was held before it) may be passed on now.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.needles.is_empty() {
            return chunk.to_vec();
        }
        let mut text = std::mem::take(&mut self.held);
        text.extend_from_slice(chunk);
        let (out, cut) = self.needles.scan(&text, false);
        self.held = text.split_off(cut);
        out.unwrap_or(text)
    }

    /// What was held back, at the end of the body.
    pub fn finish(self) -> Vec<u8> {
        let held = self.held;
        match self.needles.scan(&held, true) {
            (Some(out), _) => out,
            (None, _) => held,
        }
    }
}

impl std::fmt::Debug for Needles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Needles")
            .field("spellings", &self.needles.len())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scrubber")
            .field("needles", &self.needles)
            .field("held_bytes", &self.held.len())
            .finish()
    }
}

fn json_escaped(key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len());
    for &b in key {
        match b {
            b'"' | b'\\' | b'/' => out.extend_from_slice(&[b'\\', b]),
            _ => out.push(b),
        }
    }
    out
}

fn percent_encoded(key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len());
    for &b in key {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    out
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The base64 characters that depend on `key`'s bytes only, when the key
/// stands `offset` bytes into a 3-byte group of a longer text: they appear
/// in the base64 of any text holding the key at such a place, whatever
/// surrounds it.
fn base64_core(key: &[u8], offset: usize, alphabet: &[u8; 64]) -> Vec<u8> {
    let mut bytes = vec![0u8; offset];
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(&[0, 0]);
    let mut encoded = Vec::with_capacity(bytes.len() / 3 * 4 + 4);
    for group in bytes.chunks(3) {
        let mut three = [0u8; 3];
        three[..group.len()].copy_from_slice(group);
        let n = u32::from(three[0]) << 16 | u32::from(three[1]) << 8 | u32::from(three[2]);
        for shift in [18, 12, 6, 0] {
            encoded.push(alphabet[((n >> shift) & 63) as usize]);
        }
    }
    // Character i covers bits [6i, 6i + 6); the key's bits are
    // [8 offset, 8 (offset + len)).
    let start = (8 * offset).div_ceil(6);
    let end = 8 * (offset + key.len()) / 6;
    if end <= start {
        return Vec::new();
    }
    encoded[start..end].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-test-0123456789abcdefXYZ/+=";

    fn base64(bytes: &[u8]) -> String {
        let mut out = String::new();
        for group in bytes.chunks(3) {
            let mut three = [0u8; 3];
            three[..group.len()].copy_from_slice(group);
            let n = u32::from(three[0]) << 16 | u32::from(three[1]) << 8 | u32::from(three[2]);
            for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
                out.push(if i <= group.len() {
                    STANDARD[((n >> shift) & 63) as usize] as char
                } else {
                    '='
                });
            }
        }
        out
    }

    /// Texts that quote the key in each spelling.
    fn leaks() -> Vec<String> {
        let mut texts = vec![
            format!("authorization: Bearer {KEY}\r\n"),
            format!(
                "{{\"headers\":{{\"authorization\":\"Bearer {}\"}}}}",
                KEY.replace('/', "\\/")
            ),
            format!("AUTHORIZATION: BEARER {}", KEY.to_uppercase()),
            format!(
                "GET /?key={} HTTP/1.1",
                String::from_utf8_lossy(&percent_encoded(KEY.as_bytes()))
            ),
            base64(KEY.as_bytes()),
            base64(KEY.as_bytes()).replace('+', "-").replace('/', "_"),
        ];
        for user in ["", "u", "us", "user", "apikey"] {
            texts.push(format!(
                "Basic {}",
                base64(format!("{user}:{KEY}").as_bytes())
            ));
        }
        texts.push(base64(
            format!("x-api-key: {KEY}\r\nhost: a\r\n").as_bytes(),
        ));
        texts
    }

    fn clean(needles: &Needles, out: &[u8]) {
        let text = String::from_utf8_lossy(out);
        assert!(!needles.found_in(out), "{text}");
        assert!(!text.to_lowercase().contains(&KEY.to_lowercase()), "{text}");
        assert!(text.contains("[key removed by Arena]"), "{text}");
    }

    #[test]
    fn every_spelling_of_the_key_is_masked() {
        let needles = Needles::for_key(KEY);
        for text in leaks() {
            let out = needles.scrub(text.as_bytes());
            clean(&needles, &out);
        }
    }

    #[test]
    fn a_key_split_anywhere_across_chunks_is_masked() {
        let needles = Needles::for_key(KEY);
        for text in leaks() {
            let text = format!("data: {{\"error\": \"{text}\"}}\n\n");
            let whole = needles.scrub(text.as_bytes()).into_owned();
            for cut in 0..=text.len() {
                for second in cut..=text.len() {
                    let mut scrubber = needles.scrubber();
                    let mut out = scrubber.push(&text.as_bytes()[..cut]);
                    out.extend(scrubber.push(&text.as_bytes()[cut..second]));
                    out.extend(scrubber.push(&text.as_bytes()[second..]));
                    out.extend(scrubber.finish());
                    assert_eq!(out, whole, "cut at {cut} and {second}");
                }
            }
            clean(&needles, &whole);
        }
    }

    #[test]
    fn text_without_the_key_passes_unchanged_and_at_once() {
        let needles = Needles::for_key(KEY);
        let mut scrubber = needles.scrubber();
        let event = b"data: {\"choices\":[{\"delta\":{\"content\":\"sk\"}}]}\n\n";
        assert_eq!(scrubber.push(event), event.to_vec());
        // A tail that may begin the key waits for the next chunk.
        assert_eq!(scrubber.push(b"ab sk-te"), b"ab ".to_vec());
        let mut rest = scrubber.push(b"a");
        rest.extend(scrubber.finish());
        assert_eq!(rest, b"sk-tea".to_vec());
        assert!(matches!(
            needles.scrub(b"nothing here"),
            Cow::Borrowed(b"nothing here")
        ));
    }

    #[test]
    fn debug_output_never_shows_the_key() {
        let needles = Needles::for_key(KEY);
        let mut scrubber = needles.scrubber();
        let _ = scrubber.push(b"x sk-test-0123");
        let shown = format!("{needles:?} {scrubber:?}");
        assert!(!shown.contains("sk-test"), "{shown}");
        assert!(shown.contains("held_bytes: 12"), "{shown}");
    }

    #[test]
    fn a_placeholder_short_key_is_not_searched_for() {
        let needles = Needles::for_key("ollama");
        assert!(needles.is_empty());
        let mut scrubber = needles.scrubber();
        assert_eq!(scrubber.push(b"ollama"), b"ollama".to_vec());
        assert!(Needles::for_key("").is_empty());
    }
}
