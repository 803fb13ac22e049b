#include "print.h"

#include <string.h>

#include "escape.h"
#include "table.h"

#include "rp_proto.h"

static const char *rp_str(const json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "-";
}

/* "label value\n", the value escaped (escape.h): it comes from the reply. */
static void rp_line(FILE *f, const char *label, const char *value) {
    fputs(label, f);
    rp_ctl_fputs(f, value);
    fputc('\n', f);
}

void rp_ctl_print_status(FILE *f, const json_t *r) {
    rp_line(f, "version         ", rp_str(r, "version"));
    rp_line(f, "broker          ", rp_str(r, "broker"));
    rp_line(f, "store           ", rp_str(r, "store"));
    rp_line(f, "last pass at    ", rp_str(r, "last_pass_at"));
    fprintf(f, "open sightings  %lld\n", (long long)json_integer_value(json_object_get(r, "open_sightings")));
}

/* A policy's STATE cell: "verified", or "NOT VERIFIED" followed by the
 * vhosts it was not verified in (the first three; "+N more"), when the
 * reply names them. */
static void rp_policy_state(const json_t *p, char *buf, size_t n) {
    if (json_is_true(json_object_get(p, "verified"))) {
        snprintf(buf, n, "verified");
        return;
    }
    size_t len = (size_t)snprintf(buf, n, "NOT VERIFIED");
    size_t i, shown = 0, more = 0;
    json_t *h;
    json_array_foreach(json_object_get(p, "vhosts"), i, h) {
        if (json_is_true(json_object_get(h, "verified"))) continue;
        const char *v = json_string_value(json_object_get(h, "vhost"));
        if (v == NULL || shown == 3 || len + strlen(v) + 6 >= n) {
            more++;
            continue;
        }
        len += (size_t)snprintf(buf + len, n - len, "%s%s", shown == 0 ? " in " : ", ", v);
        shown++;
    }
    if (more > 0 && len + 24 < n) snprintf(buf + len, n - len, " +%zu more", more);
}

void rp_ctl_print_report(FILE *f, const json_t *rep) {
    bool ok = json_is_true(json_object_get(rep, "ok"));
    bool dry = json_is_true(json_object_get(rep, "dry_run"));
    const json_t *verdicts = json_object_get(rep, "verdicts");
    fprintf(f, "pass: %s%s, %zu verdict%s listed\n", ok ? "ok" : "NOT OK",
            dry ? " (dry run: nothing was written)" : "", json_array_size(verdicts),
            json_array_size(verdicts) == 1 ? "" : "s");
    if (json_array_size(verdicts) > 0) {
        static const char *const head[] = {"ACTION", "CONDITION", "SOURCE", "OBJECT", "PROJECT",
                                           "MEASURED"};
        rp_table *t = rp_table_new(6, head);
        size_t i;
        json_t *v;
        json_array_foreach(verdicts, i, v) {
            const json_t *m = json_object_get(v, "measured");
            char measured[96] = "-";
            if (json_is_number(m))
                snprintf(measured, sizeof measured, "%.1f %s (threshold %lld)", json_number_value(m),
                         rp_str(v, "unit"), (long long)json_integer_value(json_object_get(v, "threshold")));
            const char *row[] = {rp_str(v, "action"), rp_str(v, "condition"), rp_str(v, "source"),
                                 rp_str(v, "object"), rp_str(v, "project"), measured};
            if (t) rp_table_add(t, row);
        }
        fputc('\n', f);
        if (t) rp_table_print(t, f, "  ");
        rp_table_free(t);
    }
    const char *lists[] = {"unreadable", "notes"};
    for (size_t l = 0; l < 2; l++) {
        const json_t *a = json_object_get(rep, lists[l]);
        if (json_array_size(a) == 0) continue;
        fprintf(f, "\n%s:\n", lists[l]);
        size_t i;
        json_t *s;
        json_array_foreach(a, i, s) rp_line(f, "  ", json_string_value(s) ? json_string_value(s) : "?");
    }
    const json_t *pol = json_object_get(rep, "policies");
    if (json_array_size(pol) > 0) {
        fprintf(f, "\npolicies:\n");
        static const char *const head[] = {"NAME", "STATE", "DETAIL"};
        rp_table *t = rp_table_new(3, head);
        size_t i;
        json_t *p;
        json_array_foreach(pol, i, p) {
            char state[160];
            rp_policy_state(p, state, sizeof state);
            const char *row[] = {rp_str(p, "name"), state, rp_str(p, "detail")};
            if (t) rp_table_add(t, row);
        }
        if (t) rp_table_print(t, f, "  ");
        rp_table_free(t);
    }
}

/* "3d4h", "12m", "40s" from milliseconds. */
static void rp_age(long long ms, char *buf, size_t n) {
    long long s = ms / 1000;
    if (s < 0) s = 0;
    if (s >= 86400) snprintf(buf, n, "%lldd%lldh", s / 86400, (s % 86400) / 3600);
    else if (s >= 3600) snprintf(buf, n, "%lldh%lldm", s / 3600, (s % 3600) / 60);
    else if (s >= 60) snprintf(buf, n, "%lldm", s / 60);
    else snprintf(buf, n, "%llds", s);
}

/* How many of the matching gates the page shows, and how to see the next
 * page (reaperd 0.x before paging sent neither: nothing is said then). A
 * count that stopped at its cap (total_capped) is "at least": "10,000+". */
static void rp_ctl_print_page(FILE *f, const json_t *r, size_t shown) {
    const json_t *total = json_object_get(r, "total");
    if (!json_is_integer(total)) return;
    long long t = (long long)json_integer_value(total);
    if (json_is_true(json_object_get(r, "total_capped")) && t >= 1000)
        fprintf(f, "%zu shown of %lld,%03lld+ matching", shown, t / 1000, t % 1000);
    else
        fprintf(f, "%zu shown of %lld%s matching", shown, t,
                json_is_true(json_object_get(r, "total_capped")) ? "+" : "");
    const json_t *next = json_object_get(r, "next_after");
    if (json_is_integer(next))
        fprintf(f, "; the next page: --after %lld", (long long)json_integer_value(next));
    fputc('\n', f);
}

void rp_ctl_print_gates(FILE *f, const json_t *r, long long now_ms) {
    const json_t *gates = json_object_get(r, "gates");
    if (json_array_size(gates) == 0) {
        fprintf(f, "no gates\n");
        if (json_integer_value(json_object_get(r, "total")) > 0) rp_ctl_print_page(f, r, 0);
        return;
    }
    static const char *const head[] = {"GATE",   "KIND",   "PROJECT", "VHOST", "QUEUE",
                                       "ORIGIN", "REASON", "AGE",     "CHOICES", "STATE"};
    rp_table *t = rp_table_new(10, head);
    if (t == NULL) return;
    size_t i;
    json_t *g;
    json_array_foreach(gates, i, g) {
        char age[32] = "-";
        rp_time_ms created = 0;
        if (json_is_string(json_object_get(g, "created_at")) &&
            rp_proto_parse_time(rp_str(g, "created_at"), &created))
            rp_age(now_ms - created, age, sizeof age);
        char choices[64] = "";
        size_t k;
        json_t *c;
        json_array_foreach(json_object_get(g, "choices"), k, c) {
            size_t len = strlen(choices);
            snprintf(choices + len, sizeof choices - len, "%s%s", len ? "|" : "",
                     json_string_value(c) ? json_string_value(c) : "?");
        }
        char state[400];
        const json_t *claim = json_object_get(g, "replaying");
        if (json_is_string(json_object_get(g, "answer")))
            snprintf(state, sizeof state, "%s by %s", rp_str(g, "answer"), rp_str(g, "answered_by"));
        else if (json_is_object(claim)) {
            /* A replay holds the gate (SCHEMA.md 5.3); a stale claim is
             * taken over by the next answer. How long it has been held,
             * as AGE is shown: the exact time is in --json. */
            char held[32] = "?";
            rp_time_ms since = 0;
            if (json_is_string(json_object_get(claim, "since")) &&
                rp_proto_parse_time(rp_str(claim, "since"), &since))
                rp_age(now_ms - since, held, sizeof held);
            snprintf(state, sizeof state, "replaying%s (%s for %s)",
                     json_is_true(json_object_get(claim, "stale")) ? ", stale" : "",
                     rp_str(claim, "by"), held);
        } else
            snprintf(state, sizeof state, "open");
        char id[24];
        snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(g, "id")));
        /* origin and reason come from message headers: already quoted and
         * cut by reaperd; the table escapes any control character. The
         * vhost is "-" for a gate without a dead letter (and from a
         * reaperd that does not say it). */
        const char *row[] = {id,
                             rp_str(g, "kind"),
                             rp_str(g, "project"),
                             rp_str(g, "vhost"),
                             rp_str(g, "queue"),
                             rp_str(g, "origin_queue"),
                             rp_str(g, "reason"),
                             age,
                             choices,
                             state};
        rp_table_add(t, row);
    }
    rp_table_print(t, f, "");
    rp_table_free(t);
    rp_ctl_print_page(f, r, json_array_size(gates));
}

void rp_ctl_print_answer(FILE *f, const json_t *r) {
    fprintf(f, "gate %lld: ", (long long)json_integer_value(json_object_get(r, "gate")));
    rp_ctl_fputs(f, rp_str(r, "outcome"));
    fputs(" (choice ", f);
    rp_ctl_fputs(f, rp_str(r, "choice"));
    fputs(")\n", f);
}

/* ---- job triage ------------------------------------------------------------ */

static const char *rp_int(const json_t *o, const char *k, char *buf, size_t n) {
    const json_t *v = json_object_get(o, k);
    if (!json_is_integer(v)) return "-";
    snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    return buf;
}

void rp_ctl_print_jobs(FILE *f, const json_t *r, long long now_ms) {
    const json_t *jobs = json_object_get(r, "jobs");
    long long total = (long long)json_integer_value(json_object_get(r, "total"));
    const json_t *next = json_object_get(r, "next_after");
    if (json_array_size(jobs) == 0) {
        fprintf(f, "no jobs on this page (%lld match)\n", total);
        return;
    }
    static const char *const head[] = {"JOB",   "PROJECT", "KIND",        "STATE",
                                       "TRIES", "OWNER",   "LEASE LEFT",  "AGE"};
    rp_table *t = rp_table_new(8, head);
    if (t == NULL) return;
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        char id[24], tries[48], left[32] = "-", age[32] = "-";
        rp_time_ms at = 0;
        if (json_is_string(json_object_get(j, "created_at")) &&
            rp_proto_parse_time(rp_str(j, "created_at"), &at))
            rp_age(now_ms - at, age, sizeof age);
        if (json_is_string(json_object_get(j, "lease_expires_at")) &&
            rp_proto_parse_time(rp_str(j, "lease_expires_at"), &at)) {
            if (at > now_ms) rp_age(at - now_ms, left, sizeof left);
            else snprintf(left, sizeof left, "expired");
        }
        snprintf(tries, sizeof tries, "%lld/%lld",
                 (long long)json_integer_value(json_object_get(j, "attempts")),
                 (long long)json_integer_value(json_object_get(j, "max_attempts")));
        const char *row[] = {rp_int(j, "id", id, sizeof id), rp_str(j, "project"), rp_str(j, "kind"),
                             rp_str(j, "state"), tries, rp_str(j, "lease_owner"), left, age};
        rp_table_add(t, row);
    }
    rp_table_print(t, f, "");
    rp_table_free(t);
    fprintf(f, "\n%zu shown, %lld match", json_array_size(jobs), total);
    if (json_is_integer(next))
        fprintf(f, "; more: --after %lld\n", (long long)json_integer_value(next));
    else
        fputs("; no more\n", f);
}

static void rp_job_lines(FILE *f, const json_t *j) {
    char b[24];
    rp_line(f, "job               ", rp_int(j, "id", b, sizeof b));
    rp_line(f, "project           ", rp_str(j, "project"));
    rp_line(f, "kind              ", rp_str(j, "kind"));
    rp_line(f, "state             ", rp_str(j, "state"));
    fprintf(f, "attempts          %lld of %lld\n",
            (long long)json_integer_value(json_object_get(j, "attempts")),
            (long long)json_integer_value(json_object_get(j, "max_attempts")));
    rp_line(f, "lease owner       ", rp_str(j, "lease_owner"));
    rp_line(f, "lease expires at  ", rp_str(j, "lease_expires_at"));
    rp_line(f, "run after         ", rp_str(j, "run_after"));
    rp_line(f, "depends on        ", rp_int(j, "depends_on", b, sizeof b));
    rp_line(f, "created at        ", rp_str(j, "created_at"));
    rp_line(f, "updated at        ", rp_str(j, "updated_at"));
    rp_line(f, "finished at       ", rp_str(j, "finished_at"));
}

void rp_ctl_print_job(FILE *f, const json_t *r) {
    rp_job_lines(f, json_object_get(r, "job"));
    rp_line(f, "payload           ", rp_str(r, "payload"));
    if (json_is_true(json_object_get(r, "payload_truncated")))
        fputs("                  (cut: the payload is longer)\n", f);
}

void rp_ctl_print_cancel(FILE *f, const json_t *r) {
    const json_t *j = json_object_get(r, "job");
    char b[24];
    fputs("job ", f);
    rp_ctl_fputs(f, rp_int(j, "id", b, sizeof b));
    fputs(" cancelled: ", f);
    rp_ctl_fputs(f, rp_str(r, "from"));
    fputs(" -> ", f);
    rp_ctl_fputs(f, rp_str(j, "state"));
    if (json_is_string(json_object_get(r, "lease_owner"))) {
        fputs(" (lease of ", f);
        rp_ctl_fputs(f, rp_str(r, "lease_owner"));
        fputs(" cleared: its settle will find no row)", f);
    }
    fputs("; ledger seq ", f);
    rp_ctl_fputs(f, rp_int(r, "seq", b, sizeof b));
    fputc('\n', f);
}

void rp_ctl_print_doctor(FILE *f, const json_t *r) {
    const json_t *checks = json_object_get(r, "checks");
    size_t i, n_ok = 0, n_warn = 0, n_fail = 0;
    const json_t *c;
    json_array_foreach(checks, i, c) {
        const char *st = rp_str(c, "status"), *fix = rp_str(c, "fix");
        bool ok = strcmp(st, "ok") == 0, warn = strcmp(st, "warn") == 0;
        n_ok += ok;
        n_warn += warn;
        n_fail += !ok && !warn;
        fprintf(f, "%-4s  ", ok ? "ok" : warn ? "WARN" : "FAIL");
        rp_ctl_fputs(f, rp_str(c, "name"));
        fputc(' ', f);
        rp_ctl_fputs(f, rp_str(c, "detail"));
        if (*fix && strcmp(fix, "-") != 0) {
            fputs(" (fix: ", f);
            rp_ctl_fputs(f, fix);
            fputc(')', f);
        }
        fputc('\n', f);
    }
    fprintf(f, "%zu ok, %zu warn, %zu fail\n", n_ok, n_warn, n_fail);
}
