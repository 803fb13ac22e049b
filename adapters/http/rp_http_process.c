/* What the process uses, from /proc (rp_http_process.h). */
#include "rp_http_process.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Fields 14 (utime), 15 (stime), 22 (starttime, clock ticks after boot) and
 * 24 (rss, pages) of /proc/self/stat. false when it cannot be read. */
static bool rp_proc_stat(int64_t *cpu_ticks, int64_t *start_ticks, int64_t *rss_pages) {
    FILE *f = fopen("/proc/self/stat", "re");
    if (f == NULL) return false;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: the
     * fields after it start past its last ')'. */
    char *p = strrchr(buf, ')');
    if (p == NULL) return false;
    p++;
    long long v[24] = {0};
    for (int field = 3; field <= 24; field++) {
        while (*p == ' ') p++;
        if (field == 3) { /* the state, a letter */
            while (*p && *p != ' ') p++;
            continue;
        }
        char *end;
        v[field - 1] = strtoll(p, &end, 10);
        if (end == p) return false;
        p = end;
    }
    *cpu_ticks = v[13] + v[14];
    *start_ticks = v[21];
    *rss_pages = v[23];
    return true;
}

/* The wall clock of the machine's boot (btime in /proc/stat), in ms; 0
 * when unknown. */
static int64_t rp_boot_time_ms(void) {
    FILE *f = fopen("/proc/stat", "re");
    if (f == NULL) return 0;
    char line[256];
    long long btime = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "btime %lld", &btime) == 1) break;
    fclose(f);
    return (int64_t)btime * 1000;
}

static int64_t rp_open_fds(void) {
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL) return -1;
    int64_t n = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        if (e->d_name[0] != '.') n++;
    closedir(dir);
    return n - 1; /* not the one opendir held */
}

bool rp_http_process_sample(rp_metrics_process *out) {
    static int64_t boot_ms = -1;
    if (boot_ms < 0) boot_ms = rp_boot_time_ms();
    int64_t cpu, start, rss;
    if (!rp_proc_stat(&cpu, &start, &rss)) return false;
    long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    if (tick <= 0 || page <= 0) return false;
    struct rlimit rl;
    rp_metrics_process p = {
        .cpu_us = cpu * 1000000 / tick,
        .resident_bytes = rss * page,
        .open_fds = rp_open_fds(),
        .max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                       ? (int64_t)rl.rlim_cur
                       : -1,
        .start_time_ms = boot_ms + start * 1000 / tick,
    };
    *out = p;
    return true;
}

