//! The extension hook: tables of the scenario format that a crate above the core decodes with
//! the core's span-keeping decoder.
//!
//! The core decodes the tables it runs (`[scenario]`, `[limits]`, `[fs]`, `[network]`,
//! `[llm]`, `[process]`, the llm, fs and process rules of `[faults]`, `[[task]]`). An
//! [`Extension`] names the other tables it owns; the core hands it their fields, and the
//! extension decodes and checks them with the same [`Decoder`], so every problem is placed at
//! file:line:column:field and `check` reports the core's and the extension's problems in one
//! pass. Once decoding found nothing wrong, [`Extension::open`] opens what its tables name,
//! next to the core opening its own files.

use std::path::Path;

use super::decode::Decoder;
use super::fields::Field;
use super::schema::Capability;

/// A table an extension adds to the format, and the table it is listed after in messages
/// (`unknown key, expected one of the tables …`), so the list reads in the format's order.
pub type Listed = (&'static str, &'static str);

/// Tables of the scenario format decoded by a crate above the core (the eval harness decodes
/// `[agent]`, `[[mcp]]`, `[[faults.mcp]]` and `[[verify]]` so).
pub trait Extension {
    /// The top-level tables the extension decodes, each with the table it is listed after.
    fn tables(&self) -> &[Listed];

    /// The `[faults]` rule arrays the extension decodes (`mcp` for `[[faults.mcp]]`), each
    /// with the array it is listed after.
    fn fault_tables(&self) -> &[Listed] {
        &[]
    }

    /// The capabilities the caller supplies without their table in the file (`simtape run
    /// --process-wasi DIR` supplies `[process]`): what needs one is not refused for the
    /// table's absence.
    fn supplied(&self) -> &[Capability] {
        &[]
    }

    /// Returns whether, with the extension's tables as given, a scenario may have no
    /// `[[task]]` (an agent scenario runs its agent instead).
    fn runs_without_tasks(&self, tables: &Tables<'_>) -> bool {
        let _ = tables;
        false
    }

    /// Decodes the extension's tables (those present in the file), reporting every problem
    /// into `decoder`. Called once, after the core's capability tables are decoded, so
    /// [`Decoder::has_table`] answers for them.
    fn decode(&mut self, decoder: &mut Decoder, tables: &Tables<'_>);

    /// Opens what the tables name (relative to `base`, the scenario file's directory),
    /// reporting each problem into `decoder` at the field that names the file. Called only
    /// when decoding found no problem.
    fn open(&mut self, decoder: &mut Decoder, base: &Path) {
        let _ = (decoder, base);
    }
}

/// The extension's tables as the file gives them.
#[derive(Debug)]
pub struct Tables<'a> {
    pub(crate) source: &'a str,
    pub(crate) top: Vec<(&'static str, Field<'a>)>,
    pub(crate) faults: Vec<(&'static str, Field<'a>)>,
}

impl<'a> Tables<'a> {
    /// Returns the top-level table `name`, when the file has it.
    pub fn get(&self, name: &str) -> Option<&Field<'a>> {
        self.top
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, field)| field)
    }

    /// Returns the rule array `faults.<name>`, when the file has it.
    pub fn fault(&self, name: &str) -> Option<&Field<'a>> {
        self.faults
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, field)| field)
    }

    /// Returns the 1-based line of the scenario file where `field` sits.
    pub fn line(&self, field: &Field<'_>) -> u64 {
        super::error::line_column(self.source, field.span.start).0 as u64
    }
}

/// The extension of a scenario that has none: the core's tables only.
#[derive(Debug, Clone, Copy, Default)]
pub struct CoreOnly;

impl Extension for CoreOnly {
    fn tables(&self) -> &[Listed] {
        &[]
    }

    fn decode(&mut self, _decoder: &mut Decoder, _tables: &Tables<'_>) {}
}

/// Returns `core`'s names with each of `added` inserted after the name it is listed after
/// (at the end when that name is absent).
pub(crate) fn listed(core: &[&'static str], added: &[Listed]) -> Vec<&'static str> {
    let mut names = core.to_vec();
    for (name, after) in added {
        let at = names
            .iter()
            .position(|known| known == after)
            .map_or(names.len(), |index| index + 1);
        names.insert(at, name);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::listed;

    #[test]
    fn added_tables_are_listed_after_their_anchor() {
        // Goal: an extension's tables read in the format's order, an unknown anchor at the end.
        let names = listed(
            &["scenario", "process", "faults", "task"],
            &[
                ("mcp", "process"),
                ("agent", "mcp"),
                ("verify", "faults"),
                ("x", "none"),
            ],
        );
        assert_eq!(
            names,
            ["scenario", "process", "mcp", "agent", "faults", "verify", "task", "x"]
        );
    }
}
