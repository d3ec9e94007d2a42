//! The agent sandbox's cost on a trivial program: `/bin/true` started the way simtape starts
//! an agent program, in its sandbox (namespaces, the view over a project, loopback and its
//! listeners, the seccomp watch; then every process ended and the namespaces gone) and as a
//! plain child on the host, side by side in alternating order. The figure is the whole of it:
//! setup, the run, teardown, as a caller waits for it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use simtape::cap::net::Network;
use simtape_serve::sandbox::{self, Job, JobExit, Sandbox, SandboxSpec};

/// The most a trivial program's sandboxed run may take, setup and teardown included, in ms.
pub const TRIVIAL_MS_MAX: f64 = 20.0;

/// One sandboxed run of `/bin/true` over `project`.
pub fn sandboxed(project: &Path) -> Result<Duration, String> {
    let spec = SandboxSpec {
        project: Some(project.to_path_buf()),
        project_at: PathBuf::from(sandbox::PROJECT_DIR),
        read_only: false,
        expose: Vec::new(),
        network: Network::deny(),
        jobs: vec![Job {
            program: PathBuf::from("/bin/true"),
            args: Vec::new(),
            env: sandbox::base_env(&[]),
            cwd: PathBuf::from(sandbox::PROJECT_DIR),
            stdin: None,
        }],
    };
    let started = Instant::now();
    let mut sandbox = Sandbox::start(&spec).map_err(|e| e.to_string())?;
    let exit = smol::block_on(async {
        sandbox.start_job(0).await.map_err(|e| e.to_string())?;
        Ok::<_, String>(sandbox.wait_job(0).await)
    })?;
    drop(sandbox);
    let took = started.elapsed();
    match exit {
        JobExit::Code(0) => Ok(took),
        other => Err(format!("/bin/true in the sandbox ended {other:?}")),
    }
}

/// One plain run of `/bin/true` in `project`.
pub fn plain(project: &Path) -> Result<Duration, String> {
    let started = Instant::now();
    let status = std::process::Command::new("/bin/true")
        .current_dir(project)
        .status()
        .map_err(|e| e.to_string())?;
    let took = started.elapsed();
    match status.success() {
        true => Ok(took),
        false => Err(format!("/bin/true ended {status}")),
    }
}

/// The medians of `runs` runs each way, in ms: (sandboxed, plain).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Trivial {
    /// Runs each way.
    pub runs: usize,
    /// The sandboxed run's median, ms.
    pub sandboxed_ms: f64,
    /// The plain run's median, ms.
    pub plain_ms: f64,
}

/// Measures `runs` runs each way over a small project, alternating which goes first.
pub fn measure(runs: usize) -> Result<Trivial, String> {
    let project =
        std::env::temp_dir().join(format!("simtape-bench-sandbox-{}", std::process::id()));
    std::fs::create_dir_all(&project).map_err(|e| e.to_string())?;
    std::fs::write(project.join("readme.txt"), "a project\n").map_err(|e| e.to_string())?;
    // Warm up: the binaries and the system directories in the page cache.
    sandboxed(&project)?;
    plain(&project)?;
    let (mut boxed, mut bare) = (Vec::new(), Vec::new());
    for run in 0..runs {
        if run % 2 == 0 {
            boxed.push(sandboxed(&project)?);
            bare.push(plain(&project)?);
        } else {
            bare.push(plain(&project)?);
            boxed.push(sandboxed(&project)?);
        }
    }
    let _ = std::fs::remove_dir_all(&project);
    Ok(Trivial {
        runs,
        sandboxed_ms: median_ms(&mut boxed),
        plain_ms: median_ms(&mut bare),
    })
}

fn median_ms(times: &mut [Duration]) -> f64 {
    times.sort();
    times
        .get(times.len() / 2)
        .map_or(f64::INFINITY, |t| t.as_secs_f64() * 1000.0)
}

/// Renders the figures as a Markdown table.
pub fn table(trivial: &Trivial) -> String {
    format!(
        "| /bin/true | runs | median (setup + run + teardown) |\n|---|---|---|\n| in the sandbox | {} | {:.2} ms |\n| plain child | {} | {:.2} ms |\n",
        trivial.runs, trivial.sandboxed_ms, trivial.runs, trivial.plain_ms
    )
}

/// The bar: a trivial program's sandboxed run under [`TRIVIAL_MS_MAX`].
pub fn bar(trivial: &Trivial) -> crate::report::Bar {
    crate::report::Bar {
        label: format!("a trivial program in the sandbox: < {TRIVIAL_MS_MAX} ms"),
        measured: Some(trivial.sandboxed_ms),
        measured_cpu: None,
        pass: trivial.sandboxed_ms < TRIVIAL_MS_MAX,
    }
}
