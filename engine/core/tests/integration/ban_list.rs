//! The determinism ban list: one file, `engine/sim.clippy.toml`, copied byte for byte into
//! the `clippy.toml` of every crate whose code runs inside a simulation (clippy reads only a
//! crate's own). The gateway and the CLI are the outside world and carry none.

use std::path::{Path, PathBuf};

/// The crates under the ban list.
const BANNED: [&str; 4] = ["core", "mcp", "eval", "agent"];
/// The crates that are the outside world.
const OUTSIDE: [&str; 2] = ["serve", "cli"];

fn engine() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("engine/core has a parent")
        .to_path_buf()
}

/// Returns the crates whose `clippy.toml` differs from `list`, or that lack one.
fn drifted(engine: &Path, list: &str) -> Vec<String> {
    BANNED
        .iter()
        .filter(|name| {
            std::fs::read_to_string(engine.join(name).join("clippy.toml"))
                .ok()
                .as_deref()
                != Some(list)
        })
        .map(|name| name.to_string())
        .collect()
}

#[test]
fn ban_list_copies_match() {
    // Goal: every crate inside the simulation bans the same things; a copy that drifts (one
    // crate edits its list, or loses it) fails here, naming the crate.
    let engine = engine();
    let list = std::fs::read_to_string(engine.join("sim.clippy.toml")).unwrap();
    let drifted = drifted(&engine, &list);
    assert!(
        drifted.is_empty(),
        "engine/{{{}}}/clippy.toml differ from engine/sim.clippy.toml: copy it over them",
        drifted.join(",")
    );
    for name in OUTSIDE {
        assert!(
            !engine.join(name).join("clippy.toml").exists(),
            "engine/{name} is the outside world and carries no ban list"
        );
    }
}

#[test]
fn a_changed_copy_is_caught() {
    // Goal: the comparison is byte for byte: one entry removed from one copy is drift.
    let dir = crate::tempdir("ban_list", "changed_copy");
    let list = std::fs::read_to_string(engine().join("sim.clippy.toml")).unwrap();
    for name in BANNED {
        std::fs::create_dir_all(dir.join(name)).unwrap();
        std::fs::write(dir.join(name).join("clippy.toml"), &list).unwrap();
    }
    assert!(drifted(&dir, &list).is_empty());
    let loosened = list.replace("std::thread::sleep", "std::thread::yield_now");
    std::fs::write(dir.join("mcp").join("clippy.toml"), loosened).unwrap();
    std::fs::remove_file(dir.join("eval").join("clippy.toml")).unwrap();
    assert_eq!(drifted(&dir, &list), ["mcp", "eval"]);
}

#[test]
fn the_list_bans_the_outside_world() {
    // Goal: host sleeps, process spawns, std sockets and the temp dir are banned beside the
    // clocks, threads, environment and hash-ordered collections.
    let list = std::fs::read_to_string(engine().join("sim.clippy.toml")).unwrap();
    for path in [
        "std::time::Instant::now",
        "std::time::SystemTime::now",
        "std::thread::spawn",
        "std::thread::sleep",
        "std::process::Command",
        "std::net::TcpStream",
        "std::net::TcpListener",
        "std::net::UdpSocket",
        "std::env::var",
        "std::env::temp_dir",
        "std::collections::HashMap",
    ] {
        assert!(list.contains(&format!("path = \"{path}\"")), "{path}");
    }
}
