//! The TOML scenario format.
