//! Placeholder: see the capability issue.
