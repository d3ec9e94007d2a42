//! `simtape diff`: the oracle on two tapes.

use std::path::Path;

use simtape::oracle::{diff_paths, Mode};
use simtape::tape::TapeReader;
use simtape_eval::view::html::diff::render;
use simtape_eval::view::html::tape::TapeView;
use simtape_eval::view::ViewError;

use crate::args::{DiffArgs, DiffMode};
use crate::common::render::print_diff;
use crate::exit::{CliError, CliResult};

pub(crate) fn run(args: &DiffArgs) -> CliResult {
    let mode = match args.mode {
        DiffMode::Exact => Mode::Exact,
        DiffMode::Semantic => Mode::Semantic,
        DiffMode::Outcome => Mode::Outcome,
    };
    let outcome = print_diff(&args.a, &args.b, mode, args.json)?;
    if let Some(html) = &args.html {
        write_html(args, mode, html)?;
    }
    Ok(outcome)
}

/// Writes the diff page: the report again (cheap next to reading both tapes) and each tape
/// as a timeline.
fn write_html(args: &DiffArgs, mode: Mode, html: &Path) -> Result<(), CliError> {
    let report = diff_paths(&args.a, &args.b, mode)?;
    let view = |path: &Path| -> Result<TapeView, CliError> {
        let mut reader = TapeReader::open(path)
            .map(|r| r.keep_blobs(true))
            .map_err(|error| CliError::Tape {
                path: Some(path.to_path_buf()),
                error,
            })?;
        TapeView::read(&mut reader, None).map_err(|error| match error {
            ViewError::Tape(error) => CliError::Tape {
                path: Some(path.to_path_buf()),
                error,
            },
            ViewError::Io(error) => CliError::io(path)(error),
            other => CliError::Input(format!("{}: {other}", path.display())),
        })
    };
    let page = render(
        &report,
        &view(&args.a)?,
        &view(&args.b)?,
        &args.a.display().to_string(),
        &args.b.display().to_string(),
    );
    std::fs::write(html, page).map_err(CliError::io(html))?;
    eprintln!("diff page: {}", html.display());
    Ok(())
}
