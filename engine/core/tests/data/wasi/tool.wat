;; A small command-line tool for the WASI sandbox tests: `tool COMMAND [ARG]`.
;;
;;   sleep SECONDS  poll_oneoff on one relative MONOTONIC clock; prints `slept NS`
;;   pair           one poll with 1 s (userdata 1) and 5 s (userdata 2) subscriptions;
;;                  prints `events N first USERDATA elapsed NS`
;;   abs            one poll on an absolute REALTIME deadline 30 min ahead; prints `slept NS`
;;   clocks         prints `realtime NS` and `monotonic NS`
;;   random         prints 16 bytes of random_get as hex
;;   write          writes `hello from wasm` to /out.txt; prints `wrote`
;;   list DIR       lists DIR with fd_readdir; per entry `NAME ino D_INO size SIZE mtime NS`
;;   cat            copies stdin to stdout
;;   net            sock_send on the root directory; prints `sock_send errno E`
;;   escape         opens ../x with O_CREAT; prints `escape errno E`
;;   spin           loops forever (only fuel stops it)
;;   exit CODE      proc_exit(CODE)
;;   grow PAGES     grows memory by PAGES pages of 64 KiB; prints `grew`
;;
;; Memory map: 0..320 scratch records, 1024.. argv pointers, 2048.. argv strings,
;; 8192.. number formatting, 12288.. directory listing, 16384.. string literals, one per
;; 32-byte slot (slot k at 16384 + 32 k).
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_readdir" (func $fd_readdir (param i32 i32 i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock_time_get (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_filestat_get" (func $path_filestat_get (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "sock_send" (func $sock_send (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)

  (data (i32.const 16384) "0123456789abcdef")
  (data (i32.const 16416) "slept ")
  (data (i32.const 16448) "\n")
  (data (i32.const 16480) "events ")
  (data (i32.const 16512) " first ")
  (data (i32.const 16544) " elapsed ")
  (data (i32.const 16576) "realtime ")
  (data (i32.const 16608) "monotonic ")
  (data (i32.const 16640) "out.txt")
  (data (i32.const 16672) "hello from wasm\n")
  (data (i32.const 16704) "wrote\n")
  (data (i32.const 16736) " ino ")
  (data (i32.const 16768) " size ")
  (data (i32.const 16800) " mtime ")
  (data (i32.const 16832) " err ")
  (data (i32.const 16864) "sock_send errno ")
  (data (i32.const 16896) "../x")
  (data (i32.const 16928) "escape errno ")
  (data (i32.const 16960) "usage\n")
  (data (i32.const 16992) "sleep")
  (data (i32.const 17024) "pair")
  (data (i32.const 17056) "clocks")
  (data (i32.const 17088) "random")
  (data (i32.const 17120) "write")
  (data (i32.const 17152) "list")
  (data (i32.const 17184) "net")
  (data (i32.const 17216) "spin")
  (data (i32.const 17248) "exit")
  (data (i32.const 17280) "escape")
  (data (i32.const 17312) "abs")
  (data (i32.const 17344) "open errno ")
  (data (i32.const 17376) "cat")
  (data (i32.const 17408) "grew\n")
  (data (i32.const 17440) "grow")

  (func $slot (param $k i32) (result i32)
    (i32.add (i32.const 16384) (i32.mul (local.get $k) (i32.const 32))))

  (func $print (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))

  (func $lit (param $k i32) (param $len i32)
    (call $print (call $slot (local.get $k)) (local.get $len)))

  (func $newline (call $lit (i32.const 2) (i32.const 1)))

  (func $print_u64 (param $value i64) (local $at i32)
    (local.set $at (i32.const 8224))
    (loop $digits
      (local.set $at (i32.sub (local.get $at) (i32.const 1)))
      (i32.store8 (local.get $at)
        (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $value) (i64.const 10)))))
      (local.set $value (i64.div_u (local.get $value) (i64.const 10)))
      (br_if $digits (i64.ne (local.get $value) (i64.const 0))))
    (call $print (local.get $at) (i32.sub (i32.const 8224) (local.get $at))))

  (func $print_hex (param $ptr i32) (param $len i32) (local $i i32) (local $byte i32)
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (local.set $byte (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (i32.store8 (i32.add (i32.const 8256) (i32.mul (local.get $i) (i32.const 2)))
          (i32.load8_u (i32.add (i32.const 16384) (i32.shr_u (local.get $byte) (i32.const 4)))))
        (i32.store8 (i32.add (i32.const 8257) (i32.mul (local.get $i) (i32.const 2)))
          (i32.load8_u (i32.add (i32.const 16384) (i32.and (local.get $byte) (i32.const 15)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $bytes)))
    (call $print (i32.const 8256) (i32.mul (local.get $len) (i32.const 2))))

  (func $strlen (param $ptr i32) (result i32) (local $len i32)
    (block $done
      (loop $scan
        (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $ptr) (local.get $len)))))
        (local.set $len (i32.add (local.get $len) (i32.const 1)))
        (br $scan)))
    (local.get $len))

  (func $arg (param $i i32) (result i32)
    (i32.load (i32.add (i32.const 1040) (i32.mul (local.get $i) (i32.const 4)))))

  ;; Returns whether argument $i exists and equals the literal in slot $k of length $len.
  (func $is (param $i i32) (param $k i32) (param $len i32) (result i32) (local $at i32)
    (if (i32.ge_u (local.get $i) (i32.load (i32.const 1024))) (then (return (i32.const 0))))
    (if (i32.ne (call $strlen (call $arg (local.get $i))) (local.get $len))
      (then (return (i32.const 0))))
    (block $differ
      (loop $compare
        (if (i32.ge_u (local.get $at) (local.get $len)) (then (return (i32.const 1))))
        (br_if $differ
          (i32.ne
            (i32.load8_u (i32.add (call $arg (local.get $i)) (local.get $at)))
            (i32.load8_u (i32.add (call $slot (local.get $k)) (local.get $at)))))
        (local.set $at (i32.add (local.get $at) (i32.const 1)))
        (br $compare)))
    (i32.const 0))

  ;; Parses argument $i as a decimal number (0 when missing).
  (func $number (param $i i32) (result i64) (local $at i32) (local $value i64) (local $digit i32)
    (if (i32.ge_u (local.get $i) (i32.load (i32.const 1024))) (then (return (i64.const 0))))
    (local.set $at (call $arg (local.get $i)))
    (block $done
      (loop $digits
        (local.set $digit (i32.sub (i32.load8_u (local.get $at)) (i32.const 48)))
        (br_if $done (i32.gt_u (local.get $digit) (i32.const 9)))
        (local.set $value
          (i64.add (i64.mul (local.get $value) (i64.const 10)) (i64.extend_i32_u (local.get $digit))))
        (local.set $at (i32.add (local.get $at) (i32.const 1)))
        (br $digits)))
    (local.get $value))

  (func $now (param $clock i32) (result i64)
    (drop (call $clock_time_get (local.get $clock) (i64.const 1) (i32.const 232)))
    (i64.load (i32.const 232)))

  ;; Writes a clock subscription at $at.
  (func $subscribe (param $at i32) (param $userdata i64) (param $clock i32) (param $timeout i64) (param $flags i32)
    (i64.store (local.get $at) (local.get $userdata))
    (i64.store offset=8 (local.get $at) (i64.const 0))
    (i32.store offset=16 (local.get $at) (local.get $clock))
    (i64.store offset=24 (local.get $at) (local.get $timeout))
    (i64.store offset=32 (local.get $at) (i64.const 0))
    (i64.store offset=40 (local.get $at) (i64.extend_i32_u (local.get $flags))))

  (func $print_slept (param $since i64)
    (call $lit (i32.const 1) (i32.const 6))
    (call $print_u64 (i64.sub (call $now (i32.const 1)) (local.get $since)))
    (call $newline))

  (func $sleep (local $t0 i64)
    (local.set $t0 (call $now (i32.const 1)))
    (call $subscribe (i32.const 64) (i64.const 7) (i32.const 1)
      (i64.mul (call $number (i32.const 2)) (i64.const 1000000000)) (i32.const 0))
    (drop (call $poll_oneoff (i32.const 64) (i32.const 160) (i32.const 1) (i32.const 224)))
    (call $print_slept (local.get $t0)))

  (func $abs (local $t0 i64)
    (local.set $t0 (call $now (i32.const 1)))
    (call $subscribe (i32.const 64) (i64.const 9) (i32.const 0)
      (i64.add (call $now (i32.const 0)) (i64.const 1800000000000)) (i32.const 1))
    (drop (call $poll_oneoff (i32.const 64) (i32.const 160) (i32.const 1) (i32.const 224)))
    (call $print_slept (local.get $t0)))

  (func $pair (local $t0 i64)
    (local.set $t0 (call $now (i32.const 1)))
    (call $subscribe (i32.const 64) (i64.const 1) (i32.const 1) (i64.const 1000000000) (i32.const 0))
    (call $subscribe (i32.const 112) (i64.const 2) (i32.const 1) (i64.const 5000000000) (i32.const 0))
    (drop (call $poll_oneoff (i32.const 64) (i32.const 160) (i32.const 2) (i32.const 224)))
    (call $lit (i32.const 3) (i32.const 7))
    (call $print_u64 (i64.extend_i32_u (i32.load (i32.const 224))))
    (call $lit (i32.const 4) (i32.const 7))
    (call $print_u64 (i64.load (i32.const 160)))
    (call $lit (i32.const 5) (i32.const 9))
    (call $print_u64 (i64.sub (call $now (i32.const 1)) (local.get $t0)))
    (call $newline))

  (func $clocks
    (call $lit (i32.const 6) (i32.const 9))
    (call $print_u64 (call $now (i32.const 0)))
    (call $newline)
    (call $lit (i32.const 7) (i32.const 10))
    (call $print_u64 (call $now (i32.const 1)))
    (call $newline))

  (func $random
    (drop (call $random_get (i32.const 320) (i32.const 16)))
    (call $print_hex (i32.const 320) (i32.const 16))
    (call $newline))

  (func $write (local $fd i32)
    ;; oflags CREAT | TRUNC
    (drop (call $path_open (i32.const 3) (i32.const 0) (call $slot (i32.const 8)) (i32.const 7)
      (i32.const 9) (i64.const -1) (i64.const -1) (i32.const 0) (i32.const 240)))
    (local.set $fd (i32.load (i32.const 240)))
    (i32.store (i32.const 0) (call $slot (i32.const 9)))
    (i32.store (i32.const 4) (i32.const 16))
    (drop (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8)))
    (drop (call $fd_close (local.get $fd)))
    (call $lit (i32.const 10) (i32.const 6)))

  (func $print_errno (param $k i32) (param $len i32) (param $errno i32)
    (call $lit (local.get $k) (local.get $len))
    (call $print_u64 (i64.extend_i32_u (local.get $errno)))
    (call $newline))

  (func $list (local $dir i32) (local $errno i32) (local $at i32) (local $end i32) (local $name_len i32)
    ;; oflags DIRECTORY
    (local.set $errno (call $path_open (i32.const 3) (i32.const 0)
      (call $arg (i32.const 2)) (call $strlen (call $arg (i32.const 2)))
      (i32.const 2) (i64.const -1) (i64.const -1) (i32.const 0) (i32.const 240)))
    (if (local.get $errno) (then (call $print_errno (i32.const 30) (i32.const 11) (local.get $errno)) (return)))
    (local.set $dir (i32.load (i32.const 240)))
    (drop (call $fd_readdir (local.get $dir) (i32.const 12288) (i32.const 4096) (i64.const 0) (i32.const 244)))
    (local.set $at (i32.const 12288))
    (local.set $end (i32.add (i32.const 12288) (i32.load (i32.const 244))))
    (block $done
      (loop $entries
        (br_if $done (i32.gt_u (i32.add (local.get $at) (i32.const 24)) (local.get $end)))
        (local.set $name_len (i32.load offset=16 (local.get $at)))
        (call $print (i32.add (local.get $at) (i32.const 24)) (local.get $name_len))
        (call $lit (i32.const 11) (i32.const 5))
        (call $print_u64 (i64.load offset=8 (local.get $at)))
        (local.set $errno (call $path_filestat_get (local.get $dir) (i32.const 0)
          (i32.add (local.get $at) (i32.const 24)) (local.get $name_len) (i32.const 256)))
        (if (local.get $errno)
          (then
            (call $lit (i32.const 14) (i32.const 5))
            (call $print_u64 (i64.extend_i32_u (local.get $errno))))
          (else
            (call $lit (i32.const 12) (i32.const 6))
            (call $print_u64 (i64.load (i32.const 288)))
            (call $lit (i32.const 13) (i32.const 7))
            (call $print_u64 (i64.load (i32.const 304)))))
        (call $newline)
        (local.set $at (i32.add (local.get $at) (i32.add (i32.const 24) (local.get $name_len))))
        (br $entries))))

  (func $cat (local $read i32)
    (loop $chunks
      (i32.store (i32.const 0) (i32.const 12288))
      (i32.store (i32.const 4) (i32.const 4096))
      (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
      (local.set $read (i32.load (i32.const 8)))
      (if (local.get $read)
        (then
          (call $print (i32.const 12288) (local.get $read))
          (br $chunks)))))

  (func (export "_start")
    (drop (call $args_sizes_get (i32.const 1024) (i32.const 1028)))
    (drop (call $args_get (i32.const 1040) (i32.const 2048)))
    (if (call $is (i32.const 1) (i32.const 19) (i32.const 5)) (then (call $sleep) (return)))
    (if (call $is (i32.const 1) (i32.const 20) (i32.const 4)) (then (call $pair) (return)))
    (if (call $is (i32.const 1) (i32.const 29) (i32.const 3)) (then (call $abs) (return)))
    (if (call $is (i32.const 1) (i32.const 21) (i32.const 6)) (then (call $clocks) (return)))
    (if (call $is (i32.const 1) (i32.const 22) (i32.const 6)) (then (call $random) (return)))
    (if (call $is (i32.const 1) (i32.const 23) (i32.const 5)) (then (call $write) (return)))
    (if (call $is (i32.const 1) (i32.const 24) (i32.const 4)) (then (call $list) (return)))
    (if (call $is (i32.const 1) (i32.const 31) (i32.const 3)) (then (call $cat) (return)))
    (if (call $is (i32.const 1) (i32.const 25) (i32.const 3))
      (then
        (call $print_errno (i32.const 15) (i32.const 16)
          (call $sock_send (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 244)))
        (return)))
    (if (call $is (i32.const 1) (i32.const 28) (i32.const 6))
      (then
        (call $print_errno (i32.const 17) (i32.const 13)
          (call $path_open (i32.const 3) (i32.const 0) (call $slot (i32.const 16)) (i32.const 4)
            (i32.const 1) (i64.const -1) (i64.const -1) (i32.const 0) (i32.const 240)))
        (return)))
    (if (call $is (i32.const 1) (i32.const 26) (i32.const 4)) (then (loop $forever (br $forever))))
    (if (call $is (i32.const 1) (i32.const 33) (i32.const 4))
      (then
        (drop (memory.grow (i32.wrap_i64 (call $number (i32.const 2)))))
        (call $lit (i32.const 32) (i32.const 5))
        (return)))
    (if (call $is (i32.const 1) (i32.const 27) (i32.const 4))
      (then (call $proc_exit (i32.wrap_i64 (call $number (i32.const 2))))))
    (call $lit (i32.const 18) (i32.const 6))
    (call $proc_exit (i32.const 2)))
)
