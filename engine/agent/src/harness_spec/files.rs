//! The harness's state: files in the run's fs overlay, so the agent reads and writes them
//! with its ordinary tools and the fs diff shows them. Nothing else survives a session.
//!
//! | file                         | what                                                     |
//! |------------------------------|----------------------------------------------------------|
//! | `.harness/manifest.json`     | the session manifest: version, objective, mode, features |
//! | `feature_list.json`          | the features, each with `passes`                         |
//! | `progress.log`               | one line per session, append-only                        |
//! | `.harness/checkpoints.ndjson`| one checkpoint per session that ended cleanly            |
//! | `.harness/validations.ndjson`| one record per validation of a feature                   |

use serde::{Deserialize, Serialize};
use simtape::cap::fs::{FsError, FsHandle};

use super::policy::{Feature, HarnessMode};

/// The manifest's path.
pub const MANIFEST: &str = ".harness/manifest.json";
/// The feature list's path.
pub const FEATURE_LIST: &str = "feature_list.json";
/// The progress log's path.
pub const PROGRESS: &str = "progress.log";
/// The checkpoints' path.
pub const CHECKPOINTS: &str = ".harness/checkpoints.ndjson";
/// The validation records' path.
pub const VALIDATIONS: &str = ".harness/validations.ndjson";
/// The manifest's format version.
pub const MANIFEST_VERSION: u32 = 1;

/// The session manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_VERSION`].
    pub version: u32,
    /// The objective: the agent's task.
    pub objective: String,
    /// The run policy's mode.
    pub mode: HarnessMode,
    /// The feature ids, in file order.
    pub features: Vec<String>,
}

/// One entry of `feature_list.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureEntry {
    /// The feature's id.
    pub id: String,
    /// What it is.
    pub description: String,
    /// Lower first.
    pub priority: u32,
    /// Whether completion needs it.
    pub required: bool,
    /// Whether it is marked passing.
    pub passes: bool,
}

/// `feature_list.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureList {
    /// The features, in file order.
    pub features: Vec<FeatureEntry>,
}

impl FeatureList {
    /// The list of `features`, none passing.
    pub fn fresh(features: &[Feature]) -> FeatureList {
        FeatureList {
            features: features
                .iter()
                .map(|f| FeatureEntry {
                    id: f.id.clone(),
                    description: f.description.clone(),
                    priority: f.priority,
                    required: f.required,
                    passes: false,
                })
                .collect(),
        }
    }

    /// Marks `id` passing.
    pub fn mark(&mut self, id: &str) {
        if let Some(entry) = self.features.iter_mut().find(|e| e.id == id) {
            entry.passes = true;
        }
    }

    /// The ids marked passing, in file order.
    pub fn passing(&self) -> impl Iterator<Item = &str> {
        self.features
            .iter()
            .filter(|e| e.passes)
            .map(|e| e.id.as_str())
    }

    /// Marks passing exactly the features in `passing` (a checkpoint's), the rest pending.
    pub fn restore(&mut self, passing: &[String]) {
        for entry in &mut self.features {
            entry.passes = passing.contains(&entry.id);
        }
    }

    /// Whether every required feature passes: the completion gate.
    pub fn complete(&self) -> bool {
        self.features
            .iter()
            .filter(|e| e.required)
            .all(|e| e.passes)
    }
}

/// A session's clean end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The session (0 is the initializer).
    pub session: u32,
    /// The features it took on.
    pub features: Vec<String>,
    /// The features passing when it ended: what a session after a crash resumes from.
    #[serde(default)]
    pub passing: Vec<String>,
    /// `succeeded` or `failed`.
    pub status: String,
    /// What happened.
    pub note: String,
}

/// One validation of a feature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validation {
    /// The session.
    pub session: u32,
    /// The feature.
    pub feature: String,
    /// Whether it held.
    pub held: bool,
    /// What the validator saw.
    pub saw: String,
}

/// A state file that cannot be read as the harness wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The fs actor refused.
    #[error("{path}: {error}")]
    Fs {
        /// The file.
        path: &'static str,
        /// Why.
        error: FsError,
    },
    /// The file is not what the harness wrote (the agent may have changed it).
    #[error("{path}: not the harness's format: {detail}")]
    Format {
        /// The file.
        path: &'static str,
        /// What is wrong.
        detail: String,
    },
}

/// Reads `path`; `None` when it does not exist.
pub async fn read(fs: &FsHandle, path: &'static str) -> Result<Option<Vec<u8>>, StateError> {
    match fs.read(path).await {
        Ok(bytes) => Ok(Some(bytes)),
        Err(FsError::NotFound { .. }) => Ok(None),
        Err(error) => Err(StateError::Fs { path, error }),
    }
}

/// Reads `path` as text; empty when it does not exist.
pub async fn read_text(fs: &FsHandle, path: &'static str) -> Result<String, StateError> {
    let bytes = read(fs, path).await?.unwrap_or_default();
    String::from_utf8(bytes).map_err(|e| StateError::Format {
        path,
        detail: e.to_string(),
    })
}

/// Reads `path` as JSON of `T`; `None` when it does not exist.
pub async fn read_json<T: serde::de::DeserializeOwned>(
    fs: &FsHandle,
    path: &'static str,
) -> Result<Option<T>, StateError> {
    let Some(bytes) = read(fs, path).await? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| StateError::Format {
            path,
            detail: e.to_string(),
        })
}

/// Reads an NDJSON file of `T`s; empty when it does not exist.
pub async fn read_lines<T: serde::de::DeserializeOwned>(
    fs: &FsHandle,
    path: &'static str,
) -> Result<Vec<T>, StateError> {
    let text = read_text(fs, path).await?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line).map_err(|e| StateError::Format {
                path,
                detail: e.to_string(),
            })
        })
        .collect()
}

/// Writes `value` as pretty JSON to `path`.
pub async fn write_json<T: Serialize>(
    fs: &FsHandle,
    path: &'static str,
    value: &T,
) -> Result<(), StateError> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("the state serializes");
    bytes.push(b'\n');
    fs.write(path, bytes)
        .await
        .map_err(|error| StateError::Fs { path, error })
}

/// Appends `line` (and a newline) to `path`.
pub async fn append(fs: &FsHandle, path: &'static str, line: &str) -> Result<(), StateError> {
    let mut text = read_text(fs, path).await?;
    text.push_str(line);
    text.push('\n');
    fs.write(path, text.into_bytes())
        .await
        .map_err(|error| StateError::Fs { path, error })
}

/// Appends `value` as one JSON line to `path`.
pub async fn append_json<T: Serialize>(
    fs: &FsHandle,
    path: &'static str,
    value: &T,
) -> Result<(), StateError> {
    let line = serde_json::to_string(value).expect("the state serializes");
    append(fs, path, &line).await
}
