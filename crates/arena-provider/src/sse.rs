//! Server-sent events (the `text/event-stream` both APIs stream in), read
//! as a response's bytes arrive, and turned into [`Chunk`]s.
//!
//! Written here rather than taken from a crate: a streamed token is one
//! event, so this is on the path every token takes. The parser keeps one
//! buffer and hands out each event's type and data borrowed from it (the
//! caller parses the JSON in place), where an event-source crate builds
//! several strings per event and a generator stream around them: about a
//! tenth of what a battle's streamed tokens cost (BENCHMARKS.md, "Against
//! promptfoo").
//!
//! What it follows of the format: lines end with `\n`, `\r\n` or `\r`; a
//! blank line ends an event; `data:` lines are joined with `\n`; `event:`
//! names it; a line starting with `:` is a comment; other fields (`id:`,
//! `retry:`) are ignored; one space after the colon is dropped; a leading
//! byte-order mark is skipped. An event still open when the body ends is
//! delivered (a server that ends with `data: [DONE]` and no blank line).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use futures::Stream;

use super::{Chunk, ChunkStream, ProviderError};

/// A line longer than this is refused rather than held in memory.
const MAX_LINE: usize = 16 << 20;

/// One event: its type (empty when it has none) and its data.
#[derive(Debug, PartialEq)]
pub(crate) struct Event<'a> {
    pub event: &'a str,
    pub data: &'a str,
}

/// Bytes in, events out.
#[derive(Default)]
pub(crate) struct Parser {
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    start: usize,
    /// How many unread bytes are known to hold no line end: a line that
    /// arrives in many reads is searched once, not once per read.
    scanned: usize,
    data: String,
    event: String,
    /// The last event was handed out: its fields are cleared first.
    dispatched: bool,
    /// Past the first bytes (a byte-order mark is only skipped there).
    begun: bool,
}

impl Parser {
    /// Adds bytes of the body.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        if self.start > 0 && (self.start >= self.buf.len() / 2 || self.start >= 64 << 10) {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
        if !self.begun && self.buf.len() >= 3 {
            self.begun = true;
            if self.buf.starts_with("\u{feff}".as_bytes()) {
                self.start = 3;
                self.scanned = 0;
            }
        }
        if self.buf.len() - self.start > MAX_LINE
            && !self.buf[self.start + self.scanned..]
                .iter()
                .any(|&b| b == b'\n' || b == b'\r')
        {
            return Err(ProviderError::Malformed(format!(
                "the server sent a line of more than {} MiB without an end",
                MAX_LINE >> 20
            )));
        }
        Ok(())
    }

    /// The next complete event, if one has arrived; `at_end` once the body
    /// has ended (what is left is then read as complete).
    pub fn next_event(&mut self, at_end: bool) -> Result<Option<Event<'_>>, ProviderError> {
        if self.dispatched {
            self.dispatched = false;
            self.data.clear();
            self.event.clear();
        }
        loop {
            let rest = &self.buf[self.start..];
            let end = rest[self.scanned..]
                .iter()
                .position(|&b| b == b'\n' || b == b'\r')
                .map(|i| i + self.scanned);
            let (line, used) = match end {
                // A `\r` last in what has arrived may be half of `\r\n`.
                Some(i) if rest[i] == b'\r' && i + 1 == rest.len() && !at_end => {
                    self.scanned = i;
                    return Ok(None);
                }
                Some(i) if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') => {
                    (&rest[..i], i + 2)
                }
                Some(i) => (&rest[..i], i + 1),
                None if at_end && !rest.is_empty() => (rest, rest.len()),
                None if at_end && !self.data.is_empty() => {
                    return Ok(Some(self.dispatch()));
                }
                None => {
                    self.scanned = rest.len();
                    return Ok(None);
                }
            };
            self.start += used;
            self.scanned = 0;
            if line.is_empty() {
                if self.data.is_empty() {
                    self.event.clear();
                    continue;
                }
                return Ok(Some(self.dispatch()));
            }
            let line = std::str::from_utf8(line).map_err(|_| {
                ProviderError::Malformed("the server sent an event that is not UTF-8".into())
            })?;
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            match field {
                "data" => {
                    self.data.push_str(value);
                    self.data.push('\n');
                }
                "event" => {
                    self.event.clear();
                    self.event.push_str(value);
                }
                _ => {}
            }
        }
    }

    fn dispatch(&mut self) -> Event<'_> {
        self.dispatched = true;
        let data = self.data.strip_suffix('\n').unwrap_or(&self.data);
        Event {
            event: &self.event,
            data,
        }
    }
}

/// What an API's reader made of its events so far.
#[derive(Default)]
pub(crate) struct Out {
    pub chunks: VecDeque<Chunk>,
    /// The answer is complete (the stream may still carry its usage).
    pub finished: bool,
    /// Nothing more is read.
    pub stop: bool,
}

/// The chunks `on_event` makes of the events of `body`. A body that ends
/// before the answer is finished is an error: `unfinished` says why.
pub(crate) fn chunks<S, B, F>(body: S, unfinished: &'static str, on_event: F) -> ChunkStream
where
    S: Stream<Item = reqwest::Result<B>> + Send + 'static,
    B: AsRef<[u8]>,
    F: FnMut(Event<'_>, &mut Out) -> Result<(), ProviderError> + Send + Unpin + 'static,
{
    Box::pin(Chunks {
        body: Box::pin(body),
        parser: Parser::default(),
        out: Out::default(),
        on_event,
        body_done: false,
        ended: false,
        unfinished,
    })
}

struct Chunks<S, F> {
    body: Pin<Box<S>>,
    parser: Parser,
    out: Out,
    on_event: F,
    body_done: bool,
    ended: bool,
    unfinished: &'static str,
}

impl<S, B, F> Stream for Chunks<S, F>
where
    S: Stream<Item = reqwest::Result<B>>,
    B: AsRef<[u8]>,
    F: FnMut(Event<'_>, &mut Out) -> Result<(), ProviderError> + Unpin,
{
    type Item = Result<Chunk, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(chunk) = this.out.chunks.pop_front() {
                return Poll::Ready(Some(Ok(chunk)));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            if this.out.stop {
                this.ended = true;
                continue;
            }
            let read = match this.parser.next_event(this.body_done) {
                Ok(Some(event)) => (this.on_event)(event, &mut this.out).map(|()| true),
                Ok(None) => Ok(false),
                Err(e) => Err(e),
            };
            match read {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(e)));
                }
            }
            if this.body_done {
                this.ended = true;
                if !this.out.finished {
                    let why = ProviderError::Dropped(this.unfinished.into());
                    return Poll::Ready(Some(Err(why)));
                }
                continue;
            }
            match ready!(this.body.as_mut().poll_next(cx)) {
                Some(Ok(bytes)) => {
                    if let Err(e) = this.parser.feed(bytes.as_ref()) {
                        this.ended = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                }
                Some(Err(e)) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(ProviderError::Dropped(e.to_string()))));
                }
                None => this.body_done = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of `parts` fed in turn, as (type, data).
    fn events(parts: &[&[u8]]) -> Vec<(String, String)> {
        let mut p = Parser::default();
        let mut got = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            p.feed(part).unwrap();
            let at_end = i + 1 == parts.len();
            while let Some(e) = p.next_event(at_end).unwrap() {
                got.push((e.event.to_string(), e.data.to_string()));
            }
        }
        got
    }

    fn pair(event: &str, data: &str) -> (String, String) {
        (event.to_string(), data.to_string())
    }

    #[test]
    fn events_end_at_a_blank_line_whatever_ends_the_lines() {
        let want = vec![pair("", "a"), pair("", "b"), pair("", "c")];
        assert_eq!(events(&[b"data: a\n\ndata: b\r\n\r\ndata: c\r\r"]), want);
    }

    #[test]
    fn data_lines_join_and_fields_are_read_as_the_format_says() {
        let body = b"\xef\xbb\xbf: a comment\nevent: delta\nid: 7\nretry: 10\ndata:one\ndata:  two\n\n\n\nfield-only\ndata\n\n";
        assert_eq!(
            events(&[body]),
            vec![pair("delta", "one\n two"), pair("", "")]
        );
    }

    #[test]
    fn an_event_split_anywhere_across_reads_comes_out_whole() {
        let body = "data: {\"t\":\"héllo\"}\r\n\r\ndata: [DONE]\r\n\r\n".as_bytes();
        for cut in 0..body.len() {
            for cut2 in cut..body.len() {
                let parts = [&body[..cut], &body[cut..cut2], &body[cut2..]];
                assert_eq!(
                    events(&parts),
                    vec![pair("", "{\"t\":\"héllo\"}"), pair("", "[DONE]")],
                    "cut at {cut} and {cut2}"
                );
            }
        }
    }

    #[test]
    fn a_byte_order_mark_and_a_long_line_may_come_a_byte_at_a_time() {
        let body = "\u{feff}data: héllo\r\n\r\ndata: [DONE]\n\n".as_bytes();
        let parts: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(events(&parts), vec![pair("", "héllo"), pair("", "[DONE]")]);
        // Searched once: what has been searched is not searched again.
        let mut p = Parser::default();
        p.feed(b"data: ").unwrap();
        for _ in 0..1000 {
            p.feed(b"xxxxxxxx").unwrap();
            assert!(p.next_event(false).unwrap().is_none());
            assert_eq!(p.scanned, p.buf.len() - p.start);
        }
        p.feed(b"\n\n").unwrap();
        assert_eq!(
            p.next_event(false).unwrap().map(|e| e.data.len()),
            Some(8000)
        );
    }

    #[test]
    fn an_event_still_open_at_the_end_is_delivered() {
        assert_eq!(
            events(&[b"data: x\n\ndata: [DONE]"]),
            vec![pair("", "x"), pair("", "[DONE]")]
        );
        assert_eq!(events(&[b"data: [DONE]\n"]), vec![pair("", "[DONE]")]);
    }

    #[test]
    fn bad_bytes_and_endless_lines_are_refused() {
        let mut p = Parser::default();
        p.feed(b"data: \xff\xfe\n\n").unwrap();
        assert!(matches!(
            p.next_event(false),
            Err(ProviderError::Malformed(_))
        ));
        let mut p = Parser::default();
        let line = vec![b'a'; MAX_LINE + 1];
        let err = p.feed(&line).unwrap_err();
        assert!(err.to_string().contains("without an end"), "{err}");
    }

    #[test]
    fn read_events_leave_the_buffer() {
        let mut p = Parser::default();
        for _ in 0..10_000 {
            p.feed(b"data: {\"choices\":[]}\n\n").unwrap();
            assert!(p.next_event(false).unwrap().is_some());
        }
        assert!(p.buf.len() < 1024, "{} bytes kept", p.buf.len());
    }
}
