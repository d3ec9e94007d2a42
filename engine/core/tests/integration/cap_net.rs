//! Placeholder for the net capability tests.
