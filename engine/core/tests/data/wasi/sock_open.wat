;; A module importing WasmEdge's non-standard `sock_open`: the sandbox refuses to
;; instantiate it (preview 1 has no call that creates a socket).
(module
  (import "wasi_snapshot_preview1" "sock_open" (func $sock_open (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")
    (drop (call $sock_open (i32.const 1) (i32.const 1) (i32.const 0)))))
