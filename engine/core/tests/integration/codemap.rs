//! docs/ARCHITECTURE.md's codemap against the tree: every file and directory it names exists,
//! so a move that forgets the map fails here.

use std::path::{Path, PathBuf};

/// The column the codemap's descriptions start at; a line indented this far continues the
/// description above it.
const DESCRIPTION_COLUMN: usize = 20;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Returns the codemap: the first fenced block after `## Codemap`.
fn codemap(text: &str) -> &str {
    let after = text
        .split("## Codemap")
        .nth(1)
        .expect("a ## Codemap section");
    after.split("```").nth(1).expect("a fenced codemap")
}

/// Expands `a/{b,c}.rs` into `a/b.rs`, `a/c.rs`.
fn expand(name: &str) -> Vec<String> {
    match (name.find('{'), name.find('}')) {
        (Some(open), Some(close)) if open < close => name[open + 1..close]
            .split(',')
            .map(|part| format!("{}{part}{}", &name[..open], &name[close + 1..]))
            .collect(),
        _ => vec![name.to_string()],
    }
}

/// Returns whether `path` exists; a `*` in its file name matches any run of characters.
fn exists(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let Some((prefix, suffix)) = name.split_once('*') else {
        return path.exists();
    };
    let dir = path.parent().expect("a named file has a directory");
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with(prefix) && name.ends_with(suffix)
        })
    })
}

/// Returns every path the codemap names, relative to the repository root: a line's first
/// column (before a run of two spaces) holds one path, or several after a comma; a name that
/// ends in `/` is the directory the more indented lines below it are in.
fn named_paths(map: &str) -> Vec<(String, PathBuf)> {
    let mut parents: Vec<(usize, PathBuf)> = Vec::new();
    let mut named = Vec::new();
    for line in map.lines().skip(1).filter(|line| !line.trim().is_empty()) {
        let indent = line.len() - line.trim_start().len();
        if indent >= DESCRIPTION_COLUMN {
            continue;
        }
        let field = line
            .trim()
            .split("  ")
            .next()
            .expect("a line has a first field");
        while parents.last().is_some_and(|(depth, _)| *depth >= indent) {
            parents.pop();
        }
        let base = parents
            .last()
            .map(|(_, dir)| dir.clone())
            .unwrap_or_default();
        let mut first_dir = base.clone();
        for (index, part) in field.split(", ").enumerate() {
            for name in expand(part.trim()) {
                // A second name after a comma sits beside the first.
                let path = if index == 0 {
                    base.join(&name)
                } else {
                    first_dir.join(&name)
                };
                if index == 0 {
                    first_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
                }
                named.push((line.trim().to_string(), path));
            }
        }
        if field.ends_with('/') {
            parents.push((indent, base.join(field)));
        }
    }
    named
}

#[test]
fn every_path_in_the_codemap_exists() {
    // Goal: the map names only files and directories the tree has.
    let text = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let named = named_paths(codemap(&text));
    assert!(named.len() > 50, "the codemap names {} paths", named.len());
    let missing: Vec<String> = named
        .iter()
        .filter(|(_, path)| !exists(&root().join(path)))
        .map(|(line, path)| format!("{} (from: {line})", path.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names: {missing:#?}"
    );
}

#[test]
fn a_stale_name_is_caught() {
    // Goal: the parser reads nested directories, braces and commas, so a file the map names
    // under the wrong directory is reported.
    let map = "\nengine/core/            crate\n  src/cap/              caps\n    {fault_rules,no_such_file}.rs  rules\n  src/sim.rs, run.rs    two\n";
    let named: Vec<PathBuf> = named_paths(map).into_iter().map(|(_, path)| path).collect();
    assert_eq!(
        named,
        [
            "engine/core/",
            "engine/core/src/cap/",
            "engine/core/src/cap/fault_rules.rs",
            "engine/core/src/cap/no_such_file.rs",
            "engine/core/src/sim.rs",
            "engine/core/src/run.rs",
        ]
        .map(PathBuf::from)
    );
    let missing: Vec<&PathBuf> = named
        .iter()
        .filter(|path| !exists(&root().join(path)))
        .collect();
    assert_eq!(
        missing,
        [&PathBuf::from("engine/core/src/cap/no_such_file.rs")]
    );
}
