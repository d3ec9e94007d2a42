//! Decisions files read and written: the overrides `simtape run --decisions FILE` takes
//! and the list `--decisions-out FILE` writes. What a file says (its two forms, the scenario
//! digest that refuses it on another scenario) is `simtape_eval::decisions`'s.

use std::path::Path;
use std::sync::Arc;

use simtape::decision::{Decision, DecisionBook};
use simtape::tape::sha256_hex;

use crate::exit::CliError;

/// A loaded decisions file: the book to run with and the file's digest for the tape header.
pub(crate) struct Loaded {
    pub(crate) book: Arc<DecisionBook>,
    pub(crate) digest: String,
}

/// Reads `path`, checking it against the scenario whose source digest is `scenario_digest`.
/// Every mismatch is a usage error (exit 2) naming the file and the field.
pub(crate) fn load(path: &Path, scenario_digest: &str) -> Result<Loaded, CliError> {
    let bytes = simtape::input::read_input(path, simtape::limits::InputFile::Decisions)?;
    let decisions = simtape_eval::decisions::parse(path, &bytes, scenario_digest)
        .map_err(|error| CliError::Usage(error.to_string()))?;
    Ok(Loaded {
        book: DecisionBook::new(&decisions),
        digest: sha256_hex(&bytes),
    })
}

/// After a run with `book` from `path`: an override the run never took names a decision the
/// scenario does not make at this seed, so the file does not fit it.
pub(crate) fn check_used(path: &Path, book: &DecisionBook) -> Result<(), CliError> {
    match book.unused().first() {
        None => Ok(()),
        Some(name) => {
            let index = book
                .overrides()
                .iter()
                .position(|d| &d.name == name)
                .unwrap_or(0);
            Err(CliError::Usage(format!(
                "{}: decisions[{index}].name: the run never takes decision {name:?} (unknown \
                 actor stream, or more draws than the run makes)",
                path.display()
            )))
        }
    }
}

/// Writes the decisions a run took to `path`, in the object form, stamped with the scenario.
pub(crate) fn write(
    path: &Path,
    scenario_digest: &str,
    decisions: Vec<Decision>,
) -> Result<(), CliError> {
    let text = simtape_eval::decisions::encode(Some(scenario_digest), decisions);
    crate::common::files::create_parent(path)?;
    std::fs::write(path, text).map_err(CliError::io(path))
}
