/* Benchmark workloads for bench/run: exact, repeatable process shapes.
 *
 *   workload spawn N PROG [ARGS...]   N sequential fork + execv(PROG, ARGS) + waitpid
 *   workload argv N PROG              N sequential execs of `PROG MARKER-<i>` (i = 0..N-1)
 *   workload storm G N FILE           G parallel generators, each forking N children that
 *                                     _exit(173) at once (fork + waitpid, as fast as possible)
 *   workload fork N [-m] PROG         N sequential spawns of PROG, each waited for, by one spawn
 *   workload vfork N [-m] PROG        style: fork()+execv, vfork()+execv, or glibc posix_spawn()
 *   workload posix_spawn N [-m] PROG  (clone(CLONE_VM|CLONE_VFORK) underneath). Without -m the
 *                                     child runs `PROG` alone; with -m it runs `PROG MARK-<i>`
 *                                     (i = 0..N-1). One argument changes what /bin/true costs, so
 *                                     overhead runs use no -m and argv runs use -m.
 *   workload par G STYLE N PROG       G parallel spawners, each `workload STYLE N PROG` (no marks);
 *                                     exits non-zero if any spawner failed
 *   workload spin CPU FILE MAXSECS    CPU-bound SCHED_OTHER spinner pinned to CPU; on SIGTERM/SIGINT
 *                                     (or after MAXSECS) writes to FILE one line
 *                                     `spin WALL CPU MAXGAP GAPS1MS GAPS10MS`: its wall and CPU
 *                                     seconds, the longest time it was kept off the CPU between two
 *                                     clock reads, and how many such gaps exceeded 1 ms / 10 ms,
 *                                     all counted from its start or from its last SIGUSR1
 *
 * storm writes to FILE, once every generator has finished:
 *   gen PID            one line per generator (the storm children's parent)
 *   rusage USER SYS    seconds of CPU used by the whole storm (driver + generators + children)
 *   wall SECONDS       elapsed time of the storm
 * Generators name themselves "bstormgen" (PR_SET_NAME) so kernel-side counters can tell them
 * apart; their children inherit that name and exit with status 173.
 * Built by bench/run with the system C compiler; not part of the test suite. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int run_and_wait(char *const argv[]) {
    pid_t c = fork();
    if (c < 0) {
        perror("fork");
        return -1;
    }
    if (c == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    if (waitpid(c, &st, 0) < 0) {
        perror("waitpid");
        return -1;
    }
    return 0;
}

extern char **environ;

/* One spawn of argv[0] in the given style, waited for. */
static int spawn_style(const char *style, char *const argv[]) {
    pid_t c;
    if (!strcmp(style, "posix_spawn")) {
        int e = posix_spawn(&c, argv[0], NULL, NULL, argv, environ);
        if (e) {
            fprintf(stderr, "posix_spawn: %s\n", strerror(e));
            return -1;
        }
    } else {
        c = !strcmp(style, "vfork") ? vfork() : fork();
        if (c < 0) {
            perror(style);
            return -1;
        }
        if (c == 0) {
            execv(argv[0], argv);
            _exit(127);
        }
    }
    int st;
    if (waitpid(c, &st, 0) < 0) {
        perror("waitpid");
        return -1;
    }
    return 0;
}

static int is_style(const char *s) {
    return !strcmp(s, "fork") || !strcmp(s, "vfork") || !strcmp(s, "posix_spawn");
}

static int style_loop(const char *style, long n, int mark, char *prog) {
    char marker[32];
    char *args[] = {prog, mark ? marker : NULL, NULL};
    for (long i = 0; i < n; i++) {
        if (mark) snprintf(marker, sizeof marker, "MARK-%ld", i);
        if (spawn_style(style, args) < 0) return 1;
    }
    return 0;
}

static volatile sig_atomic_t stop_spin, reset_spin;
static void on_stop(int sig) {
    (void)sig;
    stop_spin = 1;
}
static void on_reset(int sig) {
    (void)sig;
    reset_spin = 1;
}

static double tv(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: workload spawn N PROG [ARGS...] | argv N PROG | storm G N FILE |\n"
                        "       {fork|vfork|posix_spawn} N [-m] PROG | par G STYLE N PROG |\n"
                        "       spin CPU FILE MAXSECS\n");
        return 2;
    }
    const char *mode = argv[1];
    if (is_style(mode) && (argc == 4 || (argc == 5 && !strcmp(argv[3], "-m"))))
        return style_loop(mode, atol(argv[2]), argc == 5, argv[argc - 1]);
    if (!strcmp(mode, "par") && argc == 6 && is_style(argv[3])) {
        int g = atoi(argv[2]);
        long n = atol(argv[4]);
        if (g < 1 || g > 256) return 2;
        for (int k = 0; k < g; k++) {
            pid_t p = fork();
            if (p < 0) {
                perror("fork");
                return 1;
            }
            if (p == 0) _exit(style_loop(argv[3], n, 0, argv[5]));
        }
        int bad = 0, st;
        while (wait(&st) > 0)
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
        return bad;
    }
    if (!strcmp(mode, "spin") && argc == 5) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(atoi(argv[2]), &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0) {
            perror("sched_setaffinity");
            return 1;
        }
        signal(SIGTERM, on_stop);
        signal(SIGINT, on_stop);
        signal(SIGUSR1, on_reset);
        double maxsecs = atof(argv[4]);
        double start = now(), t0 = start, prev = t0, maxgap = 0, cpu0 = 0;
        long gaps1 = 0, gaps10 = 0;
        struct rusage self;
        while (!stop_spin) {
            if (reset_spin) {
                reset_spin = 0;
                getrusage(RUSAGE_SELF, &self);
                cpu0 = tv(self.ru_utime) + tv(self.ru_stime);
                t0 = prev = now();
                maxgap = 0;
                gaps1 = gaps10 = 0;
            }
            double t = now();
            double gap = t - prev;
            prev = t;
            if (gap > maxgap) maxgap = gap;
            if (gap > 0.001) gaps1++;
            if (gap > 0.010) gaps10++;
            if (t - start > maxsecs) break;
        }
        double wall = now() - t0;
        getrusage(RUSAGE_SELF, &self);
        FILE *f = fopen(argv[3], "w");
        if (!f) {
            perror(argv[3]);
            return 1;
        }
        fprintf(f, "spin %.6f %.6f %.6f %ld %ld\n", wall, tv(self.ru_utime) + tv(self.ru_stime) - cpu0, maxgap,
                gaps1, gaps10);
        fclose(f);
        return 0;
    }
    if (!strcmp(mode, "spawn") && argc >= 4) {
        long n = atol(argv[2]);
        for (long i = 0; i < n; i++)
            if (run_and_wait(argv + 3) < 0) return 1;
        return 0;
    }
    if (!strcmp(mode, "argv") && argc == 4) {
        long n = atol(argv[2]);
        char marker[32];
        char *args[] = {argv[3], marker, NULL};
        for (long i = 0; i < n; i++) {
            snprintf(marker, sizeof marker, "MARKER-%ld", i);
            if (run_and_wait(args) < 0) return 1;
        }
        return 0;
    }
    if (!strcmp(mode, "storm") && argc == 5) {
        int g = atoi(argv[2]);
        long n = atol(argv[3]);
        pid_t gens[256];
        if (g < 1 || g > 256) return 2;
        double t0 = now();
        for (int k = 0; k < g; k++) {
            pid_t p = fork();
            if (p < 0) {
                perror("fork");
                return 1;
            }
            if (p == 0) {
                prctl(PR_SET_NAME, "bstormgen");
                for (long i = 0; i < n; i++) {
                    pid_t c = fork();
                    if (c < 0) {
                        perror("fork");
                        _exit(1);
                    }
                    if (c == 0) _exit(173);
                    int st;
                    waitpid(c, &st, 0);
                }
                _exit(0);
            }
            gens[k] = p;
        }
        int bad = 0;
        for (int k = 0; k < g; k++) {
            int st;
            waitpid(gens[k], &st, 0);
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
        }
        double wall = now() - t0;
        struct rusage self, kids;
        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &kids);
        FILE *f = fopen(argv[4], "w");
        if (!f) {
            perror(argv[4]);
            return 1;
        }
        for (int k = 0; k < g; k++) fprintf(f, "gen %d\n", (int)gens[k]);
        fprintf(f, "rusage %.6f %.6f\n", tv(self.ru_utime) + tv(kids.ru_utime),
                tv(self.ru_stime) + tv(kids.ru_stime));
        fprintf(f, "wall %.6f\n", wall);
        fclose(f);
        return bad;
    }
    fprintf(stderr, "workload: bad arguments\n");
    return 2;
}
