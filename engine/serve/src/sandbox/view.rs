//! What a sandboxed program left outside its project: the files of the sandbox's own root
//! (its `/tmp`, its `HOME`, anything it wrote at `/` or under a path it made up), compared
//! with how the root looked when the sandbox was set up. The host never saw any of it; the
//! list says what the program tried to change.
//!
//! The list goes on the tape, so it must not carry what differs from run to run: names made
//! of random or time-derived characters (a UUID, a long hex or digit run) are normalized
//! (`<uuid>`, `<hex>`, `<n>`), and a file is listed once, whatever happened to it how often.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::limits::ENTRIES_MAX;

/// One path of the sandbox's root that changed, inside.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OutsideWrite {
    /// The path inside, normalized.
    pub path: String,
    /// `created`, `changed` or `removed`.
    pub change: String,
}

/// The files and directories of the sandbox's root file system (mounts under it left out),
/// by path inside, with what tells a change.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Listing {
    entries: BTreeMap<String, (bool, u64, i64, i64)>,
}

impl Listing {
    /// Lists `root` (the sandbox's root as simtape reaches it), not crossing into other
    /// file systems (the project, `/proc`, the read-only views), at most
    /// [`ENTRIES_MAX`] entries.
    pub fn of(root: &Path) -> Listing {
        let mut entries = BTreeMap::new();
        let Ok(top) = std::fs::metadata(root) else {
            return Listing { entries };
        };
        let device = top.dev();
        let mut pending = vec![(root.to_path_buf(), String::new())];
        while let Some((dir, prefix)) = pending.pop() {
            let Ok(items) = std::fs::read_dir(&dir) else {
                continue;
            };
            for item in items.flatten() {
                let Ok(meta) = item.metadata() else {
                    continue;
                };
                if meta.dev() != device {
                    continue;
                }
                let name = item.file_name().to_string_lossy().into_owned();
                let inside = format!("{prefix}/{name}");
                let is_dir = meta.is_dir();
                let stamp = (is_dir, meta.len(), meta.mtime(), meta.mtime_nsec());
                entries.insert(inside.clone(), stamp);
                if is_dir {
                    pending.push((item.path(), inside));
                }
                if entries.len() >= ENTRIES_MAX {
                    return Listing { entries };
                }
            }
        }
        Listing { entries }
    }

    /// What changed since `before`: files created, changed or removed (directories only
    /// when created or removed empty-handed are left out: their files say it), normalized
    /// and in path order.
    pub fn changes_since(&self, before: &Listing) -> Vec<OutsideWrite> {
        let mut writes = std::collections::BTreeSet::new();
        for (path, stamp) in &self.entries {
            let change = match before.entries.get(path) {
                None if stamp.0 => continue,
                None => "created",
                Some(old) if old != stamp && !stamp.0 => "changed",
                Some(_) => continue,
            };
            writes.insert(OutsideWrite {
                path: normalize(path),
                change: change.to_string(),
            });
        }
        for (path, stamp) in &before.entries {
            if !stamp.0 && !self.entries.contains_key(path) {
                writes.insert(OutsideWrite {
                    path: normalize(path),
                    change: "removed".to_string(),
                });
            }
        }
        writes.into_iter().collect()
    }
}

/// Replaces the parts of a path that differ per run: UUIDs, runs of 4 or more digits, then
/// runs of 8 or more hex digits holding a digit.
pub fn normalize(path: &str) -> String {
    static PATTERNS: std::sync::LazyLock<[regex::Regex; 3]> = std::sync::LazyLock::new(|| {
        [
            r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
            r"[0-9]{4,}",
            r"[0-9a-fA-F]{8,}",
        ]
        .map(|pattern| regex::Regex::new(pattern).expect("a valid pattern"))
    });
    let [uuid, digits, hex] = &*PATTERNS;
    let path = uuid.replace_all(path, "<uuid>");
    let path = digits.replace_all(&path, "<n>");
    hex.replace_all(&path, |found: &regex::Captures<'_>| {
        let text = &found[0];
        match text.bytes().any(|byte| byte.is_ascii_digit()) {
            true => "<hex>".to_string(),
            false => text.to_string(),
        }
    })
    .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volatile_parts_of_a_path_are_normalized() {
        assert_eq!(
            normalize(
                "/home/agent/.claude/projects/-project/0f8fad5b-d9cb-469f-a165-70867728950e.jsonl"
            ),
            "/home/agent/.claude/projects/-project/<uuid>.jsonl"
        );
        assert_eq!(normalize("/tmp/tmp1a2b3c4d5e/x"), "/tmp/tmp<hex>/x");
        assert_eq!(normalize("/tmp/run-1764201234/log"), "/tmp/run-<n>/log");
        assert_eq!(normalize("/tmp/deadbeefcafe/x"), "/tmp/deadbeefcafe/x");
        assert_eq!(normalize("/etc/passwd"), "/etc/passwd");
    }

    #[test]
    fn changes_are_files_created_changed_and_removed_once_each() {
        let dir = std::env::temp_dir().join(format!("simtape-view-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        std::fs::write(dir.join("keep"), "a").unwrap();
        std::fs::write(dir.join("gone"), "a").unwrap();
        std::fs::write(dir.join("edit"), "a").unwrap();
        let before = Listing::of(&dir);
        std::fs::create_dir_all(dir.join("tmp/new-dir")).unwrap();
        std::fs::write(dir.join("tmp/new-dir/file"), "b").unwrap();
        std::fs::remove_file(dir.join("gone")).unwrap();
        std::fs::write(dir.join("edit"), "abc").unwrap();
        let changes = Listing::of(&dir).changes_since(&before);
        let shape: Vec<(&str, &str)> = changes
            .iter()
            .map(|w| (w.path.as_str(), w.change.as_str()))
            .collect();
        assert_eq!(
            shape,
            [
                ("/edit", "changed"),
                ("/gone", "removed"),
                ("/tmp/new-dir/file", "created")
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
