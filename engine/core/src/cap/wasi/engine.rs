//! The wasmtime engine, the linker and the module cache, shared by every clone of a process
//! actor (so a sweep compiles each module once per process).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use sha2::{Digest, Sha256};
use wasmtime::{Config, Engine, ExternType, InstancePre, Linker, Module};

use super::linker::{self, MODULE};
use super::run::Guest;
use crate::cap::process::ProcessError;

/// The engine, the linker with every preview-1 function, and the pre-linked modules by the
/// SHA-256 of their bytes.
pub(crate) struct Runtime {
    engine: Engine,
    linker: Linker<Guest>,
    modules: Mutex<BTreeMap<[u8; 32], InstancePre<Guest>>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cached = self
            .modules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("Runtime")
            .field("modules_cached", &cached)
            .finish()
    }
}

impl Runtime {
    /// Returns a runtime with a deterministic engine: fuel on, NaNs canonical, relaxed SIMD
    /// deterministic (wasmtime is built without threads, so shared memories do not parse).
    pub(crate) fn new() -> Runtime {
        let engine = Engine::new(&config()).expect("the sandbox's engine configuration is valid");
        let linker = linker::linker(&engine).expect("each preview-1 function is linked once");
        Runtime {
            engine,
            linker,
            modules: Mutex::new(BTreeMap::new()),
        }
    }

    /// Returns the pre-linked module of `bytes`, compiling it on first sight.
    pub(super) fn prepare(
        &self,
        program: &str,
        bytes: &[u8],
    ) -> Result<InstancePre<Guest>, ProcessError> {
        let digest: [u8; 32] = Sha256::digest(bytes).into();
        let mut modules = self.modules.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(pre) = modules.get(&digest) {
            return Ok(pre.clone());
        }
        let invalid = |detail: String| ProcessError::WasmInvalid {
            program: program.to_owned(),
            detail,
        };
        let module = Module::new(&self.engine, bytes).map_err(|e| invalid(e.to_string()))?;
        check_imports(program, &module)?;
        let pre = self
            .linker
            .instantiate_pre(&module)
            .map_err(|e| invalid(e.to_string()))?;
        modules.insert(digest, pre.clone());
        Ok(pre)
    }
}

/// The engine configuration every sandbox uses.
fn config() -> Config {
    let mut config = Config::new();
    config
        .consume_fuel(true)
        .cranelift_nan_canonicalization(true)
        .relaxed_simd_deterministic(true);
    config
}

/// Checks that `bytes` are a WebAssembly module the sandbox's engine accepts, without
/// compiling it (what `simtape check` does for each module a scenario names).
pub(crate) fn validate(bytes: &[u8]) -> Result<(), super::ModuleError> {
    let engine = Engine::new(&config()).expect("the sandbox's engine configuration is valid");
    Module::validate(&engine, bytes).map_err(|error| super::ModuleError::Invalid {
        detail: format!("{error:#}"),
    })
}

/// Refuses a module that imports anything but the preview-1 functions the sandbox links
/// (a WasmEdge-style `sock_open`, a host memory, another module).
fn check_imports(program: &str, module: &Module) -> Result<(), ProcessError> {
    for import in module.imports() {
        let linked = import.module() == MODULE
            && linker::provides(import.name())
            && matches!(import.ty(), ExternType::Func(_));
        if !linked {
            return Err(ProcessError::WasmImport {
                program: program.to_owned(),
                module: import.module().to_owned(),
                name: import.name().to_owned(),
            });
        }
    }
    Ok(())
}
