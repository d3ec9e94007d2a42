//! Seeing a run: a tape as a timeline ([`timeline`]), written as a Chrome/Perfetto trace
//! ([`chrome_trace`]), as a self-contained HTML page ([`html`]) or as an indented tree for a
//! terminal ([`tree`]); a sweep report and a tape diff as HTML pages too. The pages and the
//! trace read the tape through one [`timeline::Timeline`], so a slice means the same in each.
//! docs/viewing.md is the reader's guide.

pub mod chrome_trace;
pub mod describe;
pub mod html;
pub mod timeline;
pub mod tree;

/// A view that could not be made: the tape does not read, or the output does not write.
/// Fatal to the command that makes the view.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// The tape is damaged or missing a blob.
    #[error(transparent)]
    Tape(#[from] simtape::tape::TapeError),
    /// Writing the output failed.
    #[error("writing the view: {0}")]
    Io(#[from] std::io::Error),
}
