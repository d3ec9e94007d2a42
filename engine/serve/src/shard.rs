//! `--shard auto`: which shard this copy of a sweep is, read from the scheduler that started
//! it. The environment is the outside, so it is read here, in the gateway ([`from_env`]), and
//! nowhere in the simulation crates: the report records only the resolved `I/N`, so a shard's
//! report is the same whichever scheduler ran it. The CLI parses `--shard` with
//! [`parse_shard_arg`] and prints what [`from_env`] found or why it found nothing.
//!
//! The sources, each recognised by its index variable (docs/sweeps.md lists them):
//!
//! | source | index | count |
//! |---|---|---|
//! | Slurm job array | `SLURM_ARRAY_TASK_ID` | `SLURM_ARRAY_TASK_COUNT`, or `SLURM_ARRAY_TASK_MIN`..`MAX` |
//! | Kubernetes Indexed Job | `JOB_COMPLETION_INDEX` | `--shard auto/N` or `SIMTAPE_SHARD_COUNT` |
//! | GitLab CI `parallel:` | `CI_NODE_INDEX` (1-based) | `CI_NODE_TOTAL` |
//! | CircleCI `parallelism:` | `CIRCLE_NODE_INDEX` | `CIRCLE_NODE_TOTAL` |
//! | Buildkite `parallelism:` | `BUILDKITE_PARALLEL_JOB` | `BUILDKITE_PARALLEL_JOB_COUNT` |
//! | any other matrix (GitHub Actions) | `SIMTAPE_SHARD_INDEX` | `SIMTAPE_SHARD_COUNT` |
//!
//! Exactly one source may be present; two are refused (which one ran the job is a guess), and
//! so is none.

use std::fmt;

use simtape_eval::sweep::{parse_shard, Shard, SyntaxError};

/// What `--shard` was given: a fixed shard, or `auto` with an optional count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardArg {
    /// `I/N`.
    Fixed(Shard),
    /// `auto` (count `None`) or `auto/N`.
    Auto {
        /// The `N` of `auto/N`.
        count: Option<u64>,
    },
}

/// Parses `--shard`: `I/N`, `auto` or `auto/N` (N ≥ 1).
pub fn parse_shard_arg(text: &str) -> Result<ShardArg, SyntaxError> {
    let usage = || SyntaxError {
        expected: "I/N with 0 <= I < N (e.g. 0/4), auto, or auto/N",
        found: text.to_string(),
    };
    match text.strip_prefix("auto") {
        Some("") => Ok(ShardArg::Auto { count: None }),
        Some(rest) => {
            let count = rest.strip_prefix('/').ok_or_else(usage)?;
            let count: u64 = count.trim().parse().map_err(|_| usage())?;
            if count == 0 {
                return Err(usage());
            }
            Ok(ShardArg::Auto { count: Some(count) })
        }
        None => parse_shard(text).map(ShardArg::Fixed).map_err(|_| usage()),
    }
}

/// The variable that carries the count of a Kubernetes Indexed Job (which sets only the index)
/// and of the generic matrix source: the one `sweep plan --k8s` sets.
pub const COUNT_VAR: &str = simtape_eval::sweep::plan::SHARD_COUNT_VAR;

/// Where the count of a source comes from.
#[derive(Debug, Clone, Copy)]
enum CountFrom {
    /// A variable the scheduler sets.
    Var(&'static str),
    /// Slurm: `SLURM_ARRAY_TASK_COUNT`, or the span of `SLURM_ARRAY_TASK_MIN`..`MAX`.
    SlurmArray,
    /// Given once: `--shard auto/N` or [`COUNT_VAR`].
    Given,
}

/// One scheduler whose environment names a shard.
#[derive(Debug, Clone, Copy)]
struct Source {
    name: &'static str,
    index: &'static str,
    /// The value of the first shard's index (GitLab counts from 1).
    first: u64,
    count: CountFrom,
}

const SOURCES: [Source; 6] = [
    Source {
        name: "Slurm job array",
        index: "SLURM_ARRAY_TASK_ID",
        first: 0,
        count: CountFrom::SlurmArray,
    },
    Source {
        name: "Kubernetes Indexed Job",
        index: "JOB_COMPLETION_INDEX",
        first: 0,
        count: CountFrom::Given,
    },
    Source {
        name: "GitLab CI parallel job",
        index: "CI_NODE_INDEX",
        first: 1,
        count: CountFrom::Var("CI_NODE_TOTAL"),
    },
    Source {
        name: "CircleCI parallel job",
        index: "CIRCLE_NODE_INDEX",
        first: 0,
        count: CountFrom::Var("CIRCLE_NODE_TOTAL"),
    },
    Source {
        name: "Buildkite parallel job",
        index: "BUILDKITE_PARALLEL_JOB",
        first: 0,
        count: CountFrom::Var("BUILDKITE_PARALLEL_JOB_COUNT"),
    },
    Source {
        name: "CI matrix",
        index: "SIMTAPE_SHARD_INDEX",
        first: 0,
        count: CountFrom::Var(COUNT_VAR),
    },
];

/// A shard read from the environment, with what it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoShard {
    /// The shard this copy runs.
    pub shard: Shard,
    /// The source's name and every variable read, `NAME=value`, for the log line.
    pub read: String,
}

impl fmt::Display for AutoShard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "shard {}/{} from {}",
            self.shard.index, self.shard.count, self.read
        )
    }
}

/// Why `--shard auto` found no single shard: a usage error (the CLI exits 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AutoShardError {
    #[error(
        "--shard auto: no scheduler environment found (looked for {})",
        looked_for()
    )]
    /// No scheduler's index variable is set.
    Missing,
    /// More than one scheduler's index variable is set (their names).
    #[error("--shard auto: more than one scheduler environment is set ({0}); give --shard I/N")]
    Ambiguous(String),
    /// A scheduler's index is set but not its count.
    #[error("--shard auto: {source_name} sets {index} but not {missing}")]
    NoCount {
        /// The scheduler.
        source_name: &'static str,
        /// Its index variable.
        index: &'static str,
        /// What would have given the count.
        missing: String,
    },
    /// A variable that must be a number is not.
    #[error("--shard auto: {var}={value:?} is not a whole number")]
    NotANumber {
        /// The variable.
        var: String,
        /// Its value.
        value: String,
    },
    /// The count is given on the command line and in the environment.
    #[error("--shard auto: the shard count is given twice (--shard auto/{arg} and {COUNT_VAR}={var}); give it once")]
    CountTwice {
        /// The count of `--shard auto/N`.
        arg: u64,
        /// The count in the environment.
        var: u64,
    },
    /// The variables disagree, or the index is outside the count.
    #[error("--shard auto: {0}")]
    Inconsistent(String),
}

fn looked_for() -> String {
    SOURCES
        .iter()
        .map(|source| source.index)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Resolves `--shard auto` (`count` from `auto/N`) against this process's environment.
pub fn from_env(count: Option<u64>) -> Result<AutoShard, AutoShardError> {
    resolve(count, |name| std::env::var(name).ok())
}

/// Resolves `--shard auto` (`count` from `auto/N`) against an environment, `env(name)` being
/// the value of a variable when it is set.
pub fn resolve(
    count: Option<u64>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<AutoShard, AutoShardError> {
    let present: Vec<&Source> = SOURCES
        .iter()
        .filter(|source| env(source.index).is_some())
        .collect();
    let source = match present.as_slice() {
        [] => return Err(AutoShardError::Missing),
        [one] => *one,
        many => {
            let names = many
                .iter()
                .map(|source| format!("{} {}", source.name, source.index))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(AutoShardError::Ambiguous(names));
        }
    };
    let mut read = Vec::new();
    let mut number = |var: &str| -> Result<Option<u64>, AutoShardError> {
        let Some(value) = env(var) else {
            return Ok(None);
        };
        read.push(format!("{var}={value}"));
        value
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| AutoShardError::NotANumber {
                var: var.to_string(),
                value,
            })
    };
    let raw_index = number(source.index)?.expect("the source was found by its index");
    let no_count = |missing: &str| AutoShardError::NoCount {
        source_name: source.name,
        index: source.index,
        missing: missing.to_string(),
    };
    let (first, total) = match source.count {
        CountFrom::Var(var) => (source.first, number(var)?.ok_or_else(|| no_count(var))?),
        CountFrom::Given => match (count, number(COUNT_VAR)?) {
            (Some(arg), Some(var)) => return Err(AutoShardError::CountTwice { arg, var }),
            (Some(total), None) | (None, Some(total)) => (source.first, total),
            (None, None) => {
                return Err(no_count(&format!(
                    "a count (--shard auto/N or {COUNT_VAR})"
                )))
            }
        },
        CountFrom::SlurmArray => slurm_span(&mut number)?,
    };
    // A count on the command line must agree with the scheduler's own.
    if let (Some(arg), false) = (count, matches!(source.count, CountFrom::Given)) {
        if arg != total {
            return Err(AutoShardError::Inconsistent(format!(
                "--shard auto/{arg} but the {} has {total} shard(s)",
                source.name
            )));
        }
    }
    let described = format!("{} ({})", source.name, read.join(", "));
    let index = raw_index
        .checked_sub(first)
        .filter(|&index| index < total)
        .ok_or_else(|| {
            AutoShardError::Inconsistent(format!(
                "{} is outside {first}..{} ({described})",
                raw_index,
                first.saturating_add(total)
            ))
        })?;
    Ok(AutoShard {
        shard: Shard {
            index,
            count: total,
        },
        read: described,
    })
}

/// A Slurm array's first task id and task count: `SLURM_ARRAY_TASK_MIN` (0 when unset) and
/// `SLURM_ARRAY_TASK_COUNT`, or the span `MAX - MIN + 1`. An array with gaps or a step is
/// refused: its task ids are not the shards 0..N.
fn slurm_span(
    number: &mut impl FnMut(&str) -> Result<Option<u64>, AutoShardError>,
) -> Result<(u64, u64), AutoShardError> {
    let count = number("SLURM_ARRAY_TASK_COUNT")?;
    let min = number("SLURM_ARRAY_TASK_MIN")?;
    let max = number("SLURM_ARRAY_TASK_MAX")?;
    let step = number("SLURM_ARRAY_TASK_STEP")?;
    if step.is_some_and(|step| step != 1) {
        return Err(AutoShardError::Inconsistent(
            "the Slurm array has a step (SLURM_ARRAY_TASK_STEP); submit it as --array=0-N".into(),
        ));
    }
    let span = match (min, max) {
        (Some(min), Some(max)) if max >= min => Some(max - min + 1),
        (Some(min), Some(max)) => {
            return Err(AutoShardError::Inconsistent(format!(
                "SLURM_ARRAY_TASK_MAX={max} is below SLURM_ARRAY_TASK_MIN={min}"
            )))
        }
        _ => None,
    };
    let total = match (count, span) {
        (Some(count), Some(span)) if count != span => {
            return Err(AutoShardError::Inconsistent(format!(
                "the Slurm array has {count} task(s) over ids {}..={}: it has gaps; submit it as --array=0-N",
                min.unwrap_or(0),
                max.unwrap_or(0)
            )))
        }
        (Some(total), _) | (None, Some(total)) => total,
        (None, None) => {
            return Err(AutoShardError::NoCount {
                source_name: "Slurm job array",
                index: "SLURM_ARRAY_TASK_ID",
                missing: "SLURM_ARRAY_TASK_COUNT (or SLURM_ARRAY_TASK_MIN and _MAX)".into(),
            })
        }
    };
    Ok((min.unwrap_or(0), total))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn shard(index: u64, count: u64) -> Shard {
        Shard { index, count }
    }

    #[test]
    fn the_grammar_takes_fixed_auto_and_auto_with_a_count() {
        // Goal: `--shard` keeps I/N and adds auto and auto/N; nonsense is refused.
        assert_eq!(parse_shard_arg("1/3"), Ok(ShardArg::Fixed(shard(1, 3))));
        assert_eq!(parse_shard_arg("auto"), Ok(ShardArg::Auto { count: None }));
        assert_eq!(
            parse_shard_arg("auto/8"),
            Ok(ShardArg::Auto { count: Some(8) })
        );
        for bad in ["auto/0", "autox", "auto/", "3/3", "auto8"] {
            assert!(parse_shard_arg(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn slurm_arrays_by_count_or_by_min_and_max() {
        // Goal: a Slurm task finds its shard from the task id and the array's count or span,
        // and names what it read.
        let by_count = resolve(
            None,
            env(&[
                ("SLURM_ARRAY_TASK_ID", "2"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
            ]),
        )
        .unwrap();
        assert_eq!(by_count.shard, shard(2, 3));
        assert_eq!(
            by_count.to_string(),
            "shard 2/3 from Slurm job array (SLURM_ARRAY_TASK_ID=2, SLURM_ARRAY_TASK_COUNT=3)"
        );
        let by_span = resolve(
            None,
            env(&[
                ("SLURM_ARRAY_TASK_ID", "5"),
                ("SLURM_ARRAY_TASK_MIN", "4"),
                ("SLURM_ARRAY_TASK_MAX", "7"),
            ]),
        )
        .unwrap();
        assert_eq!(by_span.shard, shard(1, 4));
    }

    #[test]
    fn slurm_arrays_with_gaps_steps_or_no_count_are_refused() {
        // Goal: an array whose ids are not 0..N (gaps, a step) or that gives no count is a
        // usage error, never a wrong shard.
        let gaps = env(&[
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "3"),
        ]);
        assert!(matches!(
            resolve(None, gaps),
            Err(AutoShardError::Inconsistent(_))
        ));
        let step = env(&[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
        ]);
        assert!(resolve(None, step).is_err());
        let alone = env(&[("SLURM_ARRAY_TASK_ID", "0")]);
        assert!(matches!(
            resolve(None, alone),
            Err(AutoShardError::NoCount { .. })
        ));
        let mismatch = env(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ]);
        assert!(resolve(Some(4), mismatch).is_err());
    }

    #[test]
    fn kubernetes_takes_its_count_once_from_the_argument_or_the_environment() {
        // Goal: JOB_COMPLETION_INDEX needs a count given once: auto/N or SIMTAPE_SHARD_COUNT,
        // not neither and not both.
        let index = [("JOB_COMPLETION_INDEX", "7")];
        assert_eq!(resolve(Some(8), env(&index)).unwrap().shard, shard(7, 8));
        let with_var = env(&[("JOB_COMPLETION_INDEX", "7"), (COUNT_VAR, "8")]);
        assert_eq!(resolve(None, &with_var).unwrap().shard, shard(7, 8));
        assert_eq!(
            resolve(Some(8), &with_var),
            Err(AutoShardError::CountTwice { arg: 8, var: 8 })
        );
        assert!(matches!(
            resolve(None, env(&index)),
            Err(AutoShardError::NoCount { .. })
        ));
        assert!(resolve(Some(7), env(&index)).is_err(), "index 7 of 7");
    }

    #[test]
    fn ci_matrices_count_from_their_documented_base() {
        // Goal: GitLab's 1-based CI_NODE_INDEX and the generic 0-based variables map to 0..N.
        let gitlab = env(&[("CI_NODE_INDEX", "1"), ("CI_NODE_TOTAL", "4")]);
        assert_eq!(resolve(None, gitlab).unwrap().shard, shard(0, 4));
        let generic = env(&[("SIMTAPE_SHARD_INDEX", "3"), (COUNT_VAR, "4")]);
        assert_eq!(resolve(None, generic).unwrap().shard, shard(3, 4));
        let circle = env(&[("CIRCLE_NODE_INDEX", "0"), ("CIRCLE_NODE_TOTAL", "2")]);
        assert_eq!(resolve(None, circle).unwrap().shard, shard(0, 2));
    }

    #[test]
    fn missing_ambiguous_or_malformed_environments_are_refused() {
        // Goal: no source, two sources, or a value that is not a number are errors that name
        // the variables.
        let missing = resolve(None, env(&[])).unwrap_err();
        assert!(
            missing.to_string().contains("SLURM_ARRAY_TASK_ID"),
            "{missing}"
        );
        let two = resolve(
            None,
            env(&[
                ("SLURM_ARRAY_TASK_ID", "0"),
                ("SLURM_ARRAY_TASK_COUNT", "2"),
                ("JOB_COMPLETION_INDEX", "0"),
            ]),
        )
        .unwrap_err();
        assert!(
            two.to_string().contains("SLURM_ARRAY_TASK_ID")
                && two.to_string().contains("JOB_COMPLETION_INDEX"),
            "{two}"
        );
        let bad =
            resolve(None, env(&[("SIMTAPE_SHARD_INDEX", "x"), (COUNT_VAR, "2")])).unwrap_err();
        assert_eq!(
            bad,
            AutoShardError::NotANumber {
                var: "SIMTAPE_SHARD_INDEX".into(),
                value: "x".into()
            }
        );
    }
}
