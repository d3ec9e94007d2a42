//! Tape diffs (see `docs/ARCHITECTURE.md`).
