/* reaperctl stats' tables (print.h): the owned queues, then the job
 * table's (project, kind)s, in the page style of `reaperctl jobs`. */
#include <stdio.h>
#include <string.h>

#include "escape.h"
#include "print.h"
#include "table.h"

static const char *rp_s(const json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "-";
}

/* An integer field, "-" when null (unknown). */
static const char *rp_n(const json_t *o, const char *k, char *buf, size_t n) {
    const json_t *v = json_object_get(o, k);
    if (!json_is_integer(v)) return "-";
    snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    return buf;
}

/* An age in seconds as reaperctl jobs shows ages ("-" when unknown). */
static const char *rp_age_s(const json_t *o, char *buf, size_t n) {
    const json_t *v = json_object_get(o, "oldest_waiting_seconds");
    if (!json_is_integer(v)) return "-";
    long long s = (long long)json_integer_value(v);
    if (s < 0) s = 0;
    if (s >= 86400) snprintf(buf, n, "%lldd%lldh", s / 86400, (s % 86400) / 3600);
    else if (s >= 3600) snprintf(buf, n, "%lldh%lldm", s / 3600, (s % 3600) / 60);
    else if (s >= 60) snprintf(buf, n, "%lldm%llds", s / 60, s % 60);
    else snprintf(buf, n, "%llds", s);
    return buf;
}

/* The flags joined by ","; "-" when none. */
static const char *rp_flags(const json_t *o, char *buf, size_t n) {
    const json_t *a = json_object_get(o, "flags");
    size_t i, used = 0;
    const json_t *f;
    buf[0] = '\0';
    json_array_foreach(a, i, f) {
        const char *s = json_string_value(f);
        if (s == NULL) continue;
        int w = snprintf(buf + used, n - used, "%s%s", used ? "," : "", s);
        if (w < 0 || (size_t)w >= n - used) break;
        used += (size_t)w;
    }
    return used ? buf : "-";
}

static void rp_window(FILE *f, long long s) {
    if (s % 86400 == 0) fprintf(f, "%lldd", s / 86400);
    else if (s % 3600 == 0) fprintf(f, "%lldh", s / 3600);
    else fprintf(f, "%llds", s);
}

void rp_ctl_print_stats(FILE *f, const json_t *r) {
    long long window = (long long)json_integer_value(json_object_get(r, "window_seconds"));
    const json_t *queues = json_object_get(r, "queues"), *kinds = json_object_get(r, "kinds");
    const json_t *note = json_object_get(r, "broker_note");
    size_t i;
    const json_t *o;
    fputs("intake and drained over the last ", f);
    rp_window(f, window);
    fputs(" (reap.divergence_window_seconds)\n\n", f);

    if (json_is_string(note)) {
        fputs("owned queues: not read: ", f);
        rp_ctl_fputs(f, json_string_value(note));
        fputc('\n', f);
    } else if (json_array_size(queues) == 0) {
        fputs("no owned queues\n", f);
    } else {
        static const char *const head[] = {"VHOST",  "QUEUE",   "READY",      "UNACKED", "CONSUMERS",
                                           "INTAKE", "DRAINED", "OLDEST AGE", "FLAGS"};
        rp_table *t = rp_table_new(9, head);
        if (t == NULL) return;
        json_array_foreach(queues, i, o) {
            char rd[24], un[24], co[24], in[24], dr[24], age[32], fl[80];
            const char *row[] = {rp_s(o, "vhost"),
                                 rp_s(o, "queue"),
                                 rp_n(o, "ready", rd, sizeof rd),
                                 rp_n(o, "unacked", un, sizeof un),
                                 rp_n(o, "consumers", co, sizeof co),
                                 rp_n(o, "intake", in, sizeof in),
                                 rp_n(o, "drained", dr, sizeof dr),
                                 rp_age_s(o, age, sizeof age),
                                 rp_flags(o, fl, sizeof fl)};
            rp_table_add(t, row);
        }
        rp_table_print(t, f, "");
        rp_table_free(t);
    }
    fputc('\n', f);
    if (json_array_size(kinds) == 0) {
        fputs("no jobs waiting, active, created or drained in the window\n", f);
    } else {
        static const char *const head[] = {"PROJECT", "KIND",    "WAITING",    "ACTIVE",
                                           "INTAKE",  "DRAINED", "OLDEST AGE", "FLAGS"};
        rp_table *t = rp_table_new(8, head);
        if (t == NULL) return;
        json_array_foreach(kinds, i, o) {
            char wa[24], ac[24], in[24], dr[24], age[32], fl[80];
            const char *row[] = {rp_s(o, "project"),
                                 rp_s(o, "kind"),
                                 rp_n(o, "waiting", wa, sizeof wa),
                                 rp_n(o, "active", ac, sizeof ac),
                                 rp_n(o, "intake", in, sizeof in),
                                 rp_n(o, "drained", dr, sizeof dr),
                                 rp_age_s(o, age, sizeof age),
                                 rp_flags(o, fl, sizeof fl)};
            rp_table_add(t, row);
        }
        rp_table_print(t, f, "");
        rp_table_free(t);
    }
    long long qmore = (long long)json_integer_value(json_object_get(r, "queues_omitted"));
    long long kmore = (long long)json_integer_value(json_object_get(r, "kinds_omitted"));
    fprintf(f, "\n%zu owned queue%s", json_array_size(queues), json_array_size(queues) == 1 ? "" : "s");
    if (qmore > 0) fprintf(f, " (%lld more not shown)", qmore);
    fprintf(f, ", %zu (project, kind)%s", json_array_size(kinds), json_array_size(kinds) == 1 ? "" : "s");
    if (kmore > 0) fprintf(f, " (%lld more not shown)", kmore);
    fputc('\n', f);
}
