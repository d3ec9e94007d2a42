//! The diff base: real files captured before the run first changes their path, and the
//! merged files the diff compares them with.

use std::collections::BTreeMap;

use super::{Node, Overlay};
use crate::cap::fs::path;
use crate::cap::fs::FsError;

impl Overlay {
    /// Captures the real files under `key` into the base before the first change there.
    pub(super) fn touch(&mut self, key: &str, input: &str) -> Result<(), FsError> {
        let seen =
            path::ancestors(key).any(|a| self.touched.contains(a)) || self.touched.contains(key);
        if seen {
            return Ok(());
        }
        let mut files = BTreeMap::new();
        self.real_files(key, input, &mut files)?;
        for (file, bytes) in files {
            self.base.entry(file).or_insert(bytes);
        }
        self.touched.insert(key.to_string());
        Ok(())
    }

    fn real_files(
        &self,
        key: &str,
        input: &str,
        out: &mut BTreeMap<String, Vec<u8>>,
    ) -> Result<(), FsError> {
        if !self.real {
            return Ok(());
        }
        match self.real_node(key) {
            Some(Node::File) => {
                let bytes =
                    std::fs::read(self.real_path(key)).map_err(|e| FsError::host(input, &e))?;
                out.insert(key.to_string(), bytes);
            }
            Some(Node::Dir) => {
                let entries =
                    std::fs::read_dir(self.real_path(key)).map_err(|e| FsError::host(input, &e))?;
                for entry in entries {
                    let entry = entry.map_err(|e| FsError::host(input, &e))?;
                    if let Ok(name) = entry.file_name().into_string() {
                        self.real_files(&path::join(key, &name), input, out)?;
                    }
                }
            }
            Some(Node::Other) | None => {}
        }
        Ok(())
    }

    /// Collects the merged files under `key`.
    pub(super) fn merged_files(
        &self,
        key: &str,
        out: &mut BTreeMap<String, Vec<u8>>,
    ) -> Result<(), FsError> {
        match self.node(key, key)? {
            Some(Node::File) => {
                out.insert(key.to_string(), self.file_bytes(key, key)?);
            }
            Some(Node::Dir) => {
                for name in self.list_key(key, key)? {
                    self.merged_files(&path::join(key, &name), out)?;
                }
            }
            Some(Node::Other) | None => {}
        }
        Ok(())
    }
}
