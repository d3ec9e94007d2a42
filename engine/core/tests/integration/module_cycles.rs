//! No import cycle of more than [`CYCLE_MODULES_MAX`] modules in the crates listed in
//! [`UNTANGLED`]: a module of one of them depends on another (`crate::other` in its code, or
//! `super::other` in a top-level file) only along a layering a reader can follow. The nodes
//! are a crate's top-level modules (`src/x.rs` or `src/x/`); the cycles are the strongly
//! connected components of that graph. docs/ARCHITECTURE.md gives the counts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::source_tree::{root, sources};

/// The most modules one import cycle may hold.
const CYCLE_MODULES_MAX: usize = 3;

/// The crates held to it (the core's own tangle is older and not yet cut).
const UNTANGLED: [&str; 2] = ["engine/agent/src", "engine/serve/src"];

/// The core's largest import cycle as last measured (16 of its 25 top-level modules): it may
/// shrink, never grow, until it is cut to [`CYCLE_MODULES_MAX`].
const CORE_CYCLE_MODULES_MAX: usize = 16;

/// The code of `text` before its unit tests, without comment lines.
fn code(text: &str) -> String {
    text.lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]"))
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names `prefix` is followed by in `code`: `crate::a` and each name of `crate::{a, b::c}`.
fn named_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let ident = |text: &str| -> String {
        text.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices(prefix) {
        let rest = &code[at + prefix.len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                names.extend(group.split(',').map(|part| ident(part.trim())));
            }
            None => {
                names.insert(ident(rest));
            }
        }
    }
    names
}

/// The module graph of the crate at `src`: each top-level module and the others it names.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            modules.insert(name, sources(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") && name != "lib" && name != "main"
        {
            modules.insert(name, vec![path]);
        }
    }
    let mut edges = BTreeMap::new();
    for (module, files) in &modules {
        let mut to = BTreeSet::new();
        for file in files {
            let code = code(&std::fs::read_to_string(file).unwrap());
            to.extend(named_after(&code, "crate::"));
            if file.parent() == Some(src) {
                to.extend(named_after(&code, "super::"));
            }
        }
        to.retain(|other| other != module && modules.contains_key(other));
        edges.insert(module.clone(), to);
    }
    edges
}

/// The strongly connected components of `edges` (Tarjan), each sorted.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let at = self.index.len();
            self.index.insert(node, at);
            self.low.insert(node, at);
            self.stack.push(node);
            for next in &self.edges[node] {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.stack.contains(&next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                loop {
                    let member = self.stack.pop().expect("the node is on the stack");
                    component.push(member.to_string());
                    if member == node {
                        break;
                    }
                }
                component.sort();
                self.found.push(component);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.found
}

#[test]
fn no_import_cycle_spans_more_than_three_modules() {
    // Goal: the agent and the gateway stay layered; a new import that closes a long cycle
    // fails here, naming the cycle.
    for src in UNTANGLED {
        let edges = graph(&root().join(src));
        assert!(edges.len() > 5, "{src}: {} modules", edges.len());
        let long: Vec<Vec<String>> = cycles(&edges)
            .into_iter()
            .filter(|cycle| cycle.len() > CYCLE_MODULES_MAX)
            .collect();
        assert!(long.is_empty(), "{src}: import cycles {long:?}");
    }
}

#[test]
fn the_core_import_cycle_does_not_grow() {
    // Goal: the core's tangle is a ratchet: a new import that pulls one more module into its
    // cycle fails here, naming it.
    let edges = graph(&root().join("engine/core/src"));
    let largest = cycles(&edges)
        .into_iter()
        .max_by_key(Vec::len)
        .unwrap_or_default();
    assert!(
        largest.len() <= CORE_CYCLE_MODULES_MAX,
        "engine/core/src: an import cycle of {} modules (at most {CORE_CYCLE_MODULES_MAX}): {largest:?}",
        largest.len()
    );
}

#[test]
fn a_cycle_is_found() {
    // Goal: the graph reads `crate::` paths and groups, and a three-module ring is one cycle.
    let named = named_after("use crate::{a, b::C};\nlet x = crate::c::f();", "crate::");
    assert_eq!(named, ["a", "b", "c"].map(String::from).into());
    let edges: BTreeMap<String, BTreeSet<String>> =
        [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
            .into_iter()
            .map(|(from, to)| (from.to_string(), BTreeSet::from([to.to_string()])))
            .collect();
    let mut found = cycles(&edges);
    found.sort();
    assert_eq!(found, [vec!["a", "b", "c"], vec!["d"]]);
}
