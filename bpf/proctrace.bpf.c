// SPDX-License-Identifier: GPL-2.0 OR MIT
//
// proctrace's eBPF capture: three BTF tracepoints (tp_btf/sched_process_{fork,exec,exit}, no
// kprobes, no fentry, no tracefs) that put each traced task's fork, exec and exit in a ring
// buffer, with argv copied from the new image's memory at the exec, where it cannot race the
// process's exit. The Rust side is src/capture/ebpf.rs; the record layout below is mirrored
// there (src/capture/ebpf/record.rs) and must change with it.
//
// CO-RE: the kernel structures are declared by hand with only the fields read here
// (vmlinux.h is 3 MB); the loader relocates every field access against the running kernel's
// BTF (/sys/kernel/btf/vmlinux).
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

// The kernel's structures, only the fields read (names as in the kernel: CO-RE matches by name).
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

struct task_struct {
	int pid;
	int tgid;
	int exit_code;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	struct mm_struct *mm;
	struct signal_struct *signal;
	const struct cred *real_cred;
	char comm[16];
} __attribute__((preserve_access_index));

struct linux_binprm {
	const char *filename;
} __attribute__((preserve_access_index));

// Record layout, shared with src/capture/ebpf/record.rs.
#define KIND_FORK 1
#define KIND_EXEC 2
#define KIND_EXIT 3
#define KIND_RENAME 4

#define ARGV_CAP 32768   // argv bytes copied at most (the full length is recorded)
#define FILENAME_CAP 4096 // bprm->filename bytes copied at most, NUL included

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

struct exec_record {
	__u32 kind;
	__u32 tgid;
	__u64 ts;
	__u32 old_pid;      // the exec'ing thread's id before the exec (!= tgid: a non-leader's exec)
	__u32 parent_tgid;
	__u32 euid;         // after the exec (a set-user-ID program's owner)
	__u32 flags;
	__u64 argv_full;    // arg_end - arg_start: more than argv_len means truncated
	__u32 argv_len;     // argv bytes that follow the filename
	__u32 filename_len; // bprm->filename bytes (no NUL) at the start of data
	char comm[16];
	__u32 ruid, rgid, egid, pad;
	__u8 data[FILENAME_CAP + ARGV_CAP];
};

const volatile __u32 whole_system = 0; // watch: every process; run: only the traced tree

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
	__type(value, struct exec_record);
} scratch SEC(".maps");

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

#define CREDS(r, t)                                                                                \
	do {                                                                                       \
		const struct cred *c = (t)->real_cred;                                             \
		(r)->ruid = c->uid.val;                                                            \
		(r)->euid = c->euid.val;                                                           \
		(r)->rgid = c->gid.val;                                                            \
		(r)->egid = c->egid.val;                                                           \
	} while (0)

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 creator = parent->tgid;
	if (!is_traced(creator))
		return 0;
	__u32 pid = child->pid, tgid = child->tgid;
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
	r->parent_tgid = child->real_parent->tgid;
	r->child_pid = pid;
	r->child_tgid = tgid;
	r->creator_tgid = creator;
	r->creator_leader = parent->signal->leader != 0;
	CREDS(r, child);
	bpf_ringbuf_submit(r, wake_flags());
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;
	if (!is_traced(tgid))
		return 0;
	__u32 cpu = bpf_get_smp_processor_id();
	struct exec_record *r = bpf_map_lookup_elem(&scratch, &cpu);
	if (!r) {
		count_lost(0);
		return 0;
	}
	r->kind = KIND_EXEC;
	r->ts = bpf_ktime_get_ns();
	r->tgid = tgid;
	r->old_pid = old_pid;
	r->parent_tgid = p->real_parent->tgid;
	{
		const struct cred *c = p->real_cred;
		r->ruid = c->uid.val;
		r->euid = c->euid.val;
		r->rgid = c->gid.val;
		r->egid = c->egid.val;
		r->pad = 0;
	}
	r->flags = p->signal->leader ? EXEC_SESSION_LEADER : 0;
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), p->comm);

	long n = bpf_probe_read_kernel_str(r->data, FILENAME_CAP, bprm->filename);
	__u32 off = n > 0 ? (__u32)(n - 1) : 0;
	off &= FILENAME_CAP - 1;
	r->filename_len = off;

	struct mm_struct *mm = p->mm;
	unsigned long start = mm->arg_start, end = mm->arg_end;
	__u64 full = end > start ? end - start : 0;
	r->argv_full = full;
	__u32 len = full > ARGV_CAP ? ARGV_CAP : (__u32)full;
	if (len > ARGV_CAP)
		len = ARGV_CAP;
	if (len && bpf_probe_read_user(&r->data[off], len, (const void *)start)) {
		r->flags |= EXEC_ARGV_READ_FAILED;
		len = 0;
	}
	r->argv_len = len;

	__u64 size = __builtin_offsetof(struct exec_record, data) + (__u64)off + len;
	if (size > sizeof(*r))
		size = sizeof(*r);
	if (bpf_ringbuf_output(&events, r, size, wake_flags()))
		count_lost(0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid;
	if (!is_traced(tgid))
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
	r->pid = p->pid;
	r->tgid = tgid;
	r->exit_code = p->exit_code;
	r->parent_tgid = p->real_parent->tgid;
	r->flags = (group_dead ? EXIT_GROUP_DEAD : 0) | (p->signal->leader ? EXIT_SESSION_LEADER : 0);
	CREDS(r, p);
	bpf_ringbuf_submit(r, wake_flags());
	return 0;
}

SEC("tp_btf/task_rename")
int BPF_PROG(on_rename, struct task_struct *task, const char *comm)
{
	__u32 tgid = task->tgid;
	if (!is_traced(tgid))
		return 0;
	struct rename_record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count_lost(0);
		return 0;
	}
	r->kind = KIND_RENAME;
	r->ts = bpf_ktime_get_ns();
	r->pid = task->pid;
	r->tgid = tgid;
	r->pad = 0;
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), comm);
	bpf_ringbuf_submit(r, wake_flags());
	return 0;
}
