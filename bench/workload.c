/* Benchmark workloads for bench/run: exact, repeatable process shapes.
 *
 *   workload spawn N PROG [ARGS...]   N sequential fork + execv(PROG, ARGS) + waitpid
 *   workload argv N PROG              N sequential execs of `PROG MARKER-<i>` (i = 0..N-1)
 *   workload storm G N FILE           G parallel generators, each forking N children that
 *                                     _exit(173) at once (fork + waitpid, as fast as possible)
 *
 * storm writes to FILE, once every generator has finished:
 *   gen PID            one line per generator (the storm children's parent)
 *   rusage USER SYS    seconds of CPU used by the whole storm (driver + generators + children)
 *   wall SECONDS       elapsed time of the storm
 * Generators name themselves "bstormgen" (PR_SET_NAME) so kernel-side counters can tell them
 * apart; their children inherit that name and exit with status 173.
 * Built by bench/run with the system C compiler; not part of the test suite. */
#define _GNU_SOURCE
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

static double tv(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: workload spawn N PROG [ARGS...] | argv N PROG | storm G N FILE\n");
        return 2;
    }
    const char *mode = argv[1];
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
