//! A sweep on a real Slurm: a single-node cluster (munged, slurmctld, slurmd) started by the
//! test in a temporary directory, the job file of `simtape sweep plan --slurm` submitted
//! unchanged, and the merged report compared byte for byte with the one-machine sweep's.
//!
//! Slurm comes from Debian's `slurm-wlm` and `munge`, installed by
//! engine/cli/tests/peers/slurm/install.sh (run by .ci/run). The daemons need root. Without
//! them the test prints a skip notice, and fails under CI. The daemons are stopped by a guard's
//! `Drop`, so a failing assertion never leaves them running.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::clients::missing;
use crate::common::{files, repo, scratch, simtape};

const BINARIES: [&str; 8] = [
    "munged",
    "mungekey",
    "slurmctld",
    "slurmd",
    "sbatch",
    "squeue",
    "sinfo",
    "scancel",
];

/// Finds every binary the cluster needs (in PATH or /usr/sbin), or says what is missing.
fn find_binaries() -> Result<Vec<PathBuf>, String> {
    let path = std::env::var("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/bin".into()])
        .collect();
    BINARIES
        .iter()
        .map(|name| {
            dirs.iter()
                .map(|dir| dir.join(name))
                .find(|candidate| candidate.is_file())
                .ok_or_else(|| {
                    format!(
                        "Slurm test: {name} not found; install Slurm with \
                         `bash engine/cli/tests/peers/slurm/install.sh` (Debian slurm-wlm, munge; as root)"
                    )
                })
        })
        .collect()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running single-node cluster; dropping it cancels every job and stops the daemons.
struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    bins: Vec<PathBuf>,
    daemons: Vec<(String, Child)>,
}

impl Cluster {
    fn bin(&self, name: &str) -> &Path {
        let at = BINARIES.iter().position(|b| *b == name).unwrap();
        &self.bins[at]
    }

    /// A Slurm client command pointed at this cluster.
    fn client(&self, name: &str) -> Command {
        let mut command = Command::new(self.bin(name));
        command.env("SLURM_CONF", &self.conf);
        command
    }

    fn start(bins: Vec<PathBuf>) -> Cluster {
        // A short directory: the munge socket's path must fit a Unix socket address.
        let dir = std::env::temp_dir().join(format!("simtape-slurm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["munge", "state", "spool", "log"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let mut cluster = Cluster {
            conf: dir.join("slurm.conf"),
            dir,
            bins,
            daemons: Vec::new(),
        };
        let munge = cluster.dir.join("munge");
        set_mode(&munge, 0o700);
        let key = munge.join("munge.key");
        let made = Command::new(cluster.bin("mungekey"))
            .arg("--create")
            .arg(format!("--keyfile={}", key.display()))
            .arg("--force")
            .output()
            .unwrap();
        assert!(made.status.success(), "mungekey: {made:?}");
        set_mode(&key, 0o600);
        let socket = munge.join("sock");
        let mut munged = Command::new(cluster.bin("munged"));
        munged
            .arg("--foreground")
            .arg("--force")
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--pid-file={}", munge.join("pid").display()))
            .arg(format!("--log-file={}", munge.join("log").display()))
            .arg(format!("--seed-file={}", munge.join("seed").display()));
        cluster.spawn("munged", &mut munged);
        wait_for("the munge socket", Duration::from_secs(20), || {
            socket.exists()
        });
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap()
            .trim()
            .to_string();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let d = cluster.dir.display();
        let conf = format!(
            "ClusterName=simtape\n\
             SlurmctldHost={host}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             SlurmctldPort={ctld}\n\
             SlurmdPort={slurmd}\n\
             StateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\n\
             SlurmdLogFile={d}/log/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             MpiDefault=none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             ReturnToService=2\n\
             NodeName={host} CPUs={cpus} State=UNKNOWN\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            socket = socket.display(),
            ctld = free_port(),
            slurmd = free_port(),
        );
        std::fs::write(&cluster.conf, conf).unwrap();
        let mut ctld = Command::new(cluster.bin("slurmctld"));
        ctld.arg("-D").arg("-i").arg("-f").arg(&cluster.conf);
        cluster.spawn("slurmctld", &mut ctld);
        let mut slurmd = Command::new(cluster.bin("slurmd"));
        slurmd.arg("-D").arg("-f").arg(&cluster.conf);
        cluster.spawn("slurmd", &mut slurmd);
        let idle = || {
            cluster
                .client("sinfo")
                .args(["-h", "-o", "%t"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        };
        wait_for("the node to be idle", Duration::from_secs(60), idle);
        cluster
    }

    fn spawn(&mut self, name: &str, command: &mut Command) {
        let log = std::fs::File::create(self.dir.join("log").join(format!("{name}.out"))).unwrap();
        let child = command
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        self.daemons.push((name.to_string(), child));
    }

    /// The daemons' logs, for a failure message.
    fn logs(&self) -> String {
        let mut text = String::new();
        for name in ["slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"] {
            let log = std::fs::read_to_string(self.dir.join("log").join(name)).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            text += &format!("--- {name}\n");
            for line in tail.iter().rev() {
                text += line;
                text += "\n";
            }
        }
        text
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.client("scancel").args(["--user", "root"]).output();
        // Last started, first stopped: slurmd, slurmctld, then munged.
        while let Some((_, mut child)) = self.daemons.pop() {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether this process runs as root (the owner of `/proc/self` is the effective user).
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_planned_slurm_array_merges_into_the_one_machine_report() {
    // Goal: `sweep plan --slurm` output, submitted unchanged to a real Slurm, runs 3 shards
    // with `--shard auto` and a merge job after them; the merged report is byte-identical to
    // the one-machine sweep's, and the failing seeds' tapes lie next to it.
    let bins = match find_binaries() {
        Ok(bins) if is_root() => bins,
        Ok(_) => return missing("Slurm test: the daemons need root".into()),
        Err(why) => return missing(why),
    };
    let dir = scratch("slurm", "array");
    let scenarios: Vec<String> = ["race-edit.toml", "random-delays.toml"]
        .iter()
        .map(|name| repo().join("scenarios").join(name).display().to_string())
        .collect();
    let (single, on_slurm) = (dir.join("single"), dir.join("slurm"));
    std::fs::create_dir_all(&single).unwrap();
    std::fs::create_dir_all(&on_slurm).unwrap();
    // The one-machine sweep, with the tapes where the plan puts them (the report names them).
    let one = simtape()
        .current_dir(&single)
        .arg("sweep")
        .args(&scenarios)
        .args(["--seeds", "0..24", "--out", "sweep-results/tapes"])
        .args(["--report-out", "sweep-results/report.json"])
        .output()
        .unwrap();
    assert_eq!(
        one.status.code(),
        Some(1),
        "race-edit has failing seeds: {one:?}"
    );

    let planned = simtape()
        .current_dir(&on_slurm)
        .args(["sweep", "plan", "--slurm"])
        .args(&scenarios)
        .args(["--seeds", "0..24", "--shards", "3", "--out", "sweep.sh"])
        .output()
        .unwrap();
    assert!(planned.status.success(), "{planned:?}");

    let cluster = Cluster::start(bins);
    let submitted = Command::new("bash")
        .arg(on_slurm.join("sweep.sh"))
        .env("SLURM_CONF", &cluster.conf)
        .env_remove("SIMTAPE_SHARD_INDEX")
        .output()
        .unwrap();
    assert!(
        submitted.status.success(),
        "{submitted:?}\n{}",
        cluster.logs()
    );
    let ids = String::from_utf8_lossy(&submitted.stdout);
    assert!(ids.starts_with("array "), "{ids}");
    let queued = || {
        cluster
            .client("squeue")
            .args(["-h", "-o", "%i %T"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(300);
    while !queued().is_empty() {
        assert!(
            Instant::now() < deadline,
            "jobs still queued: {}\n{}",
            queued(),
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let results = on_slurm.join("sweep-results");
    let logs: String = (0..3)
        .map(|i| format!("shard-{i}.log"))
        .chain(["merge.log".to_string()])
        .map(|name| {
            let log = std::fs::read_to_string(results.join("logs").join(&name)).unwrap_or_default();
            format!("--- {name}\n{log}")
        })
        .collect();
    assert!(
        logs.contains("sweep: shard 2/3 from Slurm job array (SLURM_ARRAY_TASK_ID=2"),
        "{logs}"
    );
    let merged = std::fs::read(results.join("report.json"))
        .unwrap_or_else(|e| panic!("no merged report ({e})\n{logs}\n{}", cluster.logs()));
    drop(cluster);
    let expected = std::fs::read(single.join("sweep-results/report.json")).unwrap();
    assert!(merged == expected, "merged report differs\n{logs}");
    // The failure database is left out: shards running at once may each write an entry
    // (whole, never torn), the last one's seeds winning (docs/failures.md).
    let without_db = |dir: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        files(dir)
            .into_iter()
            .filter(|(path, _)| !path.starts_with("failures.db"))
            .collect()
    };
    assert_eq!(
        without_db(&results.join("tapes")),
        without_db(&single.join("sweep-results/tapes")),
        "the failing seeds' tapes"
    );
    assert!(!files(&results.join("tapes")).is_empty());
}
