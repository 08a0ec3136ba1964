//! The Linux kernel's taskstats exit records, and nothing else: what every exiting task cost —
//! CPU, peak memory, I/O, context switches, delays — sent by the kernel over generic netlink.
//!
//! ```no_run
//! use taskstats::{Accumulator, Listener, Options, Received};
//!
//! let mut ts = Listener::open(&Options::default())?;
//! let mut procs = Accumulator::new(ts.io_delay_accounting());
//! let mut items = Vec::new();
//! loop {
//!     items.clear();
//!     ts.recv(&mut items, 1000)?;
//!     for item in &items {
//!         match item {
//!             Received::Exit(exit) => {
//!                 if let Some(p) = procs.feed(exit) {
//!                     println!("{} cpu {} ns, peak {} KiB", p.tgid, p.usage.cpu_user_ns + p.usage.cpu_sys_ns, p.usage.max_rss_kib);
//!                 }
//!             }
//!             Received::Loss(l) => eprintln!("lost {} exit records", l.count),
//!         }
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`parse()`] is pure and works on recorded datagrams.
//!
//! # Why a hand-written socket
//!
//! The crates on crates.io were considered: `taskstats` (0.1.1, May 2020, unmaintained, zerocopy
//! 0.3, parses only up to v9, one `recv` per record) and `linux-taskstats` (a port of the
//! kernel's `getdelays`, built around queries by pid) do not fit; a general generic-netlink crate
//! (`neli`, `netlink-packet-generic`) would bring a message model of its own to build three
//! requests and walk two nested attributes, while the hot path here is a `recvmmsg` batch and
//! fixed-offset reads with no allocation per record. The socket is `proctrace-netlink`'s (shared
//! with `proctrace-cnproc`: a small crate of `unsafe` system calls, each with its reason); the
//! parser is pure and fuzzed by tests.
//!
//! # Facts about the kernel's records (6.18, checked on this kernel)
//!
//! - **Delivery.** Registering (`TASKSTATS_CMD_GET` with `TASKSTATS_CMD_ATTR_REGISTER_CPUMASK`,
//!   needs CAP_NET_ADMIN, initial user and pid namespaces) adds the socket's port id to a
//!   per-CPU listener list. At every task exit (`do_exit` → `taskstats_exit`, before the address
//!   space is released) the kernel builds one message and *unicasts* a clone of it to each
//!   listener of the exiting CPU with `MSG_DONTWAIT`: a full receive queue drops the record
//!   (`netlink_overrun`: the socket's `sk_drops` + 1, and `ENOBUFS` on the next receive) and
//!   never blocks the exiting task. The socket's drop counter (`SO_MEMINFO`) therefore counts
//!   every dropped record exactly; [`Listener`] reports its increase as [`Received::Loss`]. The
//!   messages' sequence numbers are per CPU but carry no CPU, so gaps cannot be attributed (and
//!   are not used).
//! - **One record per task (thread)**: `TASKSTATS_TYPE_AGGR_PID` with the task's
//!   `struct taskstats`. When the last thread of a process that ever had more than one exits,
//!   the message also holds `TASKSTATS_TYPE_AGGR_TGID`. On 6.18 its record (`fill_tgid_exit`)
//!   holds the threads' *sums* of `ac_utime`, `ac_stime`, `ac_etime`, context switches and
//!   delays, and zeros everywhere else: no comm, ids, memory or I/O (measured: three python
//!   threads, aggregate utime = the sum of their three records to the µs). A process's I/O is
//!   therefore the sum of its threads' records ([`Accumulator`]), which is what `wait4`'s
//!   `rusage` and `/proc/PID/io` report; the aggregate's CPU sum lets the accumulator see when
//!   a thread's record was lost ([`ProcessUsage::threads_lost`]). `hiwater_rss` is the address
//!   space's, shared by the threads: the maximum, not the sum.
//! - **Units**: `ac_utime`/`ac_stime`/`ac_etime` µs; `hiwater_rss`/`hiwater_vm` KiB;
//!   `read_char`/`write_char`/`read_bytes`/`write_bytes` bytes, **rounded down to a KiB per
//!   task** (`xacct_add_tsk` masks them, and the syscall counts, with `KB_MASK`: measured, rchar
//!   3980 in `/proc/PID/io`, 3072 in the record), so a process's sum is up to 1023 bytes per
//!   thread below `/proc/PID/io`; delays ns; `ac_btime` s since the
//!   epoch (`ac_btime64` from v10), computed at exit as `now - elapsed` in whole seconds.
//! - **Config**: CPU times, `ac_*` and context switches always; `hiwater_*`, `read_char`,
//!   `write_char`, `*_syscalls` need `CONFIG_TASK_XACCT`; `read_bytes`, `write_bytes`,
//!   `cancelled_write_bytes` need `CONFIG_TASK_IO_ACCOUNTING`; `cpu_delay_total` comes from the
//!   scheduler's `sched_info` (`CONFIG_SCHED_INFO`); `blkio_delay_total` and the other delays
//!   need `CONFIG_TASK_DELAY_ACCT` *and* `kernel.task_delayacct=1` at run time (off by default
//!   since 5.14; [`io_delay_accounting`]). Records of a kernel without XACCT read as zeros.
//! - **Versions**: the struct grows at its end (v10 `ac_btime64`, v12 `ac_tgid`, `ac_tgetime`,
//!   v13 wpcopy, v14 irq; v16 moved v15's delay maxima/minima to the end, later versions
//!   append), except v15, which inserted 16 bytes after each delay total;
//!   [`abi::LAYOUT_V15`] reads it (from the kernel's fix, not tested on a v15 kernel). This
//!   kernel sends v16.
//! - **CPU**: `ac_utime`/`ac_stime` are the raw tick samples (`task_cputime`); on this loaded
//!   2-vCPU VM their sum was measured at half of what `wait4` reported (172 ms against 334 ms).
//!   `cpu_run_virtual_total` is `se.sum_exec_runtime`, the precise run time `wait4` scales to,
//!   filled even with delay accounting off; [`Usage`] splits it in the samples' proportion like
//!   the kernel's `cputime_adjust`, summed over threads first like
//!   `thread_group_cputime_adjusted`. CPU spent after the record is made (freeing the address
//!   space in `exit_mm`, closing files, the final switch) is in `wait4` but not here: a few ms for
//!   a 48 MiB process; likewise each thread's final context switch and any preemption of the
//!   exit's tail (measured: 4 voluntary switches against 5, 237 involuntary against 240).
//! - **Exit code**: `ac_exitcode` is the wait status for thread group leaders, 0 for other threads.
//! - **`wait4`/`time -v` versus taskstats.** `wait4`'s `rusage` of a child includes the CPU of the
//!   descendants it reaped, and `ru_maxrss` is the maximum over the child's address spaces
//!   *before and after exec* and over reaped descendants; a taskstats record is one task's own
//!   figures, with the peak of the address space it exited with. The two agree for a process
//!   that has no children and did not exec from a larger image. `time -v` reports `wait4`.
//! - **Joining with an exit from cn_proc**: key by tgid; guard against pid reuse with the start
//!   time ([`ProcessUsage::btime_s`], ±1 s against the process's start from another clock) and
//!   the elapsed time ([`ProcessUsage::elapsed_us`]).
//!
//! # Cost (measured on the loaded 2-vCPU 6.18 VM, load average 8–11: noisy)
//!
//! `cargo run --release -p proctrace-taskstats --example exit-cost -- 15 -- bw storm 2 2000 F`
//! (`EXITS=4000`; `bw` is bench/workload.c), modes alternated round by round, medians:
//!
//! | fork + `_exit` storm, per exit | wall | CPU of the exiting processes |
//! |---|---|---|
//! | no listener | 150.4 µs | 188.7 µs |
//! | listener draining (a thread: `recv` + [`Accumulator`]) | 197.4 µs | 192.0 µs |
//! | listener registered, never read (every record dropped) | 164.9 µs | 195.8 µs |
//! | draining, lingering 2 ms after each wakeup | 158.7 µs | 198.9 µs |
//!
//! Over five such runs the exiting processes' CPU rose by 3–14 µs per exit with a listener
//! (median about 5 µs, 2–3 %: `fill_stats`, one skb, one unicast per listener, in the exiting
//! task), the same whether or not the records are read: a full queue never blocks an exit. The
//! wall-clock cost of draining comes from the consumer: woken once per record it spent
//! 15.6 µs of CPU per record on the two shared vCPUs (+31 % wall on the storm); lingering 2 ms
//! after each wakeup batches the records (2.8 µs per record, +5.5 % wall). For
//! `posix_spawn /bin/true` (7 rounds, 2000 spawns) CPU per spawn was 693.2 µs without and
//! 698.0 µs with a draining listener; wall times were dominated by the machine's noise.
//! Taskstats' functions are not traceable on this kernel (no kprobes or tracefs); sampled with
//! `perf record -F 20000 -g` instead, `taskstats_exit` took 10–17 µs of the exiting task's CPU per
//! exit with one listener registered (an idle one or proctrace; `netlink_unicast`, the skb and
//! `fill_stats` most of it) and 0.6–1.1 µs with none, on the same loaded VM (proctrace's
//! BENCHMARKS.md, "the price of usage capture"; `examples/taskstats-sink.rs` is the bare listener).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod abi;
mod parse;
mod socket;
mod usage;

pub use parse::{Messages, Parsed, Rejected, TaskExit, TaskRecord, encode, encode_record, parse, record};
pub use socket::{
    Listener, Loss, OpenError, Options, Received, RecvError, Stats, Waker, io_delay_accounting, possible_cpus,
};
pub use usage::{Accumulator, ProcessUsage, Usage, split_cpu};
