//! The oracle: alignment, first divergence, modes, reports.
