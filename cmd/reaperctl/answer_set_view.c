/* reaperctl's output for answer sets (answer_set_view.h). */
#include "answer_set_view.h"

#include <stdbool.h>

#include "escape.h"

static long long rp_i(const json_t *o, const char *k) {
    return (long long)json_integer_value(json_object_get(o, k));
}

static const char *rp_s(const json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s != NULL ? s : "-";
}

void rp_ctl_print_answer_many(FILE *f, const json_t *r) {
    bool dry = json_is_true(json_object_get(r, "dry_run"));
    long long total = rp_i(r, "total");
    if (dry) {
        fprintf(f, "would answer %lld gate%s with ", total, total == 1 ? "" : "s");
        rp_ctl_fputs(f, rp_s(r, "choice"));
        fprintf(f, " at %lld a second (about %lld s)", rp_i(r, "rate"),
                (total + rp_i(r, "rate") - 1) / (rp_i(r, "rate") > 0 ? rp_i(r, "rate") : 1));
    } else {
        fprintf(f, "answer set %lld: %lld gate%s to answer with ", rp_i(r, "job"), total,
                total == 1 ? "" : "s");
        rp_ctl_fputs(f, rp_s(r, "choice"));
        fprintf(f, " at %lld a second", rp_i(r, "rate"));
    }
    if (rp_i(r, "skipped") > 0)
        fprintf(f, "; %lld id%s named %s no open gate that takes it", rp_i(r, "skipped"),
                rp_i(r, "skipped") == 1 ? "" : "s", rp_i(r, "skipped") == 1 ? "is" : "are");
    fputs("\n", f);
    const json_t *qs = json_object_get(r, "queues");
    if (json_array_size(qs) > 0) {
        fputs("to the queues they died on:\n", f);
        size_t i;
        const json_t *q;
        json_array_foreach(qs, i, q) {
            fprintf(f, "  %8lld  ", rp_i(q, "count"));
            const char *name = rp_s(q, "queue");
            rp_ctl_fputs(f, name[0] != '\0' ? name : "(no stored dead letter)");
            fputs("\n", f);
        }
        if (rp_i(r, "other_queues") > 0)
            fprintf(f, "  %8lld  (other queues)\n", rp_i(r, "other_queues"));
    }
    if (!dry)
        fprintf(f, "progress: reaperctl answer --status %lld; stop it: reaperctl answer "
                   "--cancel %lld\n",
                rp_i(r, "job"), rp_i(r, "job"));
}

void rp_ctl_print_answer_set(FILE *f, const json_t *r) {
    const json_t *j = json_object_get(r, "job");
    fprintf(f, "answer set %lld: ", rp_i(j, "id"));
    rp_ctl_fputs(f, rp_s(j, "state"));
    if (json_is_true(json_object_get(r, "cancelled"))) fputs(" (cancelled now)", f);
    fprintf(f, ", %lld answered, %lld failed, %lld pending of %lld (", rp_i(j, "answered"),
            rp_i(j, "failed"), rp_i(j, "pending"), rp_i(j, "total"));
    rp_ctl_fputs(f, rp_s(j, "choice"));
    fprintf(f, " at %lld a second)\n", rp_i(j, "rate"));
    fputs("  requested by ", f);
    rp_ctl_fputs(f, rp_s(j, "requested_by"));
    fputs(" at ", f);
    rp_ctl_fputs(f, rp_s(j, "created_at"));
    fputs("\n", f);
    if (json_is_string(json_object_get(j, "running_on"))) {
        fputs("  running on ", f);
        rp_ctl_fputs(f, rp_s(j, "running_on"));
        fputs("\n", f);
    }
    if (json_is_string(json_object_get(j, "stop_reason"))) {
        fputs("  ", f);
        rp_ctl_fputs(f, rp_s(j, "stop_reason"));
        fputs("\n", f);
    }
    if (json_is_string(json_object_get(j, "finished_at"))) {
        fputs("  ended at ", f);
        rp_ctl_fputs(f, rp_s(j, "finished_at"));
        fputs("\n", f);
    }
}
