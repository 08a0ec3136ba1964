//! The JSON Lines vocabulary (`-o FILE`): every event a line can be, every key each event
//! carries, in the order proctrace writes them, with its type and its meaning. It exists so that
//! the format is spelled once: the writer ([`crate::sink::jsonl`]) takes its key bytes from
//! here, the reader ([`crate::input::jsonl`]) its key table, its name lookup and the laid-out
//! key lists of its fast path, and `docs/json-lines.md` is this module's [`markdown`] (a test
//! compares them). Tests check that the writer emits exactly the keys declared here, in this
//! order, and that every declared key is emitted by some line.
//!
//! Only names, types and words: no I/O and no formatting of values, and never a dependency on
//! `sink/` or `input/` (both depend on this).
//!
//! The writer keeps its own code for each event (which keys a record has depends on it: `code`
//! or `signal`, one key per mode of `start`), using [`Key::lead`] for every key it writes; a
//! writer driven by this table would pay a dispatch per key and still need that logic, so the
//! table is checked against the writer's output instead of generating it.

/// Declares every key: the enum, its names, the bytes that lead to a value, and the list.
macro_rules! keys {
    ($($v:ident = $name:literal,)*) => {
        /// A key of a JSON Lines line (the same name means the same slot in every event; what it
        /// holds is said per event, in [`EVENTS`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Key {
            $(#[doc = concat!("`", $name, "`")] $v,)*
        }

        impl Key {
            /// Every key, in declaration order (`Key::ALL[k as usize] == k`).
            pub const ALL: &'static [Key] = &[$(Key::$v,)*];

            /// The key's name on the line.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Key::$v => $name,)*
                }
            }

            /// `,"name":`, the bytes that follow the value before it and lead to this key's value,
            /// as the writer writes them (no space).
            pub const fn lead(self) -> &'static str {
                match self {
                    $(Key::$v => concat!(",\"", $name, "\":"),)*
                }
            }
        }
    };
}

keys! {
    Event = "event",
    Ts = "ts",
    Pid = "pid",
    Ppid = "ppid",
    PreExisting = "pre_existing",
    Daemon = "daemon",
    Comm = "comm",
    CommBase64 = "comm_base64",
    Argv = "argv",
    ArgvBase64 = "argv_base64",
    Filename = "filename",
    FilenameBase64 = "filename_base64",
    Exe = "exe",
    ExeBase64 = "exe_base64",
    Cwd = "cwd",
    CwdBase64 = "cwd_base64",
    Uid = "uid",
    Code = "code",
    Signal = "signal",
    Core = "core",
    ExitLost = "exit_lost",
    Background = "background",
    State = "state",
    TRel = "t_rel",
    Count = "count",
    Ruid = "ruid",
    Euid = "euid",
    Rgid = "rgid",
    Egid = "egid",
    Tracer = "tracer",
    Duration = "duration",
    Thread = "thread",
    Category = "category",
    Label = "label",
    Msg = "msg",
    Key = "key",
    Name = "name",
    Nesting = "nesting",
    Value = "value",
    Intervals = "intervals",
    Total = "total",
    Min = "min",
    Max = "max",
    PerThread = "per_thread",
    Tool = "tool",
    Version = "version",
    Backend = "backend",
    Refused = "refused",
    WallOffset = "wall_offset",
    Mode = "mode",
    Capture = "capture",
    Inputs = "inputs",
    Root = "root",
    Processes = "processes",
    Execs = "execs",
    ExecsWithArgv = "execs_with_argv",
    Exits = "exits",
    Lost = "lost",
    Recovered = "recovered",
    ExitsLost = "exits_lost",
    Rejected = "rejected",
    Overflows = "overflows",
    SocketDrops = "socket_drops",
    KernelEvents = "kernel_events",
    Notes = "notes",
    NotesUnmatched = "notes_unmatched",
    NotesDropped = "notes_dropped",
    Usage = "usage",
    UsageLost = "usage_lost",
    UsageIncomplete = "usage_incomplete",
    Untraced = "untraced",
    Filtered = "filtered",
    ArgvReader = "argv_reader",
    TracerCpu = "tracer_cpu",
    CpuUserS = "cpu_user_s",
    CpuSysS = "cpu_sys_s",
    MaxRssKib = "max_rss_kib",
    ReadChars = "read_chars",
    WriteChars = "write_chars",
    ReadBytes = "read_bytes",
    WriteBytes = "write_bytes",
    CancelledWriteBytes = "cancelled_write_bytes",
    CtxSwitches = "ctx_switches",
    CpuDelayS = "cpu_delay_s",
    IoDelayS = "io_delay_s",
    Path = "path",
    PathBase64 = "path_base64",
    Access = "access",
    To = "to",
    ToBase64 = "to_base64",
    Files = "files",
    Daemons = "daemons",
    FilesDropped = "files_dropped",
    FilesLost = "files_lost",
}

/// The longest key name (the lookup's table has a row per length up to it).
const MAX_KEY_LEN: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < Key::ALL.len() {
        let l = Key::ALL[i].name().len();
        if l > n {
            n = l;
        }
        i += 1;
    }
    n
};

/// The keys sorted by name length, and for each length where its keys begin in that order:
/// built at compile time from [`Key::ALL`], so [`Key::of`] compares a name with the few keys
/// of its length only (as a hand-written `match` on the length did).
const BY_LEN: ([Key; Key::ALL.len()], [u8; MAX_KEY_LEN + 2]) = {
    let mut keys = [Key::Event; Key::ALL.len()];
    let mut starts = [0u8; MAX_KEY_LEN + 2];
    let mut n = 0;
    let mut len = 0;
    while len <= MAX_KEY_LEN {
        starts[len] = n as u8;
        let mut i = 0;
        while i < Key::ALL.len() {
            if Key::ALL[i].name().len() == len {
                keys[n] = Key::ALL[i];
                n += 1;
            }
            i += 1;
        }
        len += 1;
    }
    starts[MAX_KEY_LEN + 1] = n as u8;
    (keys, starts)
};
const _: () = assert!(Key::ALL.len() < 256, "BY_LEN's starts are bytes");

impl Key {
    /// The key named `name` (escapes already decoded), if there is one.
    #[inline]
    pub fn of(name: &str) -> Option<Key> {
        let (keys, starts) = &BY_LEN;
        let len = name.len();
        if len > MAX_KEY_LEN {
            return None;
        }
        let of_len = keys.get(starts[len] as usize..starts[len + 1] as usize)?;
        of_len.iter().copied().find(|k| k.name() == name)
    }
}

/// Declares every event name: the enum, its names and the list.
macro_rules! events {
    ($($v:ident = $name:literal,)*) => {
        /// What a line is: the value of its `event` key.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventName {
            $(#[doc = concat!("`", $name, "`")] $v,)*
        }

        impl EventName {
            /// Every event, in the order of [`EVENTS`].
            pub const ALL: &'static [EventName] = &[$(EventName::$v,)*];

            /// The name on the line.
            pub const fn name(self) -> &'static str {
                match self {
                    $(EventName::$v => $name,)*
                }
            }

            /// `{"event":"name","ts":`, how the writer begins the line.
            pub const fn head(self) -> &'static str {
                match self {
                    $(EventName::$v => concat!("{\"event\":\"", $name, "\",\"ts\":"),)*
                }
            }

            /// The event named `name` (escapes already decoded), if there is one.
            #[inline]
            pub fn of(name: &str) -> Option<EventName> {
                match name {
                    $($name => Some(EventName::$v),)*
                    _ => None,
                }
            }
        }
    };
}

events! {
    Start = "start",
    Fork = "fork",
    Exec = "exec",
    Exit = "exit",
    Background = "background",
    Lost = "lost",
    Uid = "uid",
    Gid = "gid",
    Setsid = "setsid",
    Ptrace = "ptrace",
    Comm = "comm",
    Region = "region",
    Data = "data",
    Timer = "timer",
    Counter = "counter",
    File = "file",
    End = "end",
}

impl EventName {
    /// This event's declaration.
    pub fn schema(self) -> &'static EventSchema {
        &EVENTS[self as usize]
    }
}

/// What a key's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// A string.
    Str,
    /// An integer.
    Int,
    /// Seconds, not negative, written with nine decimals (exact nanoseconds).
    Seconds,
    /// Seconds that may be negative, written with nine decimals.
    SignedSeconds,
    /// `true` or `false`.
    Bool,
    /// An array of strings.
    Strings,
    /// `{"voluntary":N,"involuntary":N}`: two integers.
    ContextSwitches,
    /// Any JSON value.
    Json,
    /// The exact bytes of the field before it, in standard base64 (RFC 4648, padded), when
    /// they are not UTF-8 (the field itself holds them with U+FFFD for each bad sequence).
    Base64,
    /// The exact bytes of each word of the `argv` before it: an array as long as `argv`, each
    /// entry the word's bytes in base64 or `null` where the word is exact as written.
    Base64Words,
}

impl Type {
    /// How the reference names it.
    pub const fn words(self) -> &'static str {
        match self {
            Type::Str => "string",
            Type::Int => "integer",
            Type::Seconds => "seconds",
            Type::SignedSeconds => "seconds (signed)",
            Type::Bool => "true/false",
            Type::Strings => "array of strings",
            Type::ContextSwitches => "object",
            Type::Json => "any JSON",
            Type::Base64 => "base64 string",
            Type::Base64Words => "array of base64 strings and nulls",
        }
    }
}

/// One key of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The key.
    pub key: Key,
    /// Its value's type.
    pub ty: Type,
    /// The value may be `null` (else the key is left out when there is nothing to say).
    pub null: bool,
    /// Every line of the event has it.
    pub always: bool,
    /// What it says, one line of Markdown.
    pub doc: &'static str,
    /// [`Key::lead`] of `key`.
    pub lead: &'static str,
}

/// A key every line of its event has.
const fn always(key: Key, ty: Type, doc: &'static str) -> Field {
    Field {
        key,
        ty,
        null: false,
        always: true,
        doc,
        lead: key.lead(),
    }
}

/// A key written only when there is something to say.
const fn opt(key: Key, ty: Type, doc: &'static str) -> Field {
    Field {
        always: false,
        ..always(key, ty, doc)
    }
}

impl Field {
    /// The same field, its value possibly `null`.
    const fn or_null(self) -> Field {
        Field { null: true, ..self }
    }
}

/// One event: its name, what it says, and its keys in the order the writer writes them.
#[derive(Debug)]
pub struct EventSchema {
    /// The event.
    pub name: EventName,
    /// What a line of it says, Markdown.
    pub doc: &'static str,
    /// Its keys, in the writer's order (`event` first, then `ts`).
    pub fields: &'static [Field],
}

impl EventSchema {
    /// The declaration of `key` in this event.
    pub fn field(&self, key: Key) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.key == key)
    }
}

use Type::{Base64, Base64Words, Bool, ContextSwitches, Int, Json, Seconds, SignedSeconds, Str, Strings};

const EVENT: Field = always(Key::Event, Str, "what the line is: the event's name");
const TS: Field = always(Key::Ts, Seconds, "when, on the kernel's `CLOCK_MONOTONIC`");
const PID: Field = always(Key::Pid, Int, "the process (its thread group id)");
const PPID: Field = always(Key::Ppid, Int, "its parent at fork");

/// The keys a process's `exit` line carries for what it cost (`docs/outputs.md`, "What each process cost"),
/// after those of the exit itself. Written when the cost was measured.
const COST: [Field; 11] = [
    opt(
        Key::CpuUserS,
        Seconds,
        "CPU in user mode, all threads summed (children not included); the mark that the cost was measured",
    ),
    opt(Key::CpuSysS, Seconds, "CPU in kernel mode, all threads summed"),
    opt(
        Key::MaxRssKib,
        Int,
        "KiB: peak resident memory of the address space it exited with (`VmHWM`)",
    ),
    opt(
        Key::ReadChars,
        Int,
        "bytes read through read-like calls, pipes and terminals included (`rchar` of `/proc/PID/io`)",
    ),
    opt(
        Key::WriteChars,
        Int,
        "bytes written through write-like calls (`wchar` of `/proc/PID/io`)",
    ),
    opt(Key::ReadBytes, Int, "bytes read from storage"),
    opt(Key::WriteBytes, Int, "bytes dirtied for storage"),
    opt(
        Key::CancelledWriteBytes,
        Int,
        "bytes dirtied, then truncated away before writeback",
    ),
    opt(
        Key::CtxSwitches,
        ContextSwitches,
        "context switches: `{\"voluntary\":N,\"involuntary\":N}`",
    ),
    opt(
        Key::CpuDelayS,
        Seconds,
        "runnable but waiting for a CPU, all threads summed (when known)",
    ),
    opt(
        Key::IoDelayS,
        Seconds,
        "waiting for block I/O (connector only, and only with `sysctl kernel.task_delayacct=1`)",
    ),
];

/// The keys of `ctx_switches`' object, in the writer's order.
pub const CTX_SWITCHES_KEYS: [&str; 2] = ["voluntary", "involuntary"];

/// `exit`: the exit's own keys, then [`COST`].
const EXIT_FIELDS: [Field; 12 + COST.len()] = {
    let own = [
        EVENT,
        TS,
        PID,
        PPID,
        opt(
            Key::Code,
            Int,
            "exit code (`exit(2)`), when it exited; `null` with `exit_lost`",
        )
        .or_null(),
        opt(Key::Signal, Int, "the signal that killed it, when one did"),
        opt(
            Key::Core,
            Bool,
            "with `signal`: whether it dumped core (`false`: a core-dumping signal that left no core)",
        ),
        opt(
            Key::ExitLost,
            Bool,
            "`true`: its exit event was lost and pid reuse revealed it (no status)",
        ),
        opt(Key::Duration, Seconds, "fork to exit"),
        opt(Key::Background, Bool, "`true`: it outlived the traced command"),
        opt(
            Key::Comm,
            Str,
            "its name when it exited (the kernel's: taskstats `ac_comm`, or `/proc` at the ptrace exit stop), \
             when it differs from the name its last `exec`, `comm` or `fork` line gave",
        ),
        opt(Key::CommBase64, Base64, EXACT_BYTES),
    ];
    let mut all = [EVENT; 12 + COST.len()];
    let mut i = 0;
    while i < own.len() {
        all[i] = own[i];
        i += 1;
    }
    while i < all.len() {
        all[i] = COST[i - own.len()];
        i += 1;
    }
    all
};

/// What a `*_base64` key says.
const EXACT_BYTES: &str = "only when the field before is not UTF-8: its exact bytes (see [Bytes that are not UTF-8](#bytes-that-are-not-utf-8))";

/// Every event, in the order of [`EventName::ALL`].
pub const EVENTS: &[EventSchema] = &[
    EventSchema {
        name: EventName::Start,
        doc: "The first line: what made the file. One key follows `mode` for each mode.",
        fields: &[
            EVENT,
            TS,
            always(Key::Tool, Str, "`proctrace`"),
            always(Key::Version, Str, "proctrace's version"),
            opt(Key::Backend, Str, "`ebpf`, `connector` or `ptrace`"),
            opt(
                Key::Refused,
                Strings,
                "`run`/`watch` with `--backend auto`: each backend tried before this one, as `name: why it was refused`, in the order tried (absent when the first one ran)",
            ),
            opt(Key::Files, Bool, "`true`: `run --files` or `watch -p --files`, the trace has `file` lines"),
            opt(
                Key::Daemons,
                Json,
                "`run --include-daemons`: the daemons found running whose new work was followed, `[{\"daemon\":\"sccache\",\"pid\":4242}]` (`daemon`: the kind, by its client's name); each is in the trace, as a `fork` line with `daemon`, only if it started a process during the run",
            ),
            always(
                Key::WallOffset,
                SignedSeconds,
                "add to any `ts` for Unix wall time (UTC)",
            ),
            always(Key::Mode, Str, "`run`, `watch`, `replay` or `analyze`"),
            opt(Key::Argv, Strings, "`run`: the traced command"),
            opt(Key::ArgvBase64, Base64Words, EXACT_BYTES),
            opt(Key::Root, Int, "`watch -p`: the process watched"),
            opt(Key::Capture, Str, "`replay`: the capture replayed"),
            opt(Key::Inputs, Strings, "`analyze`: the files read"),
        ],
    },
    EventSchema {
        name: EventName::Fork,
        doc: "A process was forked (or found already running).",
        fields: &[
            EVENT,
            always(
                Key::Ts,
                Seconds,
                "when it was forked; `null` when its fork was not seen (a process found through `/proc`, or one already running whose start is unknown)",
            )
            .or_null(),
            PID,
            PPID,
            opt(
                Key::PreExisting,
                Bool,
                "`true`: already running when `watch -p` started (`ts`: its start, `null` when unknown), or a process of a daemon `run --include-daemons` followed (`ts`: its start, not before the run's)",
            ),
            opt(
                Key::Daemon,
                Str,
                "`run --include-daemons`: this process is a daemon (its kind: `sccache`, `bazel`, `buck2`, `gradle`, `docker`, `nerdctl`, `podman`), a node of its own, not under its `ppid`: what it started during the run is under it (`ts`: when the run began following it)",
            ),
            opt(Key::Comm, Str, "its name, inherited from the parent"),
            opt(Key::CommBase64, Base64, EXACT_BYTES),
        ],
    },
    EventSchema {
        name: EventName::Exec,
        doc: "A process ran a program (`execve`).",
        fields: &[
            EVENT,
            TS,
            PID,
            PPID,
            always(
                Key::Argv,
                Strings,
                "the program's arguments; `null` when the process was gone before they could be read",
            )
            .or_null(),
            opt(Key::ArgvBase64, Base64Words, EXACT_BYTES),
            opt(
                Key::Filename,
                Str,
                "the path the exec was given, as the caller wrote it (relative to its working directory when it has no leading `/`): a script's own path where `argv` starts with its interpreter; only the eBPF backend knows it (absent elsewhere)",
            ),
            opt(Key::FilenameBase64, Base64, EXACT_BYTES),
            opt(
                Key::Exe,
                Str,
                "the executable's path (a script's interpreter), as `/proc/PID/exe` gives it (` (deleted)` after it when the file was deleted)",
            ),
            opt(Key::ExeBase64, Base64, EXACT_BYTES),
            opt(Key::Cwd, Str, "its working directory, as `/proc/PID/cwd` gives it"),
            opt(Key::CwdBase64, Base64, EXACT_BYTES),
            opt(Key::Uid, Int, "effective user id (the owner of `/proc/PID`)"),
            opt(Key::Comm, Str, "its name after the exec"),
            opt(Key::CommBase64, Base64, EXACT_BYTES),
        ],
    },
    EventSchema {
        name: EventName::Exit,
        doc: "A process exited, with what it cost when that was measured.",
        fields: &EXIT_FIELDS,
    },
    EventSchema {
        name: EventName::Background,
        doc: "A process still running when the traced command exited was released.",
        fields: &[
            EVENT,
            TS,
            PID,
            PPID,
            always(Key::State, Str, "`ready`, `timeout` or `error`"),
            opt(Key::TRel, Seconds, "its age when released"),
            always(Key::Argv, Strings, "its last program's arguments").or_null(),
            opt(Key::ArgvBase64, Base64Words, EXACT_BYTES),
        ],
    },
    EventSchema {
        name: EventName::Lost,
        doc: "Events the kernel dropped.",
        fields: &[
            EVENT,
            always(
                Key::Ts,
                Seconds,
                "when the loss was noticed; `null` when only the socket's drop counter knew",
            )
            .or_null(),
            always(Key::Count, Int, "how many events"),
        ],
    },
    EventSchema {
        name: EventName::Uid,
        doc: "A process changed its user ids.",
        fields: &[
            EVENT,
            TS,
            PID,
            PPID,
            always(Key::Ruid, Int, "real user id"),
            always(Key::Euid, Int, "effective user id"),
        ],
    },
    EventSchema {
        name: EventName::Gid,
        doc: "A process changed its group ids.",
        fields: &[
            EVENT,
            TS,
            PID,
            PPID,
            always(Key::Rgid, Int, "real group id"),
            always(Key::Egid, Int, "effective group id"),
        ],
    },
    EventSchema {
        name: EventName::Setsid,
        doc: "A process started a new session (`setsid`).",
        fields: &[EVENT, TS, PID, PPID],
    },
    EventSchema {
        name: EventName::Ptrace,
        doc: "A process was attached to (or detached from) by a tracer.",
        fields: &[
            EVENT,
            TS,
            PID,
            PPID,
            always(Key::Tracer, Int, "the tracer's pid; 0 = detached"),
        ],
    },
    EventSchema {
        name: EventName::Comm,
        doc: "A process changed its name (`prctl(PR_SET_NAME)`, a thread's name).",
        fields: &[
            EVENT,
            TS,
            PID,
            PPID,
            opt(Key::Comm, Str, "the new name"),
            opt(Key::CommBase64, Base64, EXACT_BYTES),
        ],
    },
    EventSchema {
        name: EventName::Region,
        doc: "A region the process reported through Trace2 (`run --trace2`, or a Trace2 input), \
              written when it ends (possibly after the process's `exit` line).",
        fields: &[
            EVENT,
            always(Key::Ts, Seconds, "its start"),
            PID,
            PPID,
            always(Key::Duration, Seconds, "start to end"),
            always(Key::Thread, Str, "the Trace2 thread"),
            always(Key::Category, Str, "its category"),
            always(Key::Label, Str, "its label"),
            always(
                Key::Nesting,
                Int,
                "depth in its thread (1 = top level)",
            ),
            opt(Key::Msg, Str, "its message"),
        ],
    },
    EventSchema {
        name: EventName::Data,
        doc: "A value the process reported through Trace2 (`data`, `data_json`).",
        fields: &[
            EVENT,
            TS,
            PID,
            PPID,
            always(Key::Thread, Str, "the Trace2 thread"),
            always(Key::Category, Str, "its category"),
            always(Key::Key, Str, "its key"),
            always(Key::Nesting, Int, "depth in its thread (1 = top level)"),
            always(
                Key::Value,
                Json,
                "a string, or the JSON of a `data_json` as it was reported",
            ),
        ],
    },
    EventSchema {
        name: EventName::Timer,
        doc: "A Trace2 timer the process reported (`timer`, `th_timer`).",
        fields: &[
            EVENT,
            TS,
            PID,
            PPID,
            always(Key::Thread, Str, "the Trace2 thread"),
            always(Key::Category, Str, "its category"),
            always(Key::Name, Str, "its name"),
            always(Key::Nesting, Int, "depth in its thread (1 = top level)"),
            always(Key::Intervals, Int, "how many intervals it timed"),
            always(Key::Total, Seconds, "their sum"),
            always(Key::Min, Seconds, "the shortest"),
            always(Key::Max, Seconds, "the longest"),
            opt(Key::PerThread, Bool, "`true`: one thread's (git's `th_timer`)"),
        ],
    },
    EventSchema {
        name: EventName::Counter,
        doc: "A Trace2 counter the process reported (`counter`, `th_counter`).",
        fields: &[
            EVENT,
            TS,
            PID,
            PPID,
            always(Key::Thread, Str, "the Trace2 thread"),
            always(Key::Category, Str, "its category"),
            always(Key::Name, Str, "its name"),
            always(Key::Nesting, Int, "depth in its thread (1 = top level)"),
            always(Key::Count, Int, "its value"),
            opt(
                Key::PerThread,
                Bool,
                "`true`: one thread's (git's `th_counter`)",
            ),
        ],
    },
    EventSchema {
        name: EventName::File,
        doc: "A file the process used (`run --files`): the first time of each path and access \
              (each rename), possibly after the process's `exit` line.",
        fields: &[
            EVENT,
            always(
                Key::Ts,
                Seconds,
                "when proctrace learned of it (fanotify: within milliseconds after the access)",
            ),
            PID,
            PPID,
            always(Key::Path, Str, "the absolute path"),
            opt(Key::PathBase64, Base64, EXACT_BYTES),
            always(
                Key::Access,
                Str,
                "`read` (opened for reading only), `write` (opened for writing), `create`, `rename` or `delete`",
            ),
            opt(Key::To, Str, "`rename`: the new path"),
            opt(Key::ToBase64, Base64, EXACT_BYTES),
        ],
    },
    EventSchema {
        name: EventName::End,
        doc: "The last line: the totals (a file from a killed proctrace has none).",
        fields: &[
            EVENT,
            TS,
            opt(Key::Pid, Int, "the traced command (`run`)"),
            opt(Key::Code, Int, "the traced command's exit code"),
            opt(Key::Signal, Int, "the signal that killed the traced command"),
            always(Key::Processes, Int, "processes seen"),
            always(Key::Execs, Int, "execs seen"),
            always(Key::ExecsWithArgv, Int, "execs whose argv was read"),
            always(Key::Exits, Int, "exits seen"),
            always(
                Key::Background,
                Int,
                "processes still running when the traced command exited",
            ),
            always(Key::Lost, Int, "events the kernel dropped"),
            always(
                Key::Recovered,
                Int,
                "processes taken in from `/proc` after their fork event was lost",
            ),
            always(
                Key::ExitsLost,
                Int,
                "processes whose exit was lost (closed without a status)",
            ),
            always(Key::Rejected, Int, "datagrams not from the kernel"),
            always(Key::Overflows, Int, "times the connector's socket overflowed"),
            always(
                Key::SocketDrops,
                Int,
                "the kernel's own drop counter (equal to `lost` when nothing else failed)",
            ),
            always(
                Key::KernelEvents,
                Int,
                "events received, before scoping (ptrace: stops handled)",
            ),
            opt(
                Key::Notes,
                Int,
                "with Trace2 notes: regions and data attached to their process",
            ),
            opt(
                Key::NotesUnmatched,
                Int,
                "with Trace2 notes: about a process outside the traced tree (left out)",
            ),
            opt(
                Key::NotesDropped,
                Int,
                "when a process sent more Trace2 notes than proctrace keeps (50,000 a process, 500,000 in all): how many were not kept (these lines have them; the summaries, the Trace2 and Chrome outputs do not)",
            ),
            opt(
                Key::Usage,
                Int,
                "when costs were measured: processes with figures",
            ),
            opt(
                Key::UsageLost,
                Int,
                "when costs were measured: taskstats exit records the kernel dropped (not the connector's `lost`)",
            ),
            opt(
                Key::UsageIncomplete,
                Int,
                "when costs were measured: processes left without figures because one thread's record was lost",
            ),
            opt(
                Key::Untraced,
                Int,
                "when the capture found processes it never saw start (ptrace: a `clone(CLONE_UNTRACED)` child and its tree): how many; the trace is incomplete",
            ),
            opt(
                Key::Files,
                Int,
                "`--files`: the `file` lines (file uses kept)",
            ),
            opt(
                Key::FilesDropped,
                Int,
                "`--files`: file uses not kept, over the caps (100,000 per process, 2,000,000 in all)",
            ),
            opt(
                Key::FilesLost,
                Int,
                "`--files`: file events the kernel dropped (fanotify's queue overflowed); the file lists are incomplete",
            ),
            opt(
                Key::Filtered,
                Int,
                "facts a `watch` filter kept out (only with a filter)",
            ),
            opt(Key::Backend, Str, "`ebpf`, `connector` or `ptrace`"),
            opt(
                Key::Refused,
                Strings,
                "`run`/`watch` with `--backend auto`: each backend tried before this one, as `name: why it was refused`, in the order tried (absent when the first one ran)",
            ),
            opt(
                Key::ArgvReader,
                Str,
                "how argv was read: `realtime`, `nice`, `normal`, `exec-stop` or `off`",
            ),
            opt(Key::TracerCpu, Seconds, "CPU proctrace itself used"),
        ],
    },
];

/// The reference tables of `docs/json-lines.md`: one per event, its keys in the writer's order
/// (the text between its `BEGIN schema` and `END schema` marks is exactly this).
pub fn markdown() -> String {
    let mut out = String::new();
    for e in EVENTS {
        out.push_str(&format!("\n#### `{}`\n\n{}\n\n", e.name.name(), e.doc));
        out.push_str("| key | type | present | meaning |\n|---|---|---|---|\n");
        for f in e.fields {
            let ty = if f.null {
                format!("{} or `null`", f.ty.words())
            } else {
                f.ty.words().to_string()
            };
            let doc = if f.key == Key::Event {
                format!("`\"{}\"`", e.name.name())
            } else {
                f.doc.to_string()
            };
            let present = if f.always { "always" } else { "optional" };
            out.push_str(&format!("| `{}` | {ty} | {present} | {doc} |\n", f.key.name()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lists are in their enums' order, every name appears once, and the lookups find
    /// every name and nothing else.
    #[test]
    fn names_are_unique_and_found() {
        for (i, k) in Key::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
            assert_eq!(Key::of(k.name()), Some(*k));
            assert_eq!(k.lead(), format!(",\"{}\":", k.name()));
        }
        let mut names: Vec<_> = Key::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Key::ALL.len());
        for (i, e) in EventName::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i);
            assert_eq!(EVENTS[i].name, *e);
            assert_eq!(EventName::of(e.name()), Some(*e));
            assert_eq!(e.head(), format!("{{\"event\":\"{}\",\"ts\":", e.name()));
        }
        assert_eq!(EVENTS.len(), EventName::ALL.len());
        for bad in [
            "",
            "Event",
            "even",
            "events",
            "tss",
            "cpu_user",
            "cancelled_write_bytes_",
            "x".repeat(300).as_str(),
        ] {
            assert_eq!(Key::of(bad), None, "{bad}");
            assert_eq!(EventName::of(bad), None, "{bad}");
        }
    }

    /// Every event begins `event`, `ts`; names no key twice; uses every key somewhere; and
    /// the lead bytes are the key's.
    #[test]
    fn every_event_is_well_formed() {
        let mut used = std::collections::HashSet::new();
        for e in EVENTS {
            assert_eq!(e.fields[0].key, Key::Event, "{:?}", e.name);
            assert_eq!(e.fields[1].key, Key::Ts, "{:?}", e.name);
            assert!(e.fields[0].always && e.fields[1].always);
            let mut keys: Vec<_> = e.fields.iter().map(|f| f.key.name()).collect();
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), e.fields.len(), "{:?} names a key twice", e.name);
            for f in e.fields {
                assert_eq!(f.lead, f.key.lead());
                assert!(!f.doc.is_empty() && !f.doc.contains('\n') && !f.doc.contains('|'));
                used.insert(f.key);
            }
        }
        let unused: Vec<_> = Key::ALL.iter().filter(|k| !used.contains(k)).collect();
        assert!(unused.is_empty(), "declared but in no event: {unused:?}");
    }

    /// `docs/json-lines.md` holds exactly these tables between its marks, so every key is
    /// documented and nothing is documented that does not exist. `UPDATE_DOCS=1` rewrites them.
    #[test]
    fn the_reference_is_the_schema() {
        const BEGIN: &str = "<!-- BEGIN schema: generated from src/model/jsonl_schema.rs (UPDATE_DOCS=1 cargo test -p proctrace --lib jsonl_schema) -->\n";
        const END: &str = "<!-- END schema -->";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json-lines.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let (Some(b), Some(e)) = (doc.find(BEGIN), doc.find(END)) else {
            panic!("{path} has no schema marks:\n{BEGIN}{END}");
        };
        let (tables, want) = (&doc[b + BEGIN.len()..e], markdown());
        if std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1") {
            let new = format!("{}{want}{}", &doc[..b + BEGIN.len()], &doc[e..]);
            std::fs::write(path, new).unwrap();
            return;
        }
        assert!(
            tables == want,
            "{path} differs from the schema (UPDATE_DOCS=1 cargo test -p proctrace --lib jsonl_schema rewrites it)"
        );
        // And the prose outside the tables names no key that does not exist.
        let prose = format!("{}{}", &doc[..b], &doc[e..]);
        for word in prose.split('`').skip(1).step_by(2) {
            if word.chars().all(|c| c.is_ascii_lowercase() || c == '_') && word.contains('_') {
                assert!(
                    Key::of(word).is_some() || ["data_json", "th_timer", "th_counter"].contains(&word),
                    "docs/json-lines.md names `{word}`, which is no key"
                );
            }
        }
    }
}
