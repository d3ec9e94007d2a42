//! The one text normalizer: views of captured output and logs with what differs from run to
//! run taken out, for comparing two recordings of the same pipeline (process output here,
//! the evidence's run log in `simtape-eval`).
//!
//! The raw capture is never altered: a [`Normalizer`] returns new text (or a new entry). The
//! rules, applied in this order (documented in `docs/process.md`):
//!
//! 1. each place (a path and the name shown for it, longest first) becomes its name; a
//!    worktree is the place named `<worktree>`;
//! 2. with [`Normalizer::absolute_paths`], any other absolute path (a word that starts with
//!    `/`, after an opening quote or bracket at most) becomes `<path>`;
//! 3. an ISO 8601 date-time (`2026-01-01T10:00:00Z`, `2026-01-01 10:00:00.5+02:00`, a bare
//!    date) or a clock time `10:00:00(.123)` becomes `<timestamp>`;
//! 4. a number with a duration unit (`ns us µs ms s m min h`, compounds like `1m20s`)
//!    becomes `<duration>`;
//! 5. the digits after the word `pid` (`pid 42`, `PID=42`, `pid: 42`) become `<pid>`, and so
//!    does any whole number registered with [`Normalizer::pid`].
//!
//! Rules 3–5 only start at a word boundary, so `sha1s` or `v2s` stay as they are.

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
/// let log = Normalizer::new().place("/tmp/run-1", "<scenario>").absolute_paths();
/// assert_eq!(
///     log.text("wrote /tmp/run-1/out.txt and (/etc/hosts)"),
///     "wrote <scenario>/out.txt and (<path>)",
/// );
/// assert_eq!(log.changed_words("took 12ms, PID 77 in /usr/bin"), ["12ms,", "77", "/usr/bin"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Normalizer {
    /// (path, name), longest path first.
    places: Vec<(String, String)>,
    absolute_paths: bool,
    pids: Vec<u64>,
}

/// What rule 2 shows instead of an absolute path.
const PATH: &str = "<path>";
/// The marks a word may open with before its absolute path, or close with after it.
const OPENING: &[u8] = b"\"'([{";
const CLOSING: &[u8] = b"\"'()[]{},;";

const UNITS: [&str; 8] = ["min", "ms", "ns", "us", "µs", "s", "m", "h"];

impl Normalizer {
    /// Returns a normalizer with no place, no known pids, and absolute paths kept.
    pub fn new() -> Normalizer {
        Normalizer::default()
    }

    /// Adds a worktree: absolute paths under it become `<worktree>/…`.
    pub fn worktree(self, path: impl Into<String>) -> Normalizer {
        self.place(path, "<worktree>")
    }

    /// Adds a place: `path` (a trailing `/` ignored; the root alone is ignored, or every
    /// path would become a place) becomes `name` wherever it appears.
    pub fn place(mut self, path: impl Into<String>, name: impl Into<String>) -> Normalizer {
        let path = path.into().trim_end_matches('/').to_owned();
        if !path.is_empty() {
            self.places.push((path, name.into()));
            // Longest first, so a nested place wins over its parent.
            self.places
                .sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        }
        self
    }

    /// Turns every absolute path that is not a place into `<path>` (rule 2).
    pub fn absolute_paths(mut self) -> Normalizer {
        self.absolute_paths = true;
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
        for (path, name) in &self.places {
            text = text.replace(path.as_str(), name);
        }
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        for token in self.tokens(&text) {
            out.push_str(&text[copied..token.start]);
            out.push_str(&token.replacement);
            copied = token.end;
        }
        out.push_str(&text[copied..]);
        out
    }

    /// Returns the whitespace-separated words of `text` that rules 2–5 would change, in
    /// order: none for text that is already normalized. (Places are the caller's to know.)
    pub fn changed_words(&self, text: &str) -> Vec<String> {
        let tokens = self.tokens(text);
        let mut words = Vec::new();
        let mut next = tokens.iter().peekable();
        let mut start = None;
        for (at, c) in text.char_indices().chain([(text.len(), ' ')]) {
            match (c.is_whitespace(), start) {
                (false, None) => start = Some(at),
                (true, Some(word)) => {
                    start = None;
                    while next.next_if(|token| token.end <= word).is_some() {}
                    if next.peek().is_some_and(|token| token.start < at) {
                        words.push(text[word..at].to_owned());
                    }
                }
                _ => {}
            }
        }
        words
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

    /// The spans of `text` the rules replace, in order, none overlapping. One pass:
    /// `word_opened` says whether every byte of the current word so far is an opening mark.
    fn tokens(&self, text: &str) -> Vec<Token> {
        let bytes = text.as_bytes();
        let mut tokens = Vec::new();
        let mut word_opened = true;
        let mut i = 0;
        while i < text.len() {
            let token = if self.absolute_paths && word_opened && starts_path(bytes, i) {
                Some(Token::new(i, path_end(bytes, i), PATH.to_owned()))
            } else if i == 0 || !is_word(bytes[i - 1]) {
                self.token_at(&text[i..])
                    .map(|(kept, len, replacement)| Token::new(i + kept, i + len, replacement))
            } else {
                None
            };
            let end = match token {
                Some(token) => {
                    let end = token.end;
                    tokens.push(token);
                    end
                }
                None => i + text[i..].chars().next().map_or(1, char::len_utf8),
            };
            for byte in &bytes[i..end] {
                word_opened = byte.is_ascii_whitespace() || (word_opened && OPENING.contains(byte));
            }
            i = end;
        }
        tokens
    }

    /// Returns, for a token that starts `rest`, how many of its bytes stay, its length, and
    /// what replaces the rest.
    fn token_at(&self, rest: &str) -> Option<(usize, usize, String)> {
        if let Some(len) = timestamp_len(rest) {
            return Some((0, len, "<timestamp>".to_owned()));
        }
        if let Some(len) = duration_len(rest) {
            return Some((0, len, "<duration>".to_owned()));
        }
        if let Some((prefix, len)) = pid_phrase(rest) {
            return Some((prefix, len, "<pid>".to_owned()));
        }
        let digits = digits_len(rest);
        let after = rest.as_bytes().get(digits).copied();
        let whole = digits > 0 && !after.is_some_and(is_word);
        if whole
            && rest[..digits]
                .parse()
                .is_ok_and(|n: u64| self.pids.contains(&n))
        {
            return Some((0, digits, "<pid>".to_owned()));
        }
        None
    }
}

/// One replaced span: `text[start..end]` becomes `replacement`.
#[derive(Debug)]
struct Token {
    start: usize,
    end: usize,
    replacement: String,
}

impl Token {
    fn new(start: usize, end: usize, replacement: String) -> Token {
        Token {
            start,
            end,
            replacement,
        }
    }
}

/// Whether an absolute path starts at `i`, at the start of a word or after its opening
/// marks only (the caller knows; `<scenario>/out.txt`, a place already named, and
/// `src/lib.rs` are not): a `/` with a character after it that ends no path.
fn starts_path(bytes: &[u8], i: usize) -> bool {
    let next = bytes.get(i + 1).copied();
    bytes[i] == b'/' && next.is_some_and(|b| !(b.is_ascii_whitespace() || CLOSING.contains(&b)))
}

/// The end of the absolute path that starts at `start`: the end of its word, less the
/// closing marks after it.
fn path_end(bytes: &[u8], start: usize) -> usize {
    let word_end = bytes[start..]
        .iter()
        .position(u8::is_ascii_whitespace)
        .map_or(bytes.len(), |space| start + space);
    let closing = bytes[start..word_end]
        .iter()
        .rev()
        .take_while(|b| CLOSING.contains(b))
        .count();
    word_end - closing
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

/// Matches `pid`, separators and digits; returns the length to keep and the whole length.
fn pid_phrase(text: &str) -> Option<(usize, usize)> {
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
    (digits > 0 && !after.is_some_and(is_word)).then_some((prefix, prefix + digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_are_whole_words_and_named_places_stay() {
        // Goal: rule 2 takes a word that is an absolute path (after opening marks at most,
        // closing marks kept), and leaves relative paths, places already named and a lone `/`.
        let n = Normalizer::new()
            .place("/w/run", "<scenario>")
            .absolute_paths();
        assert_eq!(
            n.text("(/etc/hosts), \"/tmp/a b\" /w/run/x src/lib.rs a=/b / //"),
            "(<path>), \"<path> b\" <scenario>/x src/lib.rs a=/b / <path>",
        );
        assert_eq!(Normalizer::new().text("/etc/hosts"), "/etc/hosts");
    }

    #[test]
    fn changed_words_are_the_words_a_rule_touches() {
        // Goal: a pid phrase reports only its number's word; a word already normalized is not
        // reported; words are split on any whitespace.
        let n = Normalizer::new().absolute_paths();
        assert_eq!(
            n.changed_words("PID 77\tat 10:00:01 (/x)\n<path> <timestamp> v1.2.3"),
            ["77", "10:00:01", "(/x)"],
        );
        assert!(n.changed_words(&n.text("pid=4 took 3ms at /x")).is_empty());
    }

    #[test]
    fn a_long_line_of_slashes_is_read_in_one_pass() {
        // Goal: no rule looks back over the line, so a megabyte without whitespace costs one
        // pass (a `/` that looked back over its word made this quadratic).
        let line = "(x/".repeat(300_000);
        let n = Normalizer::new().absolute_paths();
        assert_eq!(n.text(&line), line);
    }
}
