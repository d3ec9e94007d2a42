//! The filesystem overlay capability: operations, layering, escapes, faults, diff and tape.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};

use simtape::cap::fs::{FileKind, FsActor, FsError, FsFaults, FsHandle, FsLatency, FsStat};
use simtape::rng::Ratio;
use simtape::tape::sha256_hex;
use simtape::Sim;

/// Returns an empty directory for one test under the cargo target's temp dir.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cap_fs")
        .join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Plants a small project tree in `root` and returns `root`.
fn project(name: &str) -> PathBuf {
    let root = fresh_dir(name).join("root");
    for (path, text) in [
        ("README.md", "hello\nworld\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("src/lib.rs", "pub fn f() {}\n"),
        ("docs/guide.md", "# Guide\n"),
        ("docs/deep/notes.txt", "deep\n"),
    ] {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    root
}

/// Runs `pipeline` against `actor` and returns its output, the final actor and the tape.
fn run_fs<T, Fut>(
    actor: FsActor,
    seed: u64,
    pipeline: impl FnOnce(FsHandle) -> Fut,
) -> (T, FsActor, Vec<u8>, u64)
where
    T: 'static,
    Fut: Future<Output = T> + 'static,
{
    let mut builder = Sim::builder();
    builder.seed(seed).tape_in_memory();
    let fs = builder.actor("fs", actor);
    let mut report = builder
        .build()
        .unwrap()
        .run(move |_host| pipeline(FsHandle::new(fs)))
        .unwrap();
    let tape = report.summary.tape.take().and_then(|t| t.memory).unwrap();
    let actor = report.actors.take(fs).unwrap();
    (report.output, actor, tape, report.summary.end_ns)
}

/// Hashes every file (and the text of every symlink) under `root`, by relative path.
fn hash_tree(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(name, format!("link:{}", target.display()));
            } else if meta.is_dir() {
                out.insert(name, "dir".into());
                walk(root, &path, out);
            } else {
                out.insert(name, sha256_hex(&std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn not_found(path: &str) -> FsError {
    FsError::NotFound { path: path.into() }
}

#[test]
fn every_operation_works_through_a_run() {
    // Goal: each request kind does what it says when sent through a real simulation.
    let root = project("every_operation");
    let (_, actor, _, end_ns) = run_fs(FsActor::new(&root).unwrap(), 1, |fs| async move {
        assert_eq!(fs.read("README.md").await.unwrap(), b"hello\nworld\n");
        fs.write("new.txt", "fresh").await.unwrap();
        assert_eq!(fs.read("new.txt").await.unwrap(), b"fresh");
        fs.append("README.md", "again\n").await.unwrap();
        assert_eq!(
            fs.read("README.md").await.unwrap(),
            b"hello\nworld\nagain\n"
        );
        fs.append("log.txt", "1").await.unwrap();
        assert_eq!(fs.read("log.txt").await.unwrap(), b"1");
        let stat = fs.stat("README.md").await.unwrap();
        assert_eq!(
            stat,
            FsStat {
                kind: FileKind::File,
                size: 18
            }
        );
        assert_eq!(fs.stat("src").await.unwrap().kind, FileKind::Dir);
        fs.create_dir("out").await.unwrap();
        assert_eq!(fs.list("out").await.unwrap(), Vec::<String>::new());
        fs.rename("new.txt", "out/moved.txt").await.unwrap();
        assert_eq!(fs.read("out/moved.txt").await.unwrap(), b"fresh");
        assert_eq!(fs.read("new.txt").await, Err(not_found("new.txt")));
        fs.remove("src/lib.rs").await.unwrap();
        assert_eq!(fs.list("src").await.unwrap(), ["main.rs"]);
        fs.remove_dir("docs").await.unwrap();
        assert_eq!(
            fs.list("").await.unwrap(),
            ["README.md", "log.txt", "out", "src"]
        );
        // Errors are named, not panics.
        assert_eq!(fs.read("missing").await, Err(not_found("missing")));
        assert_eq!(
            fs.read("src").await,
            Err(FsError::IsADirectory { path: "src".into() })
        );
        assert_eq!(
            fs.create_dir("src").await,
            Err(FsError::AlreadyExists { path: "src".into() })
        );
        assert_eq!(
            fs.write("nowhere/x", "x").await,
            Err(not_found("nowhere/x"))
        );
        assert_eq!(
            fs.write("README.md/x", "x").await,
            Err(FsError::NotADirectory {
                path: "README.md/x".into()
            })
        );
        assert_eq!(
            fs.remove("src").await,
            Err(FsError::IsADirectory { path: "src".into() })
        );
        assert_eq!(
            fs.remove_dir("README.md").await,
            Err(FsError::NotADirectory {
                path: "README.md".into()
            })
        );
    });
    assert!(end_ns > 0, "every operation takes virtual time");
    assert_eq!(actor.overlay().read("out/moved.txt").unwrap(), b"fresh");
}

#[test]
fn listing_merges_both_layers_and_hides_whiteouts() {
    // Goal: a listing is the sorted union of real and new names, minus deleted ones.
    let root = project("listing_merge");
    let (names, ..) = run_fs(FsActor::new(&root).unwrap(), 1, |fs| async move {
        fs.write("src/zeta.rs", "z").await.unwrap();
        fs.write("src/alpha.rs", "a").await.unwrap();
        fs.remove("src/lib.rs").await.unwrap();
        let after_delete = fs.list("src").await.unwrap();
        fs.write("src/lib.rs", "back").await.unwrap();
        (after_delete, fs.list("src").await.unwrap())
    });
    assert_eq!(names.0, ["alpha.rs", "main.rs", "zeta.rs"]);
    assert_eq!(names.1, ["alpha.rs", "lib.rs", "main.rs", "zeta.rs"]);
}

#[test]
fn deleting_a_directory_masks_its_children() {
    // Goal: after rmdir, nothing below shows through, even when the directory is made again.
    let root = project("dir_delete_masks");
    let (_, actor, ..) = run_fs(FsActor::new(&root).unwrap(), 1, |fs| async move {
        fs.remove_dir("docs").await.unwrap();
        assert_eq!(
            fs.read("docs/guide.md").await,
            Err(not_found("docs/guide.md"))
        );
        assert_eq!(fs.stat("docs/deep").await, Err(not_found("docs/deep")));
        assert_eq!(fs.list("docs").await, Err(not_found("docs")));
        assert_eq!(fs.list("").await.unwrap(), ["README.md", "src"]);
        fs.create_dir("docs").await.unwrap();
        assert_eq!(fs.list("docs").await.unwrap(), Vec::<String>::new());
        assert_eq!(
            fs.read("docs/guide.md").await,
            Err(not_found("docs/guide.md"))
        );
    });
    let diff = actor.diff().unwrap();
    let deleted: Vec<_> = diff.deleted.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(deleted, ["docs/deep/notes.txt", "docs/guide.md"]);
}

#[test]
fn rename_moves_files_and_directories() {
    // Goal: rename carries a file or a whole merged subtree, and refuses impossible moves.
    let root = project("rename");
    run_fs(FsActor::new(&root).unwrap(), 1, |fs| async move {
        fs.write("docs/deep/extra.txt", "x").await.unwrap();
        fs.rename("docs", "manual").await.unwrap();
        assert_eq!(fs.list("manual").await.unwrap(), ["deep", "guide.md"]);
        assert_eq!(
            fs.list("manual/deep").await.unwrap(),
            ["extra.txt", "notes.txt"]
        );
        assert_eq!(fs.read("manual/deep/notes.txt").await.unwrap(), b"deep\n");
        assert_eq!(fs.stat("docs").await, Err(not_found("docs")));
        fs.rename("README.md", "src/README.md").await.unwrap();
        assert_eq!(fs.read("src/README.md").await.unwrap(), b"hello\nworld\n");
        // A file replaces a file.
        fs.rename("src/README.md", "src/main.rs").await.unwrap();
        assert_eq!(fs.list("src").await.unwrap(), ["lib.rs", "main.rs"]);
        assert_eq!(
            fs.rename("manual", "src").await,
            Err(FsError::NotEmpty { path: "src".into() })
        );
        assert!(matches!(
            fs.rename("manual", "manual/deep/inner").await,
            Err(FsError::InvalidPath { .. })
        ));
        assert_eq!(
            fs.rename("src/lib.rs", "manual").await,
            Err(FsError::IsADirectory {
                path: "manual".into()
            })
        );
        assert_eq!(fs.rename("gone", "x").await, Err(not_found("gone")));
    });
}

#[test]
fn the_real_directory_is_never_modified() {
    // Goal: a run that writes, appends, deletes and renames leaves every real byte as it was.
    let root = project("real_untouched");
    let before = hash_tree(&root);
    let (_, actor, ..) = run_fs(FsActor::new(&root).unwrap(), 1, |fs| async move {
        fs.write("README.md", "overwritten").await.unwrap();
        fs.append("src/main.rs", "// more\n").await.unwrap();
        fs.write("brand/new.txt", "x").await.unwrap_err();
        fs.create_dir("brand").await.unwrap();
        fs.write("brand/new.txt", "x").await.unwrap();
        fs.remove("src/lib.rs").await.unwrap();
        fs.rename("docs", "moved").await.unwrap();
        fs.remove_dir("moved/deep").await.unwrap();
    });
    assert_eq!(hash_tree(&root), before);
    assert!(!actor.diff().unwrap().is_empty());
}

#[cfg(unix)]
#[test]
fn every_escape_is_refused_with_a_named_error() {
    // Goal: `..`, outside absolute paths and outward symlinks fail as Escape; inward links work.
    let base = fresh_dir("escapes");
    let (root, outside) = (base.join("root"), base.join("outside"));
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    std::fs::write(root.join("sub/inside.txt"), "inside").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("out_abs")).unwrap();
    std::os::unix::fs::symlink("../outside/secret.txt", root.join("out_rel")).unwrap();
    std::os::unix::fs::symlink("sub/inside.txt", root.join("in_link")).unwrap();
    std::os::unix::fs::symlink("../sub", root.join("sub/up_and_back")).unwrap();
    std::os::unix::fs::symlink("loop_b", root.join("loop_a")).unwrap();
    std::os::unix::fs::symlink("loop_a", root.join("loop_b")).unwrap();
    let before = hash_tree(&base);
    let inside_abs = root.join("sub/inside.txt").to_string_lossy().into_owned();
    let outside_abs = outside.join("secret.txt").to_string_lossy().into_owned();
    let outside_text = outside.to_string_lossy().into_owned();
    run_fs(FsActor::new(&root).unwrap(), 1, move |fs| async move {
        fn escape<T>(path: &str, resolved: Option<&str>) -> Result<T, FsError> {
            Err(FsError::Escape {
                path: path.into(),
                resolved: resolved.map(str::to_string),
            })
        }
        assert_eq!(
            fs.read("../outside/secret.txt").await,
            escape("../outside/secret.txt", None)
        );
        assert_eq!(fs.read("sub/../../x").await, escape("sub/../../x", None));
        assert_eq!(
            fs.write("../planted", "x").await,
            escape("../planted", None)
        );
        assert_eq!(fs.read(&outside_abs).await, escape(&outside_abs, None));
        assert_eq!(fs.read("/etc/passwd").await, escape("/etc/passwd", None));
        assert_eq!(
            fs.read("out_abs/secret.txt").await,
            escape("out_abs/secret.txt", Some(&outside_text))
        );
        assert_eq!(
            fs.write("out_abs/planted.txt", "x").await,
            escape("out_abs/planted.txt", Some(&outside_text))
        );
        assert_eq!(
            fs.read("out_rel").await,
            escape("out_rel", Some("../outside/secret.txt"))
        );
        assert_eq!(
            fs.read("loop_a").await,
            Err(FsError::SymlinkLoop {
                path: "loop_a".into()
            })
        );
        // Allowed: a link that stays inside, `..` that stays inside, an absolute inside path.
        assert_eq!(fs.read("in_link").await.unwrap(), b"inside");
        assert_eq!(
            fs.read("sub/up_and_back/inside.txt").await.unwrap(),
            b"inside"
        );
        assert_eq!(fs.read("sub/./../sub/inside.txt").await.unwrap(), b"inside");
        assert_eq!(fs.read(&inside_abs).await.unwrap(), b"inside");
        fs.write("in_link", "changed").await.unwrap();
        assert_eq!(fs.read("sub/inside.txt").await.unwrap(), b"changed");
    });
    assert_eq!(hash_tree(&base), before, "no escape wrote anything");
}

/// Writes 32 small files and returns which attempts failed, by error kind.
async fn thirty_two_writes(fs: FsHandle) -> Vec<&'static str> {
    let mut outcomes = Vec::new();
    for i in 0..32 {
        outcomes.push(match fs.write(&format!("f{i}.txt"), "0123456789").await {
            Ok(()) => "ok",
            Err(FsError::NoSpace { .. }) => "enospc",
            Err(FsError::Io { .. }) => "eio",
            Err(FsError::PartialWrite { .. }) => "partial",
            Err(other) => panic!("unexpected {other}"),
        });
    }
    outcomes
}

#[test]
fn faults_always_and_never() {
    // Goal: a ratio of 1/1 fails every operation the fault applies to; 0 fails none.
    let root = project("faults_always");
    let never = FsActor::new(&root).unwrap();
    let (outcomes, ..) = run_fs(never, 1, thirty_two_writes);
    assert!(outcomes.iter().all(|o| *o == "ok"));

    let enospc = FsFaults {
        enospc: Ratio::ONE,
        ..FsFaults::default()
    };
    let actor = FsActor::new(&root).unwrap().with_faults(enospc);
    let (read, actor, ..) = run_fs(actor, 1, |fs| async move {
        let write = fs.write("a.txt", "x").await;
        assert_eq!(
            write,
            Err(FsError::NoSpace {
                path: "a.txt".into()
            })
        );
        assert_eq!(
            fs.create_dir("d").await,
            Err(FsError::NoSpace { path: "d".into() })
        );
        fs.read("a.txt").await
    });
    assert_eq!(read, Err(not_found("a.txt")), "nothing lands under ENOSPC");
    assert!(actor.diff().unwrap().is_empty());

    let eio = FsFaults {
        eio: Ratio::ONE,
        ..FsFaults::default()
    };
    let actor = FsActor::new(&root).unwrap().with_faults(eio);
    let (read, ..) = run_fs(actor, 1, |fs| async move { fs.read("README.md").await });
    assert_eq!(
        read,
        Err(FsError::Io {
            path: "README.md".into(),
            detail: "injected EIO".into()
        })
    );
}

#[test]
fn a_partial_write_lands_a_prefix() {
    // Goal: under a partial-write fault a strict prefix lands and the error says how much.
    let root = project("partial_write");
    let faults = FsFaults {
        partial_write: Ratio::ONE,
        ..FsFaults::default()
    };
    let actor = FsActor::new(&root).unwrap().with_faults(faults);
    let content: Vec<u8> = (0..200u8).collect();
    let expected = content.clone();
    let ((error, landed), ..) = run_fs(actor, 5, |fs| async move {
        let error = fs.write("blob.bin", content).await.unwrap_err();
        (error, fs.read("blob.bin").await.unwrap())
    });
    let FsError::PartialWrite {
        path,
        written,
        requested,
    } = error
    else {
        panic!("expected a partial write, got {error}");
    };
    assert_eq!((path.as_str(), requested), ("blob.bin", 200));
    assert!(written < 200);
    assert_eq!(landed, expected[..written as usize]);
}

#[test]
fn seeded_faults_repeat_per_seed_and_vary_across_seeds() {
    // Goal: a fractional fault ratio gives the same outcomes for a seed and others for others.
    let root = project("faults_seeded");
    let half = Ratio::new(1, 4).unwrap();
    let faults = FsFaults {
        enospc: half,
        eio: half,
        partial_write: half,
    };
    let actor = FsActor::new(&root).unwrap().with_faults(faults);
    let outcomes = |seed| run_fs(actor.clone(), seed, thirty_two_writes).0;
    let first = outcomes(11);
    assert_eq!(first, outcomes(11));
    assert!(first.contains(&"ok") && first.iter().any(|o| *o != "ok"));
    assert!((12..20).any(|seed| outcomes(seed) != first));
}

#[test]
fn latency_follows_the_documented_model() {
    // Goal: without jitter, a write's virtual latency is base + per-KiB × started KiB.
    let root = project("latency");
    let latency = FsLatency {
        base_ns: 1_000,
        per_kib_ns: 100,
        jitter_ns: 0,
    };
    let actor = FsActor::new(&root).unwrap().with_latency(latency);
    let (_, _, _, end_ns) = run_fs(actor, 1, |fs| async move {
        fs.write("a.bin", vec![7u8; 2049]).await.unwrap();
    });
    assert_eq!(end_ns, 1_000 + 3 * 100);
}

#[test]
fn the_diff_of_a_small_edit() {
    // Goal: the structured diff holds exact bytes and the unified rendering is git-style.
    let root = project("diff_small_edit");
    std::fs::write(root.join("logo.bin"), [0u8, 1, 2]).unwrap();
    let (_, actor, ..) = run_fs(FsActor::new(&root).unwrap(), 1, |fs| async move {
        fs.write("README.md", "hello\nthere\n").await.unwrap();
        fs.write("new.txt", "x\n").await.unwrap();
        fs.write("same.txt", "s").await.unwrap();
        fs.remove("same.txt").await.unwrap();
        fs.write("src/main.rs", "fn main() {}\n").await.unwrap(); // rewritten unchanged
        fs.remove("src/lib.rs").await.unwrap();
        fs.write("logo.bin", vec![0u8, 9]).await.unwrap();
    });
    let diff = actor.diff().unwrap();
    assert_eq!(diff.added.len(), 1);
    assert_eq!(
        (diff.added[0].path.as_str(), &diff.added[0].bytes[..]),
        ("new.txt", &b"x\n"[..])
    );
    let modified: Vec<_> = diff.modified.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(modified, ["README.md", "logo.bin"]);
    assert_eq!(diff.modified[0].before, b"hello\nworld\n");
    assert_eq!(diff.modified[0].after, b"hello\nthere\n");
    assert_eq!(diff.deleted.len(), 1);
    assert_eq!(diff.deleted[0].bytes, b"pub fn f() {}\n");
    let expected = "\
diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -1,2 +1,2 @@
 hello
-world
+there
diff --git a/logo.bin b/logo.bin
Binary files a/logo.bin and b/logo.bin differ
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+x
diff --git a/src/lib.rs b/src/lib.rs
deleted file mode 100644
--- a/src/lib.rs
+++ /dev/null
@@ -1 +0,0 @@
-pub fn f() {}
";
    assert_eq!(diff.unified(), expected);
    let json = serde_json::to_value(&diff).unwrap();
    assert_eq!(json["added"][0]["path"], "new.txt");
    let out = fresh_dir("diff_small_edit_out").join("run.diff");
    diff.write_to(&out).unwrap();
    assert_eq!(std::fs::read_to_string(out).unwrap(), expected);
}

#[test]
fn tape_records_carry_path_size_and_hash_not_content() {
    // Goal: a large write costs the tape its path, size and hash, never the bytes.
    let root = project("tape_compact");
    let content: Vec<u8> = (0..256 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
    let hash = sha256_hex(&content);
    let written = content.clone();
    let (read_back, _, tape, _) = run_fs(FsActor::new(&root).unwrap(), 1, |fs| async move {
        fs.write("big/../big.bin", written).await.unwrap();
        fs.read("big.bin").await.unwrap()
    });
    assert_eq!(read_back, content, "the pipeline still gets the bytes");
    assert!(tape.len() < 4096, "tape is {} bytes", tape.len());
    let contains = |needle: &[u8]| tape.windows(needle.len()).any(|w| w == needle);
    assert!(contains(hash.as_bytes()), "the content hash is on the tape");
    assert!(contains(b"big/../big.bin"), "the path is on the tape");
    assert!(
        !contains(&content[1000..1064]),
        "content bytes are not on the tape"
    );
}
