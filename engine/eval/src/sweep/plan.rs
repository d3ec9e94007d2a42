//! `simtape sweep plan`: the job file that runs one sweep on a scheduler, N shards then a
//! merge. It only writes text; the scheduler runs it unchanged.
//!
//! Every shard writes its report to `RESULTS/shards/shard-I.json` and the tapes of its failing
//! seeds to `RESULTS/tapes/<scenario>/seed-<N>.tape`; the merge job writes
//! `RESULTS/report.json` next to them. A shard that found failing seeds (simtape's exit 1) ends
//! well for the scheduler, so the merge still runs; a shard that could not run (exit 2 or a
//! signal) fails, and the merge never starts.

use std::path::{Path, PathBuf};

use crate::reproduce::{command_line, quote};
use crate::sweep::SeedRange;

/// What a plan runs: the same on every scheduler.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The simtape binary as the jobs will call it.
    pub simtape: String,
    /// The scenario files, as given (the reports name them so).
    pub scenarios: Vec<PathBuf>,
    /// The seeds every scenario runs at, over all shards.
    pub seeds: SeedRange,
    /// How many shards (array tasks, or indexed completions) split the seeds.
    pub shards: u64,
    /// Where the shards' reports, the tapes and the merged report go.
    pub results: PathBuf,
    /// The name of the jobs (`NAME` and `NAME-merge`).
    pub name: String,
}

/// The Kubernetes parts of a plan.
#[derive(Debug, Clone)]
pub struct K8s {
    /// The container image the jobs run, with `simtape` in it.
    pub image: String,
    /// The PersistentVolumeClaim (ReadWriteMany) mounted at the results directory.
    pub claim: String,
}

/// The variable a Kubernetes plan's shards carry the shard count in (an Indexed Job sets
/// only the index); `--shard auto` reads it.
pub const SHARD_COUNT_VAR: &str = "SIMTAPE_SHARD_COUNT";

/// The longest job name: a Kubernetes Job name is a DNS label of at most 63 characters, and
/// the merge job appends `-merge`.
pub const NAME_MAX: usize = 57;

/// A job name a scheduler would refuse (`--name`). Fatal to `sweep plan`, before any file
/// is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--name {name:?}: a job name is 1 to {NAME_MAX} lower-case letters, digits and '-', not starting or ending with '-'"
)]
pub struct JobNameError {
    /// The name refused.
    pub name: String,
}

/// Checks a job name: lower-case letters, digits and '-', starting and ending with a letter
/// or digit, at most [`NAME_MAX`] characters.
pub fn check_name(name: &str) -> Result<(), JobNameError> {
    let fits = !name.is_empty()
        && name.len() <= NAME_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if fits {
        Ok(())
    } else {
        Err(JobNameError {
            name: name.to_string(),
        })
    }
}

impl Sweep {
    fn path(&self, rest: &str) -> String {
        self.results.join(rest).display().to_string()
    }

    /// The shard's command, writing its report to `report_out` (a shell word).
    fn shard_command(&self, report_out: &str) -> String {
        let mut args = vec![self.simtape.clone(), "sweep".to_string()];
        args.extend(self.scenarios.iter().map(|p| p.display().to_string()));
        args.extend([
            "--seeds".to_string(),
            format!("{}..{}", self.seeds.start, self.seeds.end),
            "--shard".to_string(),
            "auto".to_string(),
            "--out".to_string(),
            self.path("tapes"),
        ]);
        // `report_out` holds a shell variable and comes already quoted, the variable outside
        // the quotes.
        format!("{} --report-out {report_out}", command_line(&args))
    }

    fn merge_command(&self) -> String {
        format!(
            "{} report merge {}/shard-*.json --report-out {}",
            quote(&self.simtape),
            quote(&self.path("shards")),
            quote(&self.path("report.json"))
        )
    }

    fn header(&self, scheduler: &str, comment: &str) -> String {
        let scenarios: Vec<String> = self
            .scenarios
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        format!(
            "{comment} A simtape sweep on {scheduler}, written by `simtape sweep plan`:\n\
             {comment} {} at seeds {}..{} in {} shard(s).\n\
             {comment} Results in {}: shards/shard-I.json (each shard's report), tapes/ (the tapes\n\
             {comment} of failing seeds), report.json (the merged report, written by the merge job).\n",
            scenarios.join(" "),
            self.seeds.start,
            self.seeds.end,
            self.shards,
            self.results.display()
        )
    }

    /// Returns the Slurm submit script: run with `bash FILE`, it submits the job array and the
    /// merge job (`--dependency=afterok` on the whole array) and prints both job ids. `cwd` is
    /// the directory relative paths are taken from.
    pub fn slurm(&self, cwd: &Path) -> String {
        let cwd = quote(&cwd.display().to_string());
        let logs = quote(&self.path("logs"));
        let shards = quote(&self.path("shards"));
        let last = self.shards - 1;
        let shard = self.shard_command(&format!("{shards}/shard-\"$SLURM_ARRAY_TASK_ID\".json"));
        let name = quote(&self.name);
        let merge_name = quote(&format!("{}-merge", self.name));
        format!(
            "#!/usr/bin/env bash\n{header}\
             # Submit it with `bash FILE` (from any directory): it prints the array's job id and the\n\
             # merge job's. A shard that found failing seeds still ends 0, so the merge runs.\n\
             set -euo pipefail\n\
             cd {cwd}\n\
             mkdir -p {logs} {shards}\n\
             array=$(sbatch --parsable --job-name={name} --chdir={cwd} --array=0-{last} \\\n    \
             --output={logs}/shard-%a.log <<'SHARD'\n\
             #!/bin/sh\n\
             {shard}\n\
             code=$?\n\
             # 1 = failing seeds found: the shard's report and tapes are written all the same.\n\
             if [ \"$code\" -le 1 ]; then exit 0; else exit \"$code\"; fi\n\
             SHARD\n\
             )\n\
             array=${{array%%;*}}\n\
             merge=$(sbatch --parsable --job-name={merge_name} --chdir={cwd} \\\n    \
             --dependency=afterok:\"$array\" --kill-on-invalid-dep=yes --output={logs}/merge.log <<'MERGE'\n\
             #!/bin/sh\n\
             {merge}\n\
             MERGE\n\
             )\n\
             echo \"array $array merge ${{merge%%;*}}\"\n",
            header = self.header("a Slurm job array", "#"),
            merge = self.merge_command(),
        )
    }

    /// Returns the Kubernetes manifest: an Indexed Job of the shards and a merge Job whose init
    /// container waits for every shard's report; both mount `k8s.claim` at the results
    /// directory. Apply it with `kubectl apply -f FILE`.
    pub fn k8s(&self, k8s: &K8s) -> String {
        let shards = self.path("shards");
        // Written under a temporary name and renamed, so the merge never reads half a report.
        let part = format!("{}/.shard-\"$JOB_COMPLETION_INDEX\".part", quote(&shards));
        let done = format!("{}/shard-\"$JOB_COMPLETION_INDEX\".json", quote(&shards));
        let shard = format!(
            "mkdir -p {q_shards} && {command}; code=$?; \
             if [ \"$code\" -gt 1 ]; then exit \"$code\"; fi; mv {part} {done}",
            q_shards = quote(&shards),
            command = self.shard_command(&part),
        );
        let wait = format!(
            "until [ \"$(ls {} 2>/dev/null | grep -c '^shard-.*\\.json$')\" -ge {} ]; do sleep 5; done",
            quote(&shards),
            self.shards
        );
        let json = |text: &str| serde_json::to_string(text).expect("strings serialize");
        let volume = format!(
            "          volumeMounts:\n            - name: results\n              mountPath: {}\n",
            json(&self.results.display().to_string())
        );
        let volumes = format!(
            "      volumes:\n        - name: results\n          persistentVolumeClaim:\n            claimName: {}\n",
            json(&k8s.claim)
        );
        let container = |name: &str, script: &str| {
            format!(
                "        - name: {name}\n          image: {}\n          command: [\"sh\", \"-c\"]\n          args:\n            - {}\n{volume}",
                json(&k8s.image),
                json(script)
            )
        };
        format!(
            "{header}\
             # Apply it with `kubectl apply -f FILE`. The claim {claim} must be ReadWriteMany (every\n\
             # pod mounts it at {results}); the image must hold simtape and the scenarios at the paths\n\
             # above, relative to its working directory. A shard that found failing seeds still ends 0.\n\
             apiVersion: batch/v1\n\
             kind: Job\n\
             metadata:\n  name: {name}\n\
             spec:\n  completionMode: Indexed\n  completions: {n}\n  parallelism: {n}\n  backoffLimit: {n}\n\
             \x20 template:\n    spec:\n      restartPolicy: Never\n      containers:\n\
             {shard_container}\
             \x20         env:\n            - name: {count_var}\n              value: \"{n}\"\n\
             {volumes}\
             ---\n\
             apiVersion: batch/v1\n\
             kind: Job\n\
             metadata:\n  name: {name}-merge\n\
             spec:\n  backoffLimit: 1\n\
             \x20 template:\n    spec:\n      restartPolicy: Never\n      initContainers:\n\
             {wait_container}\
             \x20     containers:\n\
             {merge_container}\
             {volumes}",
            header = self.header("Kubernetes (an Indexed Job)", "#"),
            claim = k8s.claim,
            results = self.results.display(),
            name = self.name,
            n = self.shards,
            count_var = SHARD_COUNT_VAR,
            shard_container = container("shard", &shard),
            wait_container = container("wait-for-shards", &wait),
            merge_container = container("merge", &self.merge_command()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep() -> Sweep {
        Sweep {
            simtape: "/opt/simtape".into(),
            scenarios: vec!["scenarios/race.toml".into(), "my scenarios/a.toml".into()],
            seeds: SeedRange { start: 0, end: 30 },
            shards: 3,
            results: "out".into(),
            name: "simtape-sweep".into(),
        }
    }

    #[test]
    fn the_slurm_script_chains_the_merge_on_the_whole_array() {
        // Goal: one array of N tasks with --shard auto, a merge job after it with afterok,
        // paths quoted for the shell.
        let script = sweep().slurm(Path::new("/work dir"));
        assert!(script.contains("--array=0-2 "), "{script}");
        assert!(
            script.contains("--dependency=afterok:\"$array\""),
            "{script}"
        );
        assert!(script.contains("cd '/work dir'\n"), "{script}");
        assert!(
            script.contains(
                "/opt/simtape sweep scenarios/race.toml 'my scenarios/a.toml' --seeds 0..30 \
                 --shard auto --out out/tapes --report-out out/shards/shard-\"$SLURM_ARRAY_TASK_ID\".json\n"
            ),
            "{script}"
        );
        assert!(
            script.contains(
                "/opt/simtape report merge out/shards/shard-*.json --report-out out/report.json\n"
            ),
            "{script}"
        );
    }

    #[test]
    fn job_names_are_dns_labels_with_room_for_the_merge_suffix() {
        // Goal: a name Kubernetes would refuse is refused here, before any file is written.
        assert!(check_name("simtape-sweep").is_ok());
        for bad in ["", "Sweep", "-a", "a-", "a_b", &"a".repeat(NAME_MAX + 1)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
