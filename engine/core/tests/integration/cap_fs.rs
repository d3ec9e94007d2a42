//! Placeholder for the fs capability tests.
