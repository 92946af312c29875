//! Text from a model, an agent or a check, made safe to print on a
//! terminal.
//!
//! A contestant's answer is written by someone else: printed raw, it can
//! set the clipboard (OSC 52: `curl …|sh` waiting for the next paste),
//! retitle the window, clear the screen and draw a fake "all tests
//! passed", or overwrite a line after a carriage return. [`printable`]
//! takes out everything a terminal would act on rather than show, and
//! keeps the words, newlines and tabs. It is for people only: `--json`,
//! the results folder and the database keep the text exact.
//!
//! Hand-written rather than `strip-ansi-escapes` (built on `vte`): that
//! crate (0.2.1) drops tabs along with the other C0 controls
//! (luser/strip-ansi-escapes#20, open), knows nothing of bidi overrides
//! and allocates a new string every time. This is one pass over the
//! `char`s, with no dependency in the pure crate, that borrows when there
//! is nothing to take out — the common case — and whose rules are the
//! ones written below.

use std::borrow::Cow;

/// `text` without control characters and escape sequences, keeping `\n`
/// and `\t`; borrowed when there is nothing to take out.
///
/// Taken out, whole:
/// - escape sequences: CSI (`ESC [` or the 8-bit U+009B, parameters,
///   intermediates, final byte; private parameters such as `ESC [?25l`
///   too), the control strings OSC (`ESC ]` / U+009D), DCS (`ESC P` /
///   U+0090), SOS (`ESC X` / U+0098), PM (`ESC ^` / U+009E) and APC
///   (`ESC _` / U+009F) up to their terminator (ST — `ESC \` or U+009C —,
///   BEL, CAN or SUB, or the ESC of a new sequence), and the short `ESC`
///   sequences (`ESC c`, `ESC 7`, `ESC ( B`, …). An unterminated sequence
///   is taken out to the end of the text: whatever follows it would have
///   been swallowed by the terminal too.
/// - every other C0 control (`\r`, BEL, backspace, …), DEL and the C1
///   controls U+0080–U+009F.
/// - the Unicode bidi embeddings, overrides and isolates (U+202A–U+202E,
///   U+2066–U+2069): they reorder what is shown, so text can read
///   differently from what it is ("Trojan Source", CVE-2021-42574).
///
/// Within a CSI, a control other than ESC, CAN and SUB is acted on and the
/// sequence goes on, as on a terminal: `\n` and `\t` are kept, the rest
/// dropped. `[` and `]` without an ESC before them are ordinary text.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_care) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut state = State::Text;
    for c in text.chars() {
        state = match state {
            State::Text => text_char(c, &mut out),
            State::Escape => after_escape(c, &mut out),
            State::EscapeIntermediate => match c {
                ' '..='/' => State::EscapeIntermediate,
                '0'..='~' => State::Text,
                _ => text_char(c, &mut out),
            },
            State::Csi => match c {
                // Parameters (private ones included) and intermediates.
                ' '..='?' => State::Csi,
                // The final byte.
                '@'..='~' => State::Text,
                '\x1b' | '\x18' | '\x1a' => text_char(c, &mut out),
                '\n' | '\t' => {
                    out.push(c);
                    State::Csi
                }
                c if c.is_control() => State::Csi,
                // Not part of any sequence: the CSI was broken off here.
                c => text_char(c, &mut out),
            },
            State::ControlString => match c {
                '\x07' | '\x18' | '\x1a' | '\u{9c}' => State::Text,
                '\x1b' => State::ControlStringEscape,
                _ => State::ControlString,
            },
            // `ESC \` ends the string; any other ESC starts a new sequence.
            State::ControlStringEscape => match c {
                '\\' => State::Text,
                c => after_escape(c, &mut out),
            },
        };
    }
    Cow::Owned(out)
}

/// Where [`printable`] is in the text.
#[derive(Clone, Copy)]
enum State {
    Text,
    /// Just after ESC.
    Escape,
    /// `ESC` and intermediates (`ESC (`, `ESC #`), waiting for the final.
    EscapeIntermediate,
    Csi,
    /// OSC, DCS, SOS, PM or APC, up to its terminator.
    ControlString,
    /// ESC inside a control string: ST if `\` follows.
    ControlStringEscape,
}

/// Anything [`printable`] would take out, or that starts a sequence.
fn needs_care(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `c` in plain text: kept, dropped, or the start of a sequence.
fn text_char(c: char, out: &mut String) -> State {
    match c {
        '\x1b' => State::Escape,
        '\u{9b}' => State::Csi,
        '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => State::ControlString,
        c if needs_care(c) => State::Text,
        c => {
            out.push(c);
            State::Text
        }
    }
}

/// `c` just after an ESC.
fn after_escape(c: char, out: &mut String) -> State {
    match c {
        '[' => State::Csi,
        ']' | 'P' | 'X' | '^' | '_' => State::ControlString,
        ' '..='/' => State::EscapeIntermediate,
        // The final of a two-character sequence: `ESC c`, `ESC 7`, `ESC =`.
        '0'..='~' => State::Text,
        // No sequence: ESC alone is dropped, `c` is itself.
        c => text_char(c, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        printable(text).into_owned()
    }

    #[test]
    fn plain_text_is_borrowed_as_it_is() {
        for text in [
            "",
            "plain words",
            "line one\nline two\n\tindented",
            "[brackets] and ]reversed[ and a[0] = b];",
            "UTF-8: café, Straße, 東京, Ελληνικά, עברית, العربية",
            "emoji: 🏆🦀👩‍💻 and flags 🇫🇷",
            "\\x1b is only a backslash, not an escape; ^[ neither",
        ] {
            assert!(
                matches!(printable(text), Cow::Borrowed(t) if t == text),
                "{text:?}"
            );
        }
    }

    #[test]
    fn osc_52_clipboard_writes_go_whole() {
        // BEL-terminated and ST-terminated.
        assert_eq!(
            shown("before\x1b]52;c;Y3VybCBldmlsfHNo\x07after"),
            "beforeafter"
        );
        assert_eq!(
            shown("before\x1b]52;c;Y3VybCBldmlsfHNo\x1b\\after"),
            "beforeafter"
        );
        // The 8-bit OSC and ST.
        assert_eq!(shown("a\u{9d}52;c;Y3Vy\u{9c}b"), "ab");
    }

    #[test]
    fn title_changes_and_hyperlinks_go_whole() {
        assert_eq!(shown("\x1b]0;pwned\x07text"), "text");
        assert_eq!(shown("\x1b]2;pwned\x1b\\text"), "text");
        assert_eq!(
            shown("\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"),
            "click"
        );
    }

    #[test]
    fn an_unterminated_control_string_goes_to_the_end() {
        assert_eq!(shown("kept\x1b]52;c;Y3VybCBldmlsfHNo"), "kept");
        assert_eq!(shown("kept\x1bPq#0;2;0;0;0 and more\nlines"), "kept");
        assert_eq!(shown("kept\u{9d}0;title"), "kept");
    }

    #[test]
    fn a_control_string_ends_at_a_new_escape() {
        // The terminal aborts the OSC at ESC and reads `ESC [2J` as a CSI.
        assert_eq!(shown("\x1b]0;title\x1b[2Jshown"), "shown");
        // CAN and SUB abort it too.
        assert_eq!(shown("\x1b]0;title\x18shown"), "shown");
        assert_eq!(shown("\x1b]0;title\x1ashown"), "shown");
    }

    #[test]
    fn dcs_sos_pm_and_apc_go_whole() {
        for intro in [
            "\x1bP", "\x1bX", "\x1b^", "\x1b_", "\u{90}", "\u{98}", "\u{9e}", "\u{9f}",
        ] {
            for end in ["\x1b\\", "\u{9c}", "\x07"] {
                let text = format!("a{intro}1;2|payload with [brackets] {end}b");
                assert_eq!(shown(&text), "ab", "{text:?}");
            }
        }
    }

    #[test]
    fn csi_sequences_go_whole() {
        assert_eq!(shown("\x1b[2J\x1b[Hclean"), "clean");
        assert_eq!(
            shown("\x1b[31mred\x1b[0m \x1b[1;32;40mgreen\x1b[m"),
            "red green"
        );
        assert_eq!(shown("\x1b[?25l\x1b[?1049hhidden\x1b[?1049l"), "hidden");
        assert_eq!(shown("up\x1b[3Aover\x1b[2K\x1b[1G"), "upover");
        assert_eq!(shown("\x1b[>0c\x1b[=1u\x1b[ q"), "");
        // The 8-bit CSI.
        assert_eq!(shown("\u{9b}31mred\u{9b}0m"), "red");
        assert_eq!(shown("\u{9b}2J\u{9b}Hclean"), "clean");
    }

    #[test]
    fn an_unterminated_csi_goes_to_the_end() {
        assert_eq!(shown("kept\x1b[1;2"), "kept");
        assert_eq!(shown("kept\u{9b}?25"), "kept");
        assert_eq!(shown("kept\x1b"), "kept");
    }

    #[test]
    fn a_csi_broken_off_keeps_what_follows() {
        // A character that cannot be in a CSI ends it and stays.
        assert_eq!(shown("\x1b[12é"), "é");
        // ESC starts a new sequence; CAN cancels.
        assert_eq!(shown("\x1b[12\x1b[2Jx"), "x");
        assert_eq!(shown("\x1b[12\x18x"), "x");
        // Other controls are acted on inside it: newline kept, BEL dropped.
        assert_eq!(shown("a\x1b[2\n\x07Jb"), "a\nb");
    }

    #[test]
    fn short_escape_sequences_go_whole() {
        assert_eq!(shown("\x1bcreset"), "reset");
        assert_eq!(shown("\x1b7saved\x1b8"), "saved");
        assert_eq!(shown("\x1b=\x1b>keypad"), "keypad");
        assert_eq!(shown("\x1b(0lqk\x1b(B"), "lqk");
        assert_eq!(shown("\x1b#8align"), "align");
        assert_eq!(shown("\x1bDindex\x1bM"), "index");
        // ESC before a non-ASCII character or a newline: ESC alone goes.
        assert_eq!(shown("\x1bé\x1b\nnext"), "é\nnext");
        assert_eq!(shown("\x1b\x1b[2Jx"), "x");
    }

    #[test]
    fn c0_controls_go_but_newlines_and_tabs_stay() {
        assert_eq!(
            shown("All good\rFAKE: all tests passed"),
            "All goodFAKE: all tests passed"
        );
        assert_eq!(shown("a\r\nb"), "a\nb");
        assert_eq!(
            shown("bell\x07 back\x08\x08 nul\0 ff\x0c vt\x0b del\x7f"),
            "bell back nul ff vt del"
        );
        assert_eq!(
            shown("col\tcol\nrow\t\trow\n\n"),
            "col\tcol\nrow\t\trow\n\n"
        );
        let all_c0: String = (0u8..0x20).map(char::from).collect();
        assert_eq!(shown(&all_c0), "\t\n");
    }

    #[test]
    fn c1_controls_go() {
        let all_c1: String = ('\u{80}'..='\u{9f}').collect();
        // U+009B, U+009D… open sequences that run to the end; alone:
        for c in '\u{80}'..='\u{9f}' {
            let text = format!("a{c}");
            assert_eq!(shown(&text), "a", "{c:?}");
        }
        assert_eq!(shown(&format!("x{all_c1}")), "x");
        // The characters just past them are ordinary text.
        assert_eq!(shown("\u{a0}non-breaking ©"), "\u{a0}non-breaking ©");
    }

    #[test]
    fn bidi_overrides_and_isolates_go() {
        // "Trojan Source": RLO … PDI makes the comment read as code.
        let text = "access = \"user\u{202e} \u{2066}// Check if admin\u{2069} \u{2066}\"";
        assert_eq!(shown(text), "access = \"user // Check if admin \"");
        for c in ('\u{202a}'..='\u{202e}').chain('\u{2066}'..='\u{2069}') {
            assert_eq!(shown(&format!("a{c}b")), "ab", "{c:?}");
        }
        // Marks and joiners stay: they reorder nothing on their own.
        assert_eq!(
            shown("a\u{200e}b\u{200f}c\u{200d}d"),
            "a\u{200e}b\u{200f}c\u{200d}d"
        );
    }

    #[test]
    fn an_attack_reads_as_its_words() {
        let answer = "Here is my answer.\n\x1b]52;c;Y3VybCBldmlsfHNo\x07Copied nothing.\rFAKE: all tests passed\nStill \u{9b}31mred\u{9b}0m\there.\x1b]0;pwned\x07\x1b[2J\x1b[HThe end.";
        assert_eq!(
            shown(answer),
            "Here is my answer.\nCopied nothing.FAKE: all tests passed\nStill red\there.The end."
        );
    }

    #[test]
    fn what_is_printable_stays_printable() {
        let nasty = "\x1b]0;t\x07\u{9b}1m\x1bP\x1b\\x\u{202e}\r\x1b";
        let once = shown(nasty);
        assert!(matches!(printable(&once), Cow::Borrowed(_)));
        assert!(!once.chars().any(needs_care), "{once:?}");
    }
}
