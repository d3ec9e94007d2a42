//! Path resolution against both layers: `..` and real-directory symlinks are followed step by
//! step, and any step that leaves the root is an escape.

use std::path::PathBuf;

use super::{Entry, Lower, Overlay, SYMLINK_HOPS_MAX};
use crate::cap::fs::path::{self, Step};
use crate::cap::fs::FsError;

impl Overlay {
    /// Resolves `input` to a key, following symlinks of the real directory (never outside
    /// the root) and `..` physically, as the host would.
    pub(super) fn resolve(&self, input: &str) -> Result<String, FsError> {
        let roots = [self.root.as_path(), self.root_canonical.as_path()];
        let mut pending = path::steps(input, &roots)?;
        pending.reverse();
        let (mut done, mut hops, mut via): (Vec<String>, u32, Option<String>) =
            (Vec::new(), 0, None);
        while let Some(step) = pending.pop() {
            let name = match step {
                Step::Parent if done.pop().is_some() => continue,
                Step::Parent => return Err(escape(input, via)),
                Step::Name(name) => name,
            };
            done.push(name);
            let Some(target) = self.real_symlink(&done.join("/")) else {
                continue;
            };
            hops += 1;
            if hops > SYMLINK_HOPS_MAX {
                return Err(FsError::SymlinkLoop { path: input.into() });
            }
            done.pop();
            let text = target.to_string_lossy().into_owned();
            if target.has_root() {
                done.clear();
            }
            let mut more =
                path::steps(&text, &roots).map_err(|_| escape(input, Some(text.clone())))?;
            more.reverse();
            pending.extend(more);
            via = Some(text);
        }
        Ok(done.join("/"))
    }

    /// Returns the target of a symlink the real layer shows at `key`.
    fn real_symlink(&self, key: &str) -> Option<PathBuf> {
        if !self.real || self.hides_real(key) {
            return None;
        }
        match self.lower(key) {
            Lower::Symlink(target) => target,
            _ => None,
        }
    }

    /// Returns whether the upper layer replaces or hides the real entry at `key`.
    pub(super) fn hides_real(&self, key: &str) -> bool {
        self.upper.contains_key(key)
            || path::ancestors(key).any(|a| {
                matches!(
                    self.upper.get(a),
                    Some(Entry::Whiteout | Entry::File(_) | Entry::Dir { opaque: true })
                )
            })
    }
}

fn escape(input: &str, resolved: Option<String>) -> FsError {
    FsError::Escape {
        path: input.into(),
        resolved,
    }
}
