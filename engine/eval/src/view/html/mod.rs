//! Self-contained HTML pages: a tape ([`tape`]), a diff of two tapes ([`diff`]), a sweep
//! report ([`sweep`]), two sweep reports compared ([`sweep_diff`]) and an exploration
//! ([`explore`]). Each is one file with its CSS, JavaScript and data inline (SVG drawn by
//! a few hundred lines of hand-written script, no framework, no network), so it opens from
//! disk and travels as a CI artifact.
//!
//! Size budget: the page's code is about 20 KiB; a tape page draws at most
//! [`tape::ITEMS_MAX`] slices and instants, with each payload cut at
//! [`tape::PAYLOAD_BYTES_MAX`] (so it stays under about 25 MiB), and counts the rest per lane
//! with the command that opens a window of the tape; a sweep page holds two numbers and a
//! verdict letter per seed (about 20 bytes).

pub mod diff;
pub mod explore;
pub mod sweep;
pub mod sweep_diff;
pub mod tape;

use std::fmt::Write as _;

use serde::Serialize;

const CSS: &str = include_str!("assets/view.css");
const TIMELINE_JS: &str = include_str!("assets/timeline.js");
const SWEEP_JS: &str = include_str!("assets/sweep.js");

pub(crate) use crate::sweep::formats::xml_escape as escape;

/// Returns `value` as JSON that is safe inside a `<script>` element: `</` cannot end it
/// early, and the line separators that old parsers reject are escaped.
fn script_json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value)
        .expect("view data serializes")
        .replace("</", "<\\/")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// Which scripts a page needs.
#[derive(Debug, Clone, Copy)]
enum Scripts {
    Timeline,
    Sweep,
}

/// Assembles a page: `title`, a header line, the body, the data as `<script id="data">`,
/// then the scripts and the page's own `main` script.
fn page<T: Serialize + ?Sized>(
    title: &str,
    meta: &str,
    body: &str,
    data: &T,
    scripts: Scripts,
    main: &str,
) -> String {
    let library = match scripts {
        Scripts::Timeline => TIMELINE_JS,
        Scripts::Sweep => SWEEP_JS,
    };
    let mut html = String::with_capacity(body.len() + 64 * 1024);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n\
         <header><h1>{title}</h1><div class=\"meta\">{meta}</div></header>\n<main>\n{body}\n</main>\n\
         <script type=\"application/json\" id=\"data\">{data}</script>\n\
         <script>\n{library}</script>\n<script>\n{main}</script>\n</body>\n</html>\n",
        title = escape(title),
        data = script_json(data),
    );
    html
}

/// Formats virtual nanoseconds for people (`410.741 ms`).
fn duration(t_ns: u64) -> String {
    simtape::time::format_ns(t_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_cannot_close_its_script_element() {
        // Goal: a payload holding `</script>` stays data.
        let json = script_json(&serde_json::json!({"text": "</script><b>"}));
        assert!(!json.contains("</"), "{json}");
        let back: serde_json::Value = serde_json::from_str(&json).expect("still JSON");
        assert_eq!(back["text"], "</script><b>");
        assert_eq!(escape("<a href='x'>&"), "&lt;a href=&apos;x&apos;&gt;&amp;");
    }
}
