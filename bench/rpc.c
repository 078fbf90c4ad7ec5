/* The MCP session benchmarks' helpers (built and run by bench/run, not a
 * test). One program, by its first argument:
 *
 *   rpc server            a JSON-RPC server: each request line is answered
 *                         {"jsonrpc":"2.0","id":<id>,"result":<the request>};
 *                         whole lines read together are answered in one write
 *   rpc sink              reads its stdin and never answers
 *   rpc relay CMD...      the least a two-way relay can do: one poll(2) loop,
 *                         one buffer per direction, non-blocking writes
 *   rpc latency N CMD...  N sequential round trips through CMD: prints the
 *                         median in us, and CMD's own CPU (schedstat, not its
 *                         children's) per round trip, both after a 10%
 *                         warm-up (start-up is not a round trip's cost)
 *   rpc throughput N SIZE WINDOW CMD...
 *                         N pipelined requests of SIZE bytes, at most WINDOW
 *                         unanswered: prints MB/s of requests (each is answered
 *                         with a response a little larger)
 *   rpc stamp FILE        an approver: writes CLOCK_MONOTONIC (ns) to FILE the
 *                         moment it runs, then approves (exit 0)
 *   rpc inflight N CMD... N requests that are never answered (CMD relays to a
 *                         sink): prints CMD's peak RSS (VmHWM, KiB) and how
 *                         many answers came back (mcp-bound's own errors)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) exit(0);
        p += w;
        n -= (size_t)w;
    }
}

static int server(int answer) {
    static char out[1 << 22];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(0, buf + have, sizeof buf - have);
        if (n <= 0) return 0;
        have += (size_t)n;
        size_t start = 0, used = 0;
        char *nl;
        while ((nl = memchr(buf + start, '\n', have - start))) {
            size_t len = (size_t)(nl - (buf + start));
            char *id = memmem(buf + start, len, "\"id\":", 5);
            if (answer && id) {
                char *end = id + 5;
                while (*end != ',' && *end != '}') end++;
                used += (size_t)sprintf(out + used, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":",
                                        (int)(end - id - 5), id + 5);
                memcpy(out + used, buf + start, len);
                used += len;
                out[used++] = '}';
                out[used++] = '\n';
                if (used > sizeof out - sizeof buf) {
                    write_all(1, out, used);
                    used = 0;
                }
            }
            start += len + 1;
        }
        if (used) write_all(1, out, used);
        memmove(buf, buf + start, have - start);
        have -= start;
    }
}

static pid_t spawn(char **argv, int *to, int *from) {
    int in[2], out[2];
    if (pipe(in) || pipe(out)) exit(2);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]); close(in[1]); close(out[0]); close(out[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    *to = in[1];
    *from = out[0];
    return pid;
}

static int relay(char **argv) {
    int to, from;
    spawn(argv, &to, &from);
    fcntl(to, F_SETFL, O_NONBLOCK);
    fcntl(1, F_SETFL, O_NONBLOCK);
    /* Two directions, each one buffer: read only when it is empty (so a
     * slow side holds the other back), write without blocking. */
    static char bufs[2][1 << 16];
    int src[2] = {0, from}, dst[2] = {to, 1};
    size_t off[2] = {0, 0}, len[2] = {0, 0};
    for (;;) {
        struct pollfd fds[2];
        for (int d = 0; d < 2; d++) {
            fds[d].fd = len[d] > off[d] ? dst[d] : src[d];
            fds[d].events = len[d] > off[d] ? POLLOUT : POLLIN;
        }
        if (poll(fds, 2, -1) < 0) continue;
        for (int d = 0; d < 2; d++) {
            if (!fds[d].revents) continue;
            if (len[d] == off[d]) {
                ssize_t n = read(src[d], bufs[d], sizeof bufs[d]);
                if (n <= 0 && d == 1) return 0;
                if (n <= 0) { close(to); src[0] = -1; continue; }
                off[d] = 0;
                len[d] = (size_t)n;
            }
            ssize_t w = write(dst[d], bufs[d] + off[d], len[d] - off[d]);
            if (w > 0) off[d] += (size_t)w;
        }
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU the process itself ran, in seconds: the scheduler's own account
 * (/proc/PID/schedstat, nanoseconds), not the tick-sampled utime+stime. */
static double cpu_of(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/schedstat", pid);
    FILE *f = fopen(path, "r");
    unsigned long long ns = 0;
    if (!f || fscanf(f, "%llu", &ns) != 1) ns = 0;
    if (f) fclose(f);
    return (double)ns / 1e9;
}

static long hwm_of(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kib = atol(line + 6);
    if (f) fclose(f);
    return kib;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void finish(pid_t pid, int to, int from) {
    close(to);
    while (read(from, buf, sizeof buf) > 0) {}
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

static int latency(int n, char **argv) {
    int to, from;
    pid_t pid = spawn(argv, &to, &from);
    double *t = calloc((size_t)n, sizeof *t);
    char line[128];
    int warm = n / 10;
    double cpu_warm = 0;
    for (int i = 0; i < n; i++) {
        if (i == warm) cpu_warm = cpu_of(pid);
        int len = sprintf(line, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"echo\",\"params\":{\"n\":%d}}\n", i, i);
        double start = now();
        write_all(to, line, (size_t)len);
        for (;;) {
            ssize_t r = read(from, buf, sizeof buf);
            if (r <= 0) { fprintf(stderr, "rpc: EOF\n"); return 1; }
            if (buf[r - 1] == '\n') break;
        }
        t[i] = now() - start;
    }
    double cpu = cpu_of(pid) - cpu_warm;
    qsort(t + warm, (size_t)(n - warm), sizeof *t, cmp);
    printf("%.2f %.3f\n", t[warm + (n - warm) / 2] * 1e6, cpu / (n - warm) * 1e6);
    finish(pid, to, from);
    return 0;
}

static int throughput(long n, int size, int window, char **argv) {
    int to, from;
    pid_t pid = spawn(argv, &to, &from);
    char *req = malloc((size_t)size + 64);
    long sent = 0, answered = 0;
    size_t off = 0, len = 0;
    double start = now();
    struct pollfd fds[2] = {{to, POLLOUT, 0}, {from, POLLIN, 0}};
    while (answered < n) {
        fds[0].fd = (sent < n && sent - answered < window) || off < len ? to : -1;
        poll(fds, 2, -1);
        if (fds[0].revents & POLLOUT) {
            if (off == len) {
                int head = sprintf(req, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"echo\",\"params\":\"", sent);
                memset(req + head, 'x', (size_t)(size - head - 3));
                memcpy(req + size - 3, "\"}\n", 3);
                len = (size_t)size;
                off = 0;
                sent++;
            }
            ssize_t w = write(to, req + off, len - off);
            if (w > 0) off += (size_t)w;
        }
        if (fds[1].revents) {
            ssize_t r = read(from, buf, sizeof buf);
            if (r <= 0) { fprintf(stderr, "rpc: EOF after %ld\n", answered); return 1; }
            for (char *p = buf; (p = memchr(p, '\n', (size_t)(buf + r - p))); p++) answered++;
        }
    }
    double seconds = now() - start;
    printf("%.1f\n", (double)n * size / seconds / 1e6);
    finish(pid, to, from);
    return 0;
}

static int inflight(int n, char **argv) {
    int to, from;
    pid_t pid = spawn(argv, &to, &from);
    fcntl(to, F_SETFL, O_NONBLOCK);
    char line[128];
    long answered = 0, expected = n > 4096 ? n - 4096 : 0;
    int sent = 0;
    size_t off = 0, len = 0;
    /* Write without blocking and read what comes back meanwhile: mcp-bound
     * stops reading a client that does not read its answers. */
    while (sent < n || off < len || answered < expected) {
        struct pollfd fds[2] = {{sent < n || off < len ? to : -1, POLLOUT, 0}, {from, POLLIN, 0}};
        if (poll(fds, 2, 5000) <= 0) break;
        if (fds[0].revents & POLLOUT) {
            if (off == len) {
                len = (size_t)sprintf(line, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{}}\n", sent++);
                off = 0;
            }
            ssize_t w = write(to, line + off, len - off);
            if (w > 0) off += (size_t)w;
        }
        if (fds[1].revents) {
            ssize_t r = read(from, buf, sizeof buf);
            if (r <= 0) break;
            for (char *q = buf; (q = memchr(q, '\n', (size_t)(buf + r - q))); q++) answered++;
        }
    }
    /* Let the last answers arrive: they come at once, or not at all. */
    struct pollfd p = {from, POLLIN, 0};
    while (poll(&p, 1, 500) > 0) {
        ssize_t r = read(from, buf, sizeof buf);
        if (r <= 0) break;
        for (char *q = buf; (q = memchr(q, '\n', (size_t)(buf + r - q))); q++) answered++;
    }
    printf("%ld %ld\n", hwm_of(pid), answered);
    finish(pid, to, from);
    return 0;
}

static int stamp(const char *path) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    FILE *f = fopen(path, "w");
    if (!f) return 2;
    fprintf(f, "%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    return fclose(f) ? 2 : 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "stamp")) return stamp(argv[2]);
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && !strcmp(argv[1], "server")) return server(1);
    if (argc >= 2 && !strcmp(argv[1], "sink")) return server(0);
    if (argc >= 3 && !strcmp(argv[1], "relay")) return relay(argv + 2);
    if (argc >= 4 && !strcmp(argv[1], "latency")) return latency(atoi(argv[2]), argv + 3);
    if (argc >= 6 && !strcmp(argv[1], "throughput"))
        return throughput(atol(argv[2]), atoi(argv[3]), atoi(argv[4]), argv + 5);
    if (argc >= 4 && !strcmp(argv[1], "inflight")) return inflight(atoi(argv[2]), argv + 3);
    fprintf(stderr, "usage: see bench/rpc.c\n");
    return 2;
}
