//! Lexical path handling: turns a requested path into root-relative components, and names
//! overlay entries by keys (`"dir/file"`, `""` for the root).
//!
//! Keys are `/`-joined UTF-8 components, so a `BTreeMap` of keys iterates a directory's
//! subtree contiguously and in a stable order on every host.

use std::path::{Component, Path};

use super::FsError;

/// One step of a requested path, before symlinks are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// A named component.
    Name(String),
    /// `..`: the parent of what came before.
    Parent,
}

/// Splits `input` into steps relative to the root. An absolute path is accepted only when it
/// lies under the root as given or as canonicalized; any other absolute path is an escape.
pub(crate) fn steps(input: &str, roots: &[&Path]) -> Result<Vec<Step>, FsError> {
    let path = Path::new(input);
    let relative = if path.has_root() {
        roots
            .iter()
            .find_map(|root| path.strip_prefix(root).ok())
            .ok_or_else(|| FsError::Escape {
                path: input.to_string(),
                resolved: None,
            })?
    } else {
        path
    };
    relative
        .components()
        .filter_map(|component| match component {
            Component::CurDir => None,
            Component::ParentDir => Some(Ok(Step::Parent)),
            Component::Normal(name) => Some(
                name.to_str()
                    .map(|s| Step::Name(s.to_string()))
                    .ok_or(FsError::InvalidPath {
                        path: input.to_string(),
                        reason: "a component is not UTF-8".to_string(),
                    }),
            ),
            // A root or prefix after stripping means a path like `C:` inside: refuse it.
            Component::RootDir | Component::Prefix(_) => Some(Err(FsError::Escape {
                path: input.to_string(),
                resolved: None,
            })),
        })
        .collect()
}

/// Joins a parent key and a child name (or a relative key; `""` leaves the parent).
pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() || name.is_empty() {
        format!("{parent}{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// Returns the parent key of `key` (`""` for a top-level entry), or `None` for the root.
pub(crate) fn parent(key: &str) -> Option<&str> {
    if key.is_empty() {
        return None;
    }
    Some(key.rsplit_once('/').map_or("", |(parent, _)| parent))
}

/// Returns the proper ancestors of `key`, outermost first, without the root.
pub(crate) fn ancestors(key: &str) -> impl Iterator<Item = &str> {
    key.match_indices('/').map(move |(at, _)| &key[..at])
}

/// Returns whether `key` is `ancestor` or lies below it.
pub(crate) fn is_within(key: &str, ancestor: &str) -> bool {
    ancestor.is_empty()
        || key == ancestor
        || (key.starts_with(ancestor) && key.as_bytes().get(ancestor.len()) == Some(&b'/'))
}

/// Returns the lower bound of the keys strictly below `key` in a `BTreeMap` range.
pub(crate) fn children_start(key: &str) -> String {
    if key.is_empty() {
        String::new()
    } else {
        format!("{key}/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_ancestors() {
        // Goal: the key helpers agree on parents, ancestors and subtree membership.
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("a", "b"), "a/b");
        assert_eq!(join("a", ""), "a");
        assert_eq!(parent("a/b/c"), Some("a/b"));
        assert_eq!(parent("a"), Some(""));
        assert_eq!(parent(""), None);
        assert_eq!(ancestors("a/b/c").collect::<Vec<_>>(), ["a", "a/b"]);
        assert!(is_within("a/b", "a"));
        assert!(!is_within("ab", "a"));
        assert!(is_within("x", ""));
    }

    #[test]
    fn steps_strip_the_root_and_refuse_other_absolute_paths() {
        // Goal: absolute paths count only under the root; `.` vanishes and `..` is kept.
        let root = Path::new("/srv/root");
        assert_eq!(
            steps("/srv/root/a/./b/..", &[root]).unwrap(),
            [Step::Name("a".into()), Step::Name("b".into()), Step::Parent]
        );
        assert!(matches!(
            steps("/etc/passwd", &[root]),
            Err(FsError::Escape { .. })
        ));
    }
}
