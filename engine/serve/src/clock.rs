//! The agent's own clock on virtual time (`[agent] clock = "virtual"`), through libfaketime
//! (Debian package `faketime`): the program starts with the library preloaded and reading its
//! time from a file, which the driver rewrites with the run's virtual instant before each
//! batch of answers leaves. Its monotonic clock stays real, so its own timers and sleeps
//! still run. A statically linked program (Codex's musl binary) loads no preload, so this
//! reaches dynamically linked ones only (Claude Code, OpenCode, Python agents).

use std::path::{Path, PathBuf};

/// Where libfaketime is looked for: `$SIMTAPE_LIBFAKETIME`, then Debian's path.
const LIBFAKETIME_PATHS: [&str; 2] = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
];

/// Variables of a program's environment, by name.
pub type Env = Vec<(String, String)>;

/// The file an agent's clock reads, and the run's start instant.
#[derive(Debug, Clone)]
pub struct ClockFile {
    path: PathBuf,
    start_unix_ns: i64,
}

impl ClockFile {
    /// Makes the clock file at `path`, set to `start_unix_ns`; returns it with the variables
    /// that give a program this clock, or `None` when libfaketime is not installed.
    pub fn create(path: &Path, start_unix_ns: i64) -> std::io::Result<Option<(ClockFile, Env)>> {
        ClockFile::create_at(path, path, start_unix_ns)
    }

    /// As [`ClockFile::create`], for a program that sees the file at `seen_as` (in its
    /// sandbox).
    pub fn create_at(
        path: &Path,
        seen_as: &Path,
        start_unix_ns: i64,
    ) -> std::io::Result<Option<(ClockFile, Env)>> {
        let Some(env) = variables(seen_as) else {
            return Ok(None);
        };
        let clock = ClockFile {
            path: path.to_path_buf(),
            start_unix_ns,
        };
        clock.write(0)?;
        Ok(Some((clock, env)))
    }

    /// Sets the clock to the run's instant `now_ns` (a write error leaves it where it was).
    pub fn set(&self, now_ns: u64) {
        let _ = self.write(now_ns);
    }

    fn write(&self, now_ns: u64) -> std::io::Result<()> {
        let unix_ns = self.start_unix_ns + i64::try_from(now_ns).unwrap_or(i64::MAX);
        // libfaketime reads an absolute `YYYY-MM-DD hh:mm:ss` (a frozen wall clock).
        let instant = simtape::time::format_instant(unix_ns);
        let text = format!(
            "{}\n",
            instant.get(..19).unwrap_or(&instant).replace('T', " ")
        );
        // Written whole, then renamed: the agent never reads half a line.
        let partial = self.path.with_extension("partial");
        std::fs::write(&partial, text)?;
        std::fs::rename(&partial, &self.path)
    }
}

/// The variables that give a program the clock in the file it sees at `seen_as`, or `None`
/// when libfaketime is not installed.
pub fn variables(seen_as: &Path) -> Option<Env> {
    let library = libfaketime()?;
    let env = [
        ("LD_PRELOAD", library.display().to_string()),
        ("FAKETIME_TIMESTAMP_FILE", seen_as.display().to_string()),
        // Read the file on every call, so each new instant is seen at once.
        ("FAKETIME_NO_CACHE", "1".to_string()),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_string()),
    ];
    Some(env.map(|(k, v)| (k.to_string(), v)).to_vec())
}

/// Returns the libfaketime library, if installed.
pub fn libfaketime() -> Option<PathBuf> {
    let from_env = std::env::var_os("SIMTAPE_LIBFAKETIME").map(PathBuf::from);
    let known = LIBFAKETIME_PATHS.iter().map(PathBuf::from);
    from_env
        .into_iter()
        .chain(known)
        .find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_file_holds_the_runs_instant() {
        let dir = std::env::temp_dir().join(format!("simtape-clock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let clock = ClockFile {
            path: dir.join("clock"),
            start_unix_ns: simtape::time::START_DEFAULT_UNIX_NS,
        };
        clock.write(0).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("clock")).unwrap(),
            "2026-01-01 00:00:00\n"
        );
        clock.set(90_061_000_000_000);
        assert_eq!(
            std::fs::read_to_string(dir.join("clock")).unwrap(),
            "2026-01-02 01:01:01\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
