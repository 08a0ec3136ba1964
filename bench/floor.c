/* The floor: the least a tracer of each kind can do, as reference rows for bench/run.
 *
 *   floor ptrace OUT CMD [ARGS...]   run CMD under an event-only ptrace tracer (PTRACE_SEIZE with
 *                                    FORK|VFORK|CLONE|EXEC, no syscall stops); at each exec stop it
 *                                    reads /proc/PID/cmdline and appends "exec PID ARGV..." to OUT
 *                                    (stdio-buffered); exits with CMD's status. Per spawn: one
 *                                    blocking waitpid per stop, one PTRACE_CONT per stop, and
 *                                    open/read/close of cmdline.
 *   floor ptrace-exit OUT CMD [...]  the same with PTRACE_O_TRACEEXIT too: one more stop per exiting
 *                                    task, answered with PTRACE_CONT and nothing read (the floor
 *                                    under `run --backend ptrace` with usage, which reads at it).
 *   floor ptrace-read OUT CMD [...]  ptrace-exit plus the /proc files `run --backend ptrace` reads
 *                                    for each process, nothing else: at the exec stop readlink of
 *                                    exe and cwd and stat of /proc/PID (the owner); at the exit
 *                                    stop /proc/TID/status, /proc/TID/io and /proc/TID/schedstat
 *                                    (open, one read, close) and the three process CPU clocks,
 *                                    then PTRACE_GETEVENTMSG and PTRACE_DETACH (no exit
 *                                    notification follows), except for CMD itself. What the
 *                                    figures cost the kernel, without proctrace's own work.
 *   floor listen                     subscribe to the kernel's process events connector, print
 *                                    READY, then receive (blocking) and count every message until
 *                                    SIGINT/SIGTERM; prints the count on stderr.
 *
 * Nothing else (ptrace-read: nothing but what it names): no /proc reads beyond cmdline, no model, no output format, no thread handoff. What
 * proctrace costs above these rows is what its own work costs; what these rows cost is what the
 * kernel's ptrace stops and connector wake-ups cost on this machine.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

/* ptrace-read: open, one read and close of /proc/ID/NAME. */
static void read_proc(pid_t id, const char *name, char *buf, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", id, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, buf, size) < 0)
            buf[0] = 0;
        close(fd);
    }
}

static int trace(const char *out, char **argv, int exit_stops, int reads)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        perror("pipe2");
        return 70;
    }
    pid_t c = fork();
    if (c < 0) {
        perror("fork");
        return 70;
    }
    if (c == 0) {
        char b;
        close(p[1]);
        if (read(p[0], &b, 1) < 0)
            _exit(126);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(p[0]);
    long opts = PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC;
    if (exit_stops)
        opts |= PTRACE_O_TRACEEXIT;
    if (ptrace(PTRACE_SEIZE, c, 0, (void *)opts) < 0) {
        perror("PTRACE_SEIZE");
        kill(c, SIGKILL);
        return 70;
    }
    close(p[1]); /* the child execs now */
    FILE *log = fopen(out, "w");
    if (!log) {
        perror(out);
        return 70;
    }
    int st, rc = 70;
    pid_t w;
    static char buf[1 << 16];
    while ((w = waitpid(-1, &st, __WALL)) > 0) {
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            if (w == c)
                rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            continue;
        }
        int sig = WSTOPSIG(st), ev = st >> 16, inject = 0;
        if (ev == PTRACE_EVENT_EXEC) {
            char path[64];
            snprintf(path, sizeof path, "/proc/%d/cmdline", w);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
            if (fd >= 0)
                close(fd);
            fprintf(log, "exec %d", w);
            for (ssize_t i = 0; i < n;) {
                fprintf(log, " %s", buf + i);
                i += strlen(buf + i) + 1;
            }
            fputc('\n', log);
            if (reads) {
                char p2[64];
                struct stat sb;
                snprintf(p2, sizeof p2, "/proc/%d/exe", w);
                if (readlink(p2, buf, sizeof buf) < 0)
                    buf[0] = 0;
                snprintf(p2, sizeof p2, "/proc/%d/cwd", w);
                if (readlink(p2, buf, sizeof buf) < 0)
                    buf[0] = 0;
                snprintf(p2, sizeof p2, "/proc/%d", w);
                if (stat(p2, &sb) < 0)
                    buf[0] = 0;
            }
        } else if (reads && ev == PTRACE_EVENT_EXIT) {
            read_proc(w, "status", buf, sizeof buf);
            read_proc(w, "io", buf, sizeof buf);
            read_proc(w, "schedstat", buf, sizeof buf);
            for (int which = 0; which < 3; which++) {
                struct timespec ts;
                clock_gettime((clockid_t)((~w << 3) | which), &ts);
            }
            unsigned long msg;
            if (w != c && ptrace(PTRACE_GETEVENTMSG, w, 0, &msg) == 0) {
                ptrace(PTRACE_DETACH, w, 0, 0);
                continue;
            }
        } else if (ev == 0) {
            inject = sig; /* a signal for the tracee: deliver it */
        }
        if (ev == PTRACE_EVENT_STOP && (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU))
            ptrace(PTRACE_LISTEN, w, 0, 0); /* group stop */
        else
            ptrace(PTRACE_CONT, w, 0, (void *)(long)inject);
    }
    fclose(log);
    return rc;
}

static volatile sig_atomic_t stop;
static void on_signal(int s)
{
    (void)s;
    stop = 1;
}

static int listen_connector(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_signal; /* no SA_RESTART: a blocking recv returns EINTR */
    sigaction(SIGINT, &sa, 0);
    sigaction(SIGTERM, &sa, 0);
    int s = socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
    struct sockaddr_nl a = {.nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC, .nl_pid = getpid()};
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("connector");
        return 69;
    }
    int rb = 32 << 20;
    setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &rb, sizeof rb);
    struct __attribute__((aligned(NLMSG_ALIGNTO))) {
        struct nlmsghdr nl;
        struct __attribute__((packed)) {
            struct cn_msg cn;
            enum proc_cn_mcast_op op;
        } b;
    } m;
    memset(&m, 0, sizeof m);
    m.nl.nlmsg_len = sizeof m;
    m.nl.nlmsg_pid = getpid();
    m.nl.nlmsg_type = NLMSG_DONE;
    m.b.cn.id.idx = CN_IDX_PROC;
    m.b.cn.id.val = CN_VAL_PROC;
    m.b.cn.len = sizeof(enum proc_cn_mcast_op);
    m.b.op = PROC_CN_MCAST_LISTEN;
    if (send(s, &m, sizeof m, 0) < 0) {
        perror("PROC_CN_MCAST_LISTEN");
        return 69;
    }
    printf("READY\n");
    fflush(stdout);
    static char buf[1 << 16];
    long n = 0;
    while (!stop)
        if (recv(s, buf, sizeof buf, 0) > 0)
            n++;
    fprintf(stderr, "%ld messages\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "ptrace"))
        return trace(argv[2], argv + 3, 0, 0);
    if (argc >= 4 && !strcmp(argv[1], "ptrace-exit"))
        return trace(argv[2], argv + 3, 1, 0);
    if (argc >= 4 && !strcmp(argv[1], "ptrace-read"))
        return trace(argv[2], argv + 3, 1, 1);
    if (argc == 2 && !strcmp(argv[1], "listen"))
        return listen_connector();
    fprintf(stderr, "usage: floor ptrace|ptrace-exit|ptrace-read OUT CMD [ARGS...] | floor listen\n");
    return 64;
}
