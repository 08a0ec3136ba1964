// SPDX-License-Identifier: GPL-2.0 OR MIT
//
// proctrace's eBPF capture: four BTF tracepoints (tp_btf/sched_process_{fork,exec,exit} and
// tp_btf/task_rename; no kprobes, no fentry, no tracefs) that put each traced task's fork,
// exec, exit and rename in a ring buffer, with what the exec runs copied where it cannot race
// the process's exit: argv from the new image's memory, the exec'd path (bprm->filename), and
// the executable's and working directory's paths, walked up their dentries and mounts as the
// kernel's d_path does for /proc/PID/exe and /proc/PID/cwd. The Rust side is
// src/capture/ebpf.rs; the record layout below is mirrored there (src/capture/ebpf/record.rs)
// and must change with it.
//
// CO-RE: the kernel structures are declared by hand with only the fields read here
// (vmlinux.h is 3 MB); the loader relocates every field access against the running kernel's
// BTF (/sys/kernel/btf/vmlinux). What is used, for a loader to support: field accesses through
// preserve_access_index structs (direct loads and BPF_CORE_READ's bpf_probe_read_kernel), field
// byte offsets (bpf_core_field_offset), a type's size (bpf_core_type_size) and its id in the
// kernel's BTF (bpf_core_type_id_kernel); `const volatile` globals in .rodata; BTF-defined maps;
// bounded loops; one kfunc (bpf_rdonly_cast); a static function in .text as bpf_loop's callback;
// two programs in a section.
//
// Two variants of each program, the same code but for `fast` (PROGRAM() below):
// - on_fork, on_exec, ... (Linux 6.2 and later: bpf_rdonly_cast and bpf_loop): each pointer the
//   tracepoint gives is first cast to an untrusted one, which the verifier lets the program read
//   (a fault reads 0, as bpf_probe_read_kernel) without following trust: since Linux 6.3, each
//   pointer read from a trusted one costs it several searches of the kernel's whole BTF by name
//   (btf_nested_type_is_trusted: ~0.2 ms each here, two thirds of all the verification time).
//   The paths' walk is one step per bpf_loop iteration, checked once whatever the steps.
// - on_fork_old, on_exec_old, ... (Linux 5.8 to 6.1, which have neither; also what the loader
//   falls back to when the kernel refuses the other): pointers read as they are (no searches
//   there) and the walk unrolled, WALK_STEPS of it, each step checked by the verifier.
//
// It must never block, sleep or wake the reader per event: records are written with
// BPF_RB_NO_WAKEUP and the reader polls; only a ring filling up forces a wakeup.
//
// Rebuild with bpf/build.sh (Debian 12's clang); the CI compares the result with the committed
// object, proctrace.bpf.o.

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u32 __be32;
typedef __u16 __be16;
typedef __u32 __wsum;
typedef int pid_t;

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

// Linux 6.2: `obj` as an untrusted pointer to the kernel's type `btf_id` (inlined by the
// verifier: no call is made).
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

// `p` as a T * the verifier does not trust (in the fast variant; as it is in the old one).
#define CAST(fast, p, T) \
	((fast) ? (T *)bpf_rdonly_cast((const void *)(p), bpf_core_type_id_kernel(T)) : (T *)(p))

#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_RINGBUF 27
#define BPF_F_NO_PREALLOC 1
#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_RB_NO_WAKEUP 1
#define BPF_RB_FORCE_WAKEUP 2
#define BPF_RB_AVAIL_DATA 0

// The kernel's structures, only the fields read (names as in the kernel: CO-RE matches by name,
// through the kernel's anonymous unions: dentry's d_name, file's f_path).
typedef struct { int counter; } atomic_t;
typedef struct { unsigned int val; } kuid_t;

typedef struct { unsigned int val; } kgid_t;

struct cred {
	kuid_t uid;
	kgid_t gid;
	kuid_t euid;
	kgid_t egid;
} __attribute__((preserve_access_index));

struct mm_struct {
	unsigned long arg_start;
	unsigned long arg_end;
} __attribute__((preserve_access_index));

struct signal_struct {
	atomic_t live;
	int leader; // a session leader (setsid); never inherited at fork
} __attribute__((preserve_access_index));

struct qstr {
	__u32 len;
	const unsigned char *name;
} __attribute__((preserve_access_index));

struct hlist_bl_node {
	struct hlist_bl_node **pprev;
} __attribute__((preserve_access_index));

struct dentry {
	struct hlist_bl_node d_hash; // unhashed (pprev NULL) and not a root: deleted
	struct dentry *d_parent;     // itself at a filesystem's root
	struct qstr d_name;
} __attribute__((preserve_access_index));

struct vfsmount {
	struct dentry *mnt_root;
} __attribute__((preserve_access_index));

// fs/mount.h: a vfsmount lives inside its mount (container_of).
struct mount {
	struct mount *mnt_parent; // itself for a namespace's root (or a detached mount)
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
} __attribute__((preserve_access_index));

struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
} __attribute__((preserve_access_index));

struct file {
	struct path f_path;
} __attribute__((preserve_access_index));

struct fs_struct {
	struct path root;
	struct path pwd;
} __attribute__((preserve_access_index));

struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct pid_namespace {
	struct ns_common ns;
} __attribute__((preserve_access_index));

struct upid {
	int nr;
	struct pid_namespace *ns;
} __attribute__((preserve_access_index));

struct pid {
	unsigned int level;    // the namespace it was made in: numbers[0..=level]
	struct upid numbers[]; // its number in each namespace, the initial one first
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	int exit_code;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	struct pid *thread_pid;
	struct mm_struct *mm;
	struct fs_struct *fs;
	struct signal_struct *signal;
	const struct cred *real_cred;
	char comm[16];
} __attribute__((preserve_access_index));

struct linux_binprm {
	struct file *file; // what runs: a script's interpreter, as /proc/PID/exe
	const char *filename;
} __attribute__((preserve_access_index));

// Record layout, shared with src/capture/ebpf/record.rs.
#define KIND_FORK 1
#define KIND_EXEC 2
#define KIND_EXIT 3
#define KIND_RENAME 4

#define ARGV_CAP 32768   // argv bytes copied at most (the full length is recorded)
#define FILENAME_CAP 4096 // bprm->filename bytes copied at most, NUL included
#define PATH_CAP 4096     // an exe or cwd path's bytes at most (PATH_MAX, NUL included)
#define NAME_CAP 256      // a path component's bytes at most (NAME_MAX, NUL included)
// Components plus mount crossings walked at most (a deeper path is read from /proc while the
// process lives). The old variant's verifier checks every step, so each costs start-up time
// there (BENCHMARKS.md; -DWALK_STEPS=N to try another); the fast variant's loop is checked
// once, and its bound only caps the time a deep path takes (~40 ns a step).
#ifndef WALK_STEPS
#define WALK_STEPS 32
#endif
#define LOOP_STEPS 1024

struct fork_record {
	__u32 kind;
	__u32 parent_tgid; // the new task's real parent's process
	__u64 ts;          // bpf_ktime_get_ns: CLOCK_MONOTONIC, as the connector's timestamp_ns
	__u32 child_pid;
	__u32 child_tgid;  // != child_pid: a thread (CLONE_THREAD)
	__u32 creator_tgid; // the process that called fork/clone
	__u32 creator_leader; // 1: that process is a session leader (it called setsid)
	__u32 ruid, euid, rgid, egid; // the new task's (its creator's at the fork)
};

struct exit_record {
	__u32 kind;
	__u32 pid;
	__u64 ts;
	__u32 tgid;
	__u32 exit_code;   // the wait status (task->exit_code), as the connector's
	__u32 parent_tgid;
	__u32 flags;       // EXIT_GROUP_DEAD, EXIT_SESSION_LEADER
	__u32 ruid, euid, rgid, egid;
};

// A thread renamed (prctl PR_SET_NAME, /proc/TID/comm, and the exec's own renaming, which the
// reader tells apart: it is followed by that process's exec with the same name).
struct rename_record {
	__u32 kind;
	__u32 pid;
	__u64 ts;
	__u32 tgid;
	__u32 pad;
	char comm[16];
};

#define EXIT_GROUP_DEAD 1     // the process's last task
#define EXIT_SESSION_LEADER 2 // the process is a session leader

#define EXEC_ARGV_READ_FAILED 1
#define EXEC_SESSION_LEADER 2
// Per path (exe: these, cwd: these << 8): the file or directory was deleted (d_unlinked, or a
// file with no name in any directory, as a memfd: /proc says " (deleted)" after its path), or
// the path is not whole (longer than PATH_CAP, deeper than WALK_STEPS, a name that could not be
// read, a dentry cut off from its mount's root): then its bytes are not to be used.
#define PATH_DELETED 4
#define PATH_INCOMPLETE 8
#define CWD_SHIFT 8

struct exec_record {
	__u32 kind;
	__u32 tgid;
	__u64 ts;
	__u32 old_pid;      // the exec'ing thread's id before the exec (!= tgid: a non-leader's exec; the kernel's number)
	__u32 parent_tgid;
	__u32 euid;         // after the exec (a set-user-ID program's owner)
	__u32 flags;
	__u64 argv_full;    // arg_end - arg_start: more than argv_len means truncated
	__u32 argv_len;     // argv bytes, after the cwd
	__u32 filename_len; // bprm->filename bytes (no NUL) at the start of data
	char comm[16];
	__u32 ruid, rgid, egid, pad;
	__u32 exe_len;      // the executable's path, after the filename
	__u32 cwd_len;      // the working directory's path, after the executable's
	__u32 walk_flags;   // (a path's flags before they join flags: not for the reader)
	__u32 pad2;
	// filename, exe, cwd, argv; room for a name read past PATH_CAP before it is found too long
	__u8 data[FILENAME_CAP + 2 * PATH_CAP + ARGV_CAP + NAME_CAP];
};

// A path's walk, kept in the map rather than in registers (see MEM below).
struct walk {
	__u64 d, mnt, vfsmnt, mnt_root; // where the walk is: a dentry and its mount
	__u64 parent;                   // where the walk goes next: d's parent or a mountpoint
	__u64 up;                       // the parent mount
	__u64 name;                     // d's name
	__u32 name_len, pad;            // its length (the kernel's size: read whole)
	__u64 used;                     // the path's length so far
	__u64 leaf_hashed, leaf_parent; // the first dentry's d_hash.pprev and d_parent
	__u32 state;                    // WALKING, or WHOLE when it got to the root
	__u32 pseudo;                   // the path is a file's in no directory
	__u64 self_dentry, self_mnt;    // where it stops: proctrace's root (the fast walk's)
};
#define WALKING 0
#define WHOLE 1

// An exec record being made, its paths' walk, and room to make a path in.
// The walk first: its fields are then one instruction away from the value's start (an
// instruction's offset is 16 bits), which keeps the walk's loop small.
struct exec_scratch {
	struct walk w;
	__u8 tmp[PATH_CAP + NAME_CAP]; // a path, from its end at PATH_CAP backwards
	struct exec_record r;
};

const volatile __u32 whole_system = 0; // watch: every process; run: only the traced tree

// proctrace's pid namespace's inode number (/proc/self/ns/pid), 0 for the initial one. In
// another, every id is reported as proctrace sees it (the task's number in that namespace), and
// a process that has none there (outside it) is not reported at all.
const volatile __u32 pidns_inum = 0;

// proctrace itself, by its id as it sees it: its root is where /proc's paths begin for it.
const volatile __u32 self_tgid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

// Processes in the traced tree (run): proctrace itself, then every process created by one of
// them, put in at fork before the child can run.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 17);
	__type(key, __u32);
	__type(value, __u32);
} traced SEC(".maps");

// [0]: records the ring had no room for; [1]: processes the traced map had no room for.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

// Room to build an exec record in, one per CPU (the loader sets max_entries to the CPU count;
// a per-CPU array's value is limited to 32 KiB).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct exec_scratch);
} scratch SEC(".maps");

// What the programs learn as they run.
struct learned {
	// proctrace's root (taken at its first fork: the self-test's), where a path's walk stops as
	// d_path stops at the reading process's root; 0 before.
	__u64 root_dentry, root_mnt;
	// The level of proctrace's pid namespace plus one (0: not found yet).
	__u64 pidns_level;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct learned);
} learned SEC(".maps");

static __always_inline struct learned *learned_value(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&learned, &zero);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

static __always_inline void count_lost(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &which);
	if (n)
		*n += 1;
}

static __always_inline int is_traced(__u32 tgid)
{
	return whole_system || bpf_map_lookup_elem(&traced, &tgid) != 0;
}

// Written without waking the reader; a ring past a quarter full wakes it at once.
static __always_inline __u64 wake_flags(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > (4 << 20) ? BPF_RB_FORCE_WAKEUP
									   : BPF_RB_NO_WAKEUP;
}

#define MAX_PID_NS_LEVEL 32 // include/linux/pid_namespace.h

// The level of proctrace's pid namespace (pidns_inum) learned from `pid`, a task's that is in
// it or below it: its numbers are searched, deepest first (a process of proctrace's namespace
// has it last), and the level kept in `learned`. Done at forks only, until found (the
// self-test's fork finds it): the verifier checks the search in that one program.
static __always_inline void learn_pidns_level(struct pid *pid)
{
	struct learned *l = learned_value();
	if (!pid || !l || l->pidns_level)
		return;
	__u32 level = BPF_CORE_READ(pid, level);
	__u64 numbers = (__u64)pid + bpf_core_field_offset(struct pid, numbers);
	__u64 size = bpf_core_type_size(struct upid);
	for (__u32 i = 0; i < MAX_PID_NS_LEVEL; i++) {
		if (i > level)
			break;
		struct upid *u = (struct upid *)(numbers + (level - i) * size);
		if (BPF_CORE_READ(u, ns, ns.inum) == pidns_inum) {
			l->pidns_level = level - i + 1;
			break;
		}
	}
}

// The number `pid` has in proctrace's pid namespace (pidns_inum), 0 when it has none there
// (or before the namespace's level is learned).
static __always_inline __u32 ns_nr(struct pid *pid)
{
	struct learned *l = learned_value();
	if (!pid || !l || !l->pidns_level)
		return 0;
	__u64 k = l->pidns_level - 1;
	if (k > BPF_CORE_READ(pid, level))
		return 0; // made in a namespace above proctrace's
	__u64 numbers = (__u64)pid + bpf_core_field_offset(struct pid, numbers);
	struct upid *u = (struct upid *)(numbers + k * bpf_core_type_size(struct upid));
	if (BPF_CORE_READ(u, ns, ns.inum) != pidns_inum)
		return 0; // another namespace of the same level
	return BPF_CORE_READ(u, nr);
}

// A task's thread id and process id as proctrace sees them.
static __always_inline __u32 pid_of(struct task_struct *t)
{
	return pidns_inum ? ns_nr(t->thread_pid) : (__u32)t->pid;
}

static __always_inline __u32 tgid_of(struct task_struct *t)
{
	return pidns_inum ? ns_nr(t->group_leader->thread_pid) : (__u32)t->tgid;
}

#define CREDS(r, t)                                                                                \
	do {                                                                                       \
		const struct cred *c = (t)->real_cred;                                             \
		(r)->ruid = c->uid.val;                                                            \
		(r)->euid = c->euid.val;                                                           \
		(r)->rgid = c->gid.val;                                                            \
		(r)->egid = c->egid.val;                                                           \
	} while (0)

// The verifier follows every value a register or the stack holds, and checks the code after a
// branch once for each set of values it can tell apart. With the walks' loops, values kept in
// registers made that grow with every step walked, past its limit of a million instructions
// (20 steps: 40 s). So what the exec's program computes is kept in the map value, which the
// verifier does not follow: MEM() reads and writes it there (the compiler may not keep it in a
// register instead); a value read back is, for the verifier, any value, and bounds are put on
// it with a mask. The exec's program is then checked in ~15,000 instructions, about 200 per
// step of each walk (BENCHMARKS.md has the time).
#define MEM(x) (*(volatile typeof(x) *)&(x))

// Where paths join (a loop's next step, the code after it), the registers hold what each path
// left there, which the verifier compares too, used or not: each path would be checked again
// from there. Zeroing them makes the joining states alike (the compiler keeps what it needs
// across this in the other registers or on the stack).
#define SETTLE()                                                                                   \
	asm volatile("r0 = 0; r1 = 0; r2 = 0; r3 = 0; r4 = 0; r5 = 0; r6 = 0; r7 = 0; r8 = 0" ::: \
		     "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "memory")

// Walks the path (dentry, vfsmnt) and writes it at data[at], as d_path writes it for the
// reading process (proctrace, whose root is (self_dentry, self_mnt)): each component's name
// from the dentry up to its mount's root, then on from the mountpoint in the parent mount,
// until proctrace's root or the namespace's root. It is made backwards, from its end, in
// `tmp`, then copied. Its length goes to *len, its flags (PATH_DELETED: " (deleted)" is left
// to the reader; PATH_INCOMPLETE, with length 0) to *flags.
//
// The old variant: the walk unrolled, its state kept in the map (MEM, SETTLE).
static __always_inline void walk_old(struct exec_scratch *s)
{
	volatile struct walk *w = &s->w;
	for (__u32 i = 0; i < WALK_STEPS; i++) {
		// (Locals for CO-RE: a relocated access must start from a kernel type's pointer.)
		const struct dentry *d = (const void *)w->d;
		const struct mount *m = (const void *)w->mnt;
		// Every test below leads out of the loop but one, a mount's root or a component:
		// those two ways on join at the step's end, where SETTLE makes them alike (each
		// further way on would be checked on its own, every step).
		if (((w->d ^ w->self_dentry) | (w->vfsmnt ^ w->self_mnt)) == 0) {
			w->state = WHOLE; // proctrace's root
			break;
		}
		if (w->d == w->mnt_root) {
			// Up from the mount's root: its mountpoint in the parent mount.
			BPF_CORE_READ_INTO(&w->up, m, mnt_parent);
			if (w->up == w->mnt) {
				w->state = WHOLE; // the namespace's root (or a detached mount's)
				break;
			}
			BPF_CORE_READ_INTO(&w->parent, m, mnt_mountpoint);
			w->mnt = w->up;
			w->vfsmnt = w->up + bpf_core_field_offset(struct mount, mnt);
			const struct vfsmount *v = (const void *)w->vfsmnt;
			BPF_CORE_READ_INTO(&w->mnt_root, v, mnt_root);
		} else {
			// A component: its name, then up to its parent.
			BPF_CORE_READ_INTO(&w->parent, d, d_parent);
			BPF_CORE_READ_INTO(&w->name_len, d, d_name.len);
			BPF_CORE_READ_INTO(&w->name, d, d_name.name);
			if (w->name_len >= NAME_CAP || w->used + w->name_len + 1 >= PATH_CAP)
				break;
			w->used = w->used + w->name_len + 1;
			__u64 pos = (PATH_CAP - w->used) & (PATH_CAP - 1);
			s->tmp[pos] = '/';
			if (bpf_probe_read_kernel(&s->tmp[pos + 1], w->name_len & (NAME_CAP - 1),
						  (const void *)w->name))
				break;
			// A root that is not its mount's: as the leaf (the path's one component), a
			// file in no directory (a memfd), which /proc names "/NAME (deleted)";
			// higher up, a dentry cut off from its mount: no path (below).
			if (w->parent == w->d) {
				w->pseudo = 1;
				w->state = WHOLE;
				break;
			}
		}
		w->d = w->parent;
		SETTLE();
	}
	SETTLE();
}

// bpf_loop's context (on the stack, as bpf_loop wants it): the scratch value, where the walk's
// state is.
struct walk_ctx {
	struct exec_scratch *s;
};

// The fast variant: one step of the same walk, bpf_loop's callback (the verifier checks it
// apart, once). 1 stops the loop.
static long walk_step(__u32 i, void *ctx)
{
	struct exec_scratch *s = ((struct walk_ctx *)ctx)->s;
	struct walk *w = &s->w;
	if (((w->d ^ w->self_dentry) | (w->vfsmnt ^ w->self_mnt)) == 0) {
		w->state = WHOLE; // proctrace's root
		return 1;
	}
	if (w->d == w->mnt_root) {
		// Up from the mount's root: its mountpoint in the parent mount.
		const struct mount *m = CAST(1, w->mnt, struct mount);
		__u64 up = (__u64)m->mnt_parent;
		if (up == w->mnt) {
			w->state = WHOLE; // the namespace's root (or a detached mount's)
			return 1;
		}
		w->parent = (__u64)m->mnt_mountpoint;
		const struct mount *u = CAST(1, up, struct mount);
		w->mnt = up;
		w->vfsmnt = (__u64)&u->mnt;
		w->mnt_root = (__u64)u->mnt.mnt_root;
	} else {
		// A component: its name, then up to its parent.
		const struct dentry *d = CAST(1, w->d, struct dentry);
		__u64 parent = (__u64)d->d_parent;
		__u32 len = d->d_name.len;
		const unsigned char *name = d->d_name.name;
		if (len >= NAME_CAP || w->used + len + 1 >= PATH_CAP)
			return 1;
		w->parent = parent;
		w->name_len = len;
		w->used = w->used + len + 1;
		__u64 pos = (PATH_CAP - w->used) & (PATH_CAP - 1);
		s->tmp[pos] = '/';
		if (bpf_probe_read_kernel(&s->tmp[pos + 1], len & (NAME_CAP - 1), name))
			return 1;
		// A root that is not its mount's (as in walk_old).
		if (parent == w->d) {
			w->pseudo = 1;
			w->state = WHOLE;
			return 1;
		}
	}
	w->d = w->parent;
	return 0;
}

static __always_inline void put_path(struct exec_scratch *s, __u64 at, const void *dentry,
				     const void *vfsmnt, __u64 self_dentry, __u64 self_mnt,
				     __u32 *len, __u32 *flags, const int fast)
{
	volatile struct walk *w = &s->w;
	MEM(*len) = 0;
	MEM(*flags) = PATH_INCOMPLETE;
	if (!dentry || !vfsmnt)
		return;
	w->d = (__u64)dentry;
	w->vfsmnt = (__u64)vfsmnt;
	w->mnt = (__u64)vfsmnt - bpf_core_field_offset(struct mount, mnt);
	// The leaf is deleted when it is unhashed and not a root (d_unlinked).
	if (fast) {
		w->mnt_root = (__u64)((const struct vfsmount *)vfsmnt)->mnt_root;
		w->leaf_hashed = (__u64)((const struct dentry *)dentry)->d_hash.pprev;
		w->leaf_parent = (__u64)((const struct dentry *)dentry)->d_parent;
	} else {
		BPF_CORE_READ_INTO(&w->mnt_root, (const struct vfsmount *)vfsmnt, mnt_root);
		BPF_CORE_READ_INTO(&w->leaf_hashed, (const struct dentry *)dentry, d_hash.pprev);
		BPF_CORE_READ_INTO(&w->leaf_parent, (const struct dentry *)dentry, d_parent);
	}
	w->self_dentry = self_dentry;
	w->self_mnt = self_mnt;
	w->used = 0;
	w->name_len = 0;
	w->state = WALKING;
	w->pseudo = 0;
	if (fast) {
		struct walk_ctx c = {s};
		bpf_loop(LOOP_STEPS, walk_step, &c, 0);
	} else
		walk_old(s);
	if (w->state != WHOLE || (w->pseudo && w->used != w->name_len + 1))
		return;
	if (w->used == 0) {
		s->tmp[PATH_CAP - 1] = '/';
		w->used = 1;
	}
	__u64 used = w->used & (PATH_CAP - 1);
	if (at > FILENAME_CAP + PATH_CAP ||
	    bpf_probe_read_kernel(&s->r.data[at], used, &s->tmp[(PATH_CAP - used) & (PATH_CAP - 1)]))
		return;
	MEM(*len) = used;
	MEM(*flags) = w->pseudo || (!w->leaf_hashed && w->leaf_parent != (__u64)dentry)
			      ? PATH_DELETED
			      : 0;
}

// Each program in its two variants (see the top): NAME (fast: 1) and NAME_old (0), the same
// tracepoint, the same body.
#define PROGRAM(tp, name, body, ...)                                                               \
	SEC("tp_btf/" tp) int BPF_PROG(name, __VA_ARGS__)                                          \
	{                                                                                          \
		return body(ctx, 1);                                                               \
	}                                                                                          \
	SEC("tp_btf/" tp) int BPF_PROG(name##_old, __VA_ARGS__)                                    \
	{                                                                                          \
		return body(ctx, 0);                                                               \
	}

static __always_inline int fork_body(unsigned long long *ctx, const int fast)
{
	struct task_struct *parent = CAST(fast, ctx[0], struct task_struct);
	struct task_struct *child = CAST(fast, ctx[1], struct task_struct);
	if (pidns_inum)
		learn_pidns_level(parent->thread_pid);
	__u32 creator = tgid_of(parent);
	if (!creator || !is_traced(creator))
		return 0;
	__u32 pid = pid_of(child), tgid = tgid_of(child);
	if (!tgid)
		return 0;
	if (creator == self_tgid) {
		// proctrace's root, where the paths' walks stop.
		struct learned *l = learned_value();
		if (l) {
			struct fs_struct *fs = parent->fs;
			l->root_dentry = (__u64)fs->root.dentry;
			l->root_mnt = (__u64)fs->root.mnt;
		}
	}
	if (!whole_system && pid == tgid) {
		__u32 one = 1;
		if (bpf_map_update_elem(&traced, &tgid, &one, BPF_ANY))
			count_lost(1);
	}
	struct fork_record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count_lost(0);
		return 0;
	}
	r->kind = KIND_FORK;
	r->ts = bpf_ktime_get_ns();
	r->parent_tgid = tgid_of(child->real_parent);
	r->child_pid = pid;
	r->child_tgid = tgid;
	r->creator_tgid = creator;
	r->creator_leader = parent->signal->leader != 0;
	CREDS(r, child);
	bpf_ringbuf_submit(r, wake_flags());
	return 0;
}

PROGRAM("sched_process_fork", on_fork, fork_body, struct task_struct *parent,
	struct task_struct *child)

static __always_inline int exec_body(unsigned long long *ctx, const int fast)
{
	struct task_struct *p = CAST(fast, ctx[0], struct task_struct);
	pid_t old_pid = ctx[1];
	struct linux_binprm *bprm = CAST(fast, ctx[2], struct linux_binprm);
	__u32 tgid = tgid_of(p);
	if (!tgid || !is_traced(tgid))
		return 0;
	__u32 cpu = bpf_get_smp_processor_id();
	struct exec_scratch *s = bpf_map_lookup_elem(&scratch, &cpu);
	struct learned *l = learned_value();
	if (!s || !l) {
		count_lost(0);
		return 0;
	}
	struct exec_record *r = &s->r;
	r->kind = KIND_EXEC;
	r->ts = bpf_ktime_get_ns();
	r->tgid = tgid;
	r->old_pid = old_pid;
	r->parent_tgid = tgid_of(p->real_parent);
	{
		const struct cred *c = p->real_cred;
		r->ruid = c->uid.val;
		r->euid = c->euid.val;
		r->rgid = c->gid.val;
		r->egid = c->egid.val;
		r->pad = 0;
	}
	MEM(r->flags) = p->signal->leader ? EXEC_SESSION_LEADER : 0;
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), p->comm);

	long n = bpf_probe_read_kernel_str(r->data, FILENAME_CAP, bprm->filename);
	MEM(r->filename_len) = n > 0 ? n - 1 : 0;

	// Where proctrace's paths begin (0 before its first fork: the namespace's root).
	__u64 self_dentry = l->root_dentry, self_mnt = l->root_mnt;
	// Offsets in data, each part's length read back from the map and bounded (MEM).
#define FILENAME_END (MEM(r->filename_len) & (FILENAME_CAP - 1))
#define EXE_END (FILENAME_END + (MEM(r->exe_len) & (PATH_CAP - 1)))
#define CWD_END (EXE_END + (MEM(r->cwd_len) & (PATH_CAP - 1)))

	struct file *file = bprm->file;
	put_path(s, FILENAME_END, file->f_path.dentry, file->f_path.mnt, self_dentry, self_mnt,
		 &r->exe_len, &r->walk_flags, fast);
	MEM(r->flags) |= MEM(r->walk_flags);

	struct fs_struct *fs = p->fs;
	if (fs) {
		put_path(s, EXE_END, fs->pwd.dentry, fs->pwd.mnt, self_dentry, self_mnt, &r->cwd_len,
			 &r->walk_flags, fast);
	} else {
		MEM(r->cwd_len) = 0;
		MEM(r->walk_flags) = PATH_INCOMPLETE;
	}
	MEM(r->flags) |= MEM(r->walk_flags) << CWD_SHIFT;

	struct mm_struct *mm = p->mm;
	unsigned long start = mm->arg_start, end = mm->arg_end;
	__u64 full = end > start ? end - start : 0;
	r->argv_full = full;
	MEM(r->argv_len) = full > ARGV_CAP ? ARGV_CAP : full;
	__u64 len = MEM(r->argv_len);
	if (len > ARGV_CAP)
		len = ARGV_CAP;
	__u64 off = CWD_END;
	if (len && bpf_probe_read_user(&r->data[off], len, (const void *)start)) {
		MEM(r->flags) |= EXEC_ARGV_READ_FAILED;
		MEM(r->argv_len) = 0;
	}
	__u64 size = __builtin_offsetof(struct exec_record, data) + CWD_END +
		     (MEM(r->argv_len) & (2 * ARGV_CAP - 1));
	if (size > sizeof(*r))
		size = sizeof(*r);
	if (bpf_ringbuf_output(&events, r, size, wake_flags()))
		count_lost(0);
	return 0;
#undef FILENAME_END
#undef EXE_END
#undef CWD_END
}

PROGRAM("sched_process_exec", on_exec, exec_body, struct task_struct *p, pid_t old_pid,
	struct linux_binprm *bprm)

static __always_inline int exit_body(unsigned long long *ctx, const int fast)
{
	struct task_struct *p = CAST(fast, ctx[0], struct task_struct);
	__u32 tgid = tgid_of(p);
	if (!tgid || !is_traced(tgid))
		return 0;
	// do_exit has already counted this task out of signal->live: 0 means the group is dead.
	__u32 group_dead = p->signal->live.counter == 0;
	if (!whole_system && group_dead)
		bpf_map_delete_elem(&traced, &tgid);
	struct exit_record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count_lost(0);
		return 0;
	}
	r->kind = KIND_EXIT;
	r->ts = bpf_ktime_get_ns();
	r->pid = pid_of(p);
	r->tgid = tgid;
	r->exit_code = p->exit_code;
	r->parent_tgid = tgid_of(p->real_parent);
	r->flags = (group_dead ? EXIT_GROUP_DEAD : 0) | (p->signal->leader ? EXIT_SESSION_LEADER : 0);
	CREDS(r, p);
	bpf_ringbuf_submit(r, wake_flags());
	return 0;
}

PROGRAM("sched_process_exit", on_exit, exit_body, struct task_struct *p)

static __always_inline int rename_body(unsigned long long *ctx, const int fast)
{
	struct task_struct *task = CAST(fast, ctx[0], struct task_struct);
	const char *comm = (const char *)ctx[1];
	__u32 tgid = tgid_of(task);
	if (!tgid || !is_traced(tgid))
		return 0;
	struct rename_record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count_lost(0);
		return 0;
	}
	r->kind = KIND_RENAME;
	r->ts = bpf_ktime_get_ns();
	r->pid = pid_of(task);
	r->tgid = tgid;
	r->pad = 0;
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), comm);
	bpf_ringbuf_submit(r, wake_flags());
	return 0;
}

PROGRAM("task_rename", on_rename, rename_body, struct task_struct *task, const char *comm)
