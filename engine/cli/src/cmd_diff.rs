//! `simtape diff`: the oracle on two tapes.

use simtape::oracle::Mode;

use crate::args::{DiffArgs, DiffMode};
use crate::common::render::print_diff;
use crate::exit::CliResult;

pub(crate) fn run(args: &DiffArgs) -> CliResult {
    let mode = match args.mode {
        DiffMode::Exact => Mode::Exact,
        DiffMode::Semantic => Mode::Semantic,
        DiffMode::Outcome => Mode::Outcome,
    };
    print_diff(&args.a, &args.b, mode, args.json)
}
