//! Normalized views of captured output, for comparing two recordings of the same pipeline.
//!
//! The raw capture is never altered: a [`Normalizer`] returns new text (or a new entry). The
//! rules, applied in this order (documented in `docs/process.md`):
//!
//! 1. each worktree path (as given, longest first) becomes `<worktree>`;
//! 2. an ISO 8601 date-time (`2026-01-01T10:00:00Z`, `2026-01-01 10:00:00.5+02:00`, a bare
//!    date) or a clock time `10:00:00(.123)` becomes `<timestamp>`;
//! 3. a number with a duration unit (`ns us µs ms s m min h`, compounds like `1m20s`)
//!    becomes `<duration>`;
//! 4. the digits after the word `pid` (`pid 42`, `PID=42`, `pid: 42`) become `<pid>`, and so
//!    does any whole number registered with [`Normalizer::pid`].
//!
//! Rules 2–4 only start at a word boundary, so `sha1s` or `v2s` stay as they are.

use super::tape::{Captured, TapeEntry};

/// The rules of one comparison.
///
/// ```
/// use simtape::cap::process::Normalizer;
/// let n = Normalizer::new().worktree("/home/dev/checkout").pid(4242);
/// assert_eq!(
///     n.text("/home/dev/checkout/a.rs built in 1.5s at 2026-01-01T10:00:00Z by pid 77, child 4242"),
///     "<worktree>/a.rs built in <duration> at <timestamp> by pid <pid>, child <pid>",
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Normalizer {
    worktrees: Vec<String>,
    pids: Vec<u64>,
}

const UNITS: [&str; 8] = ["min", "ms", "ns", "us", "µs", "s", "m", "h"];

impl Normalizer {
    /// Returns a normalizer with no worktree and no known pids.
    pub fn new() -> Normalizer {
        Normalizer::default()
    }

    /// Adds a worktree: absolute paths under it become `<worktree>/…`.
    pub fn worktree(mut self, path: impl Into<String>) -> Normalizer {
        let path = path.into().trim_end_matches('/').to_owned();
        if !path.is_empty() {
            self.worktrees.push(path);
            // Longest first, so a nested worktree wins over its parent.
            self.worktrees.sort_by_key(|w| std::cmp::Reverse(w.len()));
        }
        self
    }

    /// Adds a pid to replace wherever it stands as a whole number.
    pub fn pid(mut self, pid: u64) -> Normalizer {
        self.pids.push(pid);
        self
    }

    /// Returns the normalized view of `bytes` (invalid UTF-8 shown as U+FFFD).
    pub fn bytes(&self, bytes: &[u8]) -> String {
        self.text(&String::from_utf8_lossy(bytes))
    }

    /// Returns the normalized view of `text`.
    pub fn text(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for worktree in &self.worktrees {
            text = text.replace(worktree.as_str(), "<worktree>");
        }
        self.scan(&text)
    }

    /// Returns a copy of `entry` for comparison: duration 0, paths in args and cwd and all
    /// output normalized. The entry itself is untouched.
    pub fn entry(&self, entry: &TapeEntry) -> TapeEntry {
        let mut view = entry.clone();
        view.duration_ns = 0;
        view.args = entry.args.iter().map(|a| self.text(a)).collect();
        view.cwd = entry.cwd.as_deref().map(|c| self.text(c));
        view.stdout = Captured(self.bytes(&entry.stdout.0).into_bytes());
        view.stderr = Captured(self.bytes(&entry.stderr.0).into_bytes());
        view
    }

    fn scan(&self, text: &str) -> String {
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < text.len() {
            let boundary = i == 0 || !is_word(bytes[i - 1]);
            if boundary {
                if let Some((len, replacement)) = self.token_at(&text[i..]) {
                    out.push_str(&replacement);
                    i += len;
                    continue;
                }
            }
            let c = text[i..].chars().next().expect("i is on a char boundary");
            out.push(c);
            i += c.len_utf8();
        }
        out
    }

    /// Returns the length and replacement of a token that starts `rest`.
    fn token_at(&self, rest: &str) -> Option<(usize, String)> {
        if let Some(len) = timestamp_len(rest) {
            return Some((len, "<timestamp>".to_owned()));
        }
        if let Some(len) = duration_len(rest) {
            return Some((len, "<duration>".to_owned()));
        }
        if let Some((prefix, len)) = pid_phrase(rest) {
            return Some((len, format!("{prefix}<pid>")));
        }
        let digits = digits_len(rest);
        let after = rest.as_bytes().get(digits).copied();
        let whole = digits > 0 && !after.is_some_and(is_word);
        if whole
            && rest[..digits]
                .parse()
                .is_ok_and(|n: u64| self.pids.contains(&n))
        {
            return Some((digits, "<pid>".to_owned()));
        }
        None
    }
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

fn digits_len(text: &str) -> usize {
    text.bytes().take_while(u8::is_ascii_digit).count()
}

/// Matches exactly `n` digits at the start of `text`.
fn fixed_digits(text: &str, n: usize) -> Option<usize> {
    (digits_len(text) == n).then_some(n)
}

/// Returns the length of `digits (. digits)?`, at least one digit.
fn number_len(text: &str) -> Option<usize> {
    let whole = digits_len(text);
    if whole == 0 {
        return None;
    }
    match text[whole..].strip_prefix('.') {
        Some(fraction) if digits_len(fraction) > 0 => Some(whole + 1 + digits_len(fraction)),
        _ => Some(whole),
    }
}

/// Returns the length of a clock time `hh:mm(:ss(.f)?)?`.
fn time_len(text: &str) -> Option<usize> {
    let mut len = fixed_digits(text, 2)?;
    len += 1 + fixed_digits(text[len..].strip_prefix(':')?, 2)?;
    if let Some(seconds) = text[len..].strip_prefix(':') {
        if fixed_digits(seconds, 2).is_some() {
            len += 1 + number_len(seconds)?;
        }
    }
    Some(len)
}

/// Returns the length of a date-time or clock time at the start of `text`.
fn timestamp_len(text: &str) -> Option<usize> {
    let date = fixed_digits(text, 4)
        .and_then(|y| Some(y + 1 + fixed_digits(text[y..].strip_prefix('-')?, 2)?))
        .and_then(|m| Some(m + 1 + fixed_digits(text[m..].strip_prefix('-')?, 2)?));
    let Some(mut len) = date else {
        // A bare clock time needs its seconds, so `10:30` in prose stays.
        let len = time_len(text)?;
        return (len > 5).then_some(len);
    };
    let rest = &text[len..];
    if let Some(time) = rest.strip_prefix('T').or_else(|| rest.strip_prefix(' ')) {
        if let Some(time_len) = time_len(time) {
            len += 1 + time_len;
            len += zone_len(&text[len..]);
        }
    }
    Some(len)
}

/// Returns the length of a zone suffix: `Z`, `+hh:mm`, `-hhmm`, or nothing.
fn zone_len(text: &str) -> usize {
    if text.starts_with('Z') {
        return 1;
    }
    let Some(offset) = text.strip_prefix('+').or_else(|| text.strip_prefix('-')) else {
        return 0;
    };
    match (fixed_digits(offset, 2), offset.get(2..)) {
        (Some(_), Some(rest)) if rest.starts_with(':') && fixed_digits(&rest[1..], 2).is_some() => {
            6
        }
        (Some(_), Some(rest)) if fixed_digits(rest, 2).is_some() => 5,
        _ => 0,
    }
}

/// Returns the length of one or more `number unit` segments (`1.5s`, `1m20s`).
fn duration_len(text: &str) -> Option<usize> {
    let mut len = 0;
    while let Some(segment) = duration_segment(&text[len..]) {
        len += segment;
    }
    (len > 0).then_some(len)
}

fn duration_segment(text: &str) -> Option<usize> {
    let number = number_len(text)?;
    let unit = UNITS.iter().find(|u| text[number..].starts_with(*u))?;
    let len = number + unit.len();
    let after = text.as_bytes().get(len).copied();
    (!after.is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')).then_some(len)
}

/// Matches `pid`, separators and digits; returns the text to keep and the whole length.
fn pid_phrase(text: &str) -> Option<(&str, usize)> {
    if !text.get(..3)?.eq_ignore_ascii_case("pid") {
        return None;
    }
    let separators = text[3..]
        .bytes()
        .take_while(|b| matches!(b, b' ' | b':' | b'=' | b'#'))
        .count();
    let prefix = 3 + separators;
    let digits = digits_len(&text[prefix..]);
    let after = text.as_bytes().get(prefix + digits).copied();
    (digits > 0 && !after.is_some_and(is_word)).then(|| (&text[..prefix], prefix + digits))
}
