//! JSON-pointer plumbing (RFC 6901) and the path patterns a goal uses to allow changes.

/// A text that is not a JSON pointer. Not fatal: a spec that holds one is refused when it
/// loads, and an effect that renders one fails its call with a tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{pointer}` is not a JSON pointer (it must be empty or start with `/`)")]
pub struct NotAPointer {
    /// The text.
    pub pointer: String,
}

/// The most tokens a path an effect writes may have. An effect creates the objects its path
/// names, so a path of thousands of tokens built a state thousands of levels deep, and
/// copying, dropping or writing that state exhausted the stack (fuzzing found it:
/// `fuzz/regressions/world_spec/effect-path-11900-levels-deep.json`). 128 is as deep as
/// `serde_json` reads a document.
pub const PATH_DEPTH_MAX: usize = 128;

/// Splits a JSON pointer into unescaped tokens. `""` is the whole document.
///
/// ```
/// use simtape_mcp::world::pointer::tokens;
/// assert_eq!(tokens("/a~1b/c~0d").unwrap(), vec!["a/b".to_string(), "c~d".to_string()]);
/// assert!(tokens("no-slash").is_err());
/// ```
pub fn tokens(pointer: &str) -> Result<Vec<String>, NotAPointer> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(NotAPointer {
            pointer: pointer.to_string(),
        });
    };
    Ok(rest
        .split('/')
        // Most tokens hold no escape: skip the two searches and copies.
        .map(|t| match t.contains('~') {
            true => t.replace("~1", "/").replace("~0", "~"),
            false => t.to_owned(),
        })
        .collect())
}

/// Escapes one token for use inside a JSON pointer (`~` → `~0`, `/` → `~1`).
pub fn escape(token: &str) -> String {
    simtape::json_diff::escape(token)
}

/// Joins a parent pointer and one unescaped token.
pub fn join(parent: &str, token: &str) -> String {
    format!("{parent}/{}", escape(token))
}

/// Returns true when `pattern` matches `path` or one of its ancestors. In a pattern, a `*`
/// token matches any one token and a final `**` matches any rest, so `/tickets/*/status`
/// allows every ticket's status and `/audit/**` the whole audit log.
///
/// ```
/// use simtape_mcp::world::pointer::pattern_covers;
/// assert!(pattern_covers("/tickets/*/status", "/tickets/T-1/status"));
/// assert!(pattern_covers("/tickets/T-1", "/tickets/T-1/title"));
/// assert!(!pattern_covers("/tickets/T-1", "/tickets/T-2/title"));
/// ```
pub fn pattern_covers(pattern: &str, path: &str) -> bool {
    let (Ok(pattern), Ok(path)) = (tokens(pattern), tokens(path)) else {
        return false;
    };
    tokens_cover(&pattern, &path)
}

/// [`pattern_covers`] on pointers already split by [`tokens`] (scoring splits each pattern
/// once, not once per changed leaf).
pub fn tokens_cover(pattern: &[String], path: &[String]) -> bool {
    for (index, want) in pattern.iter().enumerate() {
        if want == "**" && index + 1 == pattern.len() {
            return true;
        }
        match path.get(index) {
            Some(got) if want == "*" || want == got => {}
            _ => return false,
        }
    }
    true
}
