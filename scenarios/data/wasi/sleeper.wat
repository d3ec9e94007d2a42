;; `sleeper [SECONDS]`: sleeps SECONDS (default 86400, a day) with one poll_oneoff on a
;; relative MONOTONIC clock, then prints `slept NS`, the virtual nanoseconds that passed.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock_time_get (param i32 i64 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "slept ")
  (data (i32.const 4102) "\n")

  (func $print (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))

  (func $monotonic (result i64)
    (drop (call $clock_time_get (i32.const 1) (i64.const 1) (i32.const 16)))
    (i64.load (i32.const 16)))

  ;; Returns argv[1] as a number of seconds, or a day without one.
  (func $seconds (result i64) (local $at i32) (local $digit i32) (local $value i64)
    (drop (call $args_sizes_get (i32.const 24) (i32.const 28)))
    (if (i32.lt_u (i32.load (i32.const 24)) (i32.const 2)) (then (return (i64.const 86400))))
    (drop (call $args_get (i32.const 1024) (i32.const 2048)))
    (local.set $at (i32.load (i32.const 1028)))
    (block $done
      (loop $digits
        (local.set $digit (i32.sub (i32.load8_u (local.get $at)) (i32.const 48)))
        (br_if $done (i32.gt_u (local.get $digit) (i32.const 9)))
        (local.set $value
          (i64.add (i64.mul (local.get $value) (i64.const 10)) (i64.extend_i32_u (local.get $digit))))
        (local.set $at (i32.add (local.get $at) (i32.const 1)))
        (br $digits)))
    (local.get $value))

  (func (export "_start") (local $t0 i64) (local $elapsed i64) (local $at i32)
    (local.set $t0 (call $monotonic))
    ;; One clock subscription at 64: userdata 0, tag clock, MONOTONIC, relative timeout.
    (i64.store (i32.const 64) (i64.const 0))
    (i64.store (i32.const 72) (i64.const 0))
    (i32.store (i32.const 80) (i32.const 1))
    (i64.store (i32.const 88) (i64.mul (call $seconds) (i64.const 1000000000)))
    (i64.store (i32.const 96) (i64.const 0))
    (i64.store (i32.const 104) (i64.const 0))
    (drop (call $poll_oneoff (i32.const 64) (i32.const 128) (i32.const 1) (i32.const 160)))
    (local.set $elapsed (i64.sub (call $monotonic) (local.get $t0)))
    ;; Decimal digits, written backwards from 4000.
    (local.set $at (i32.const 4000))
    (loop $digits
      (local.set $at (i32.sub (local.get $at) (i32.const 1)))
      (i32.store8 (local.get $at)
        (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $elapsed) (i64.const 10)))))
      (local.set $elapsed (i64.div_u (local.get $elapsed) (i64.const 10)))
      (br_if $digits (i64.ne (local.get $elapsed) (i64.const 0))))
    (call $print (i32.const 4096) (i32.const 6))
    (call $print (local.get $at) (i32.sub (i32.const 4000) (local.get $at)))
    (call $print (i32.const 4102) (i32.const 1)))
)
