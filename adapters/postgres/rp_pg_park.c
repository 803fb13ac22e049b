/* The dead-letter park: is_parked, and park, idempotent by identity and
 * death (rp_pg_store.h, rp_deadletter.h OCCURRENCE). Every park, one dead
 * letter or a batch, is the set statement PARK_SET (rp_pg_sql.c) over
 * arrays: a batch of n costs one statement, not n. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rp_json_out.h"
#include "rp_log.h"
#include "rp_pg_binarray.h"
#include "rp_pg_store_internal.h"
#include "rp_text.h"
#include "rp_untrusted.h"

/* Years 0001..9999, what a timestamptz surely holds: a first death outside
 * (the x-death time is the publisher's to write) is stored as unknown
 * rather than failing the park of that message for ever. */
#define RP_PG_MIN_UNIX_S (-62135596800LL)
#define RP_PG_MAX_UNIX_S (253402300799LL)

/* The set statement's parameters (rp_pg_sql.c): RP_PARK_NCOLS arrays,
 * then the project. */
#define RP_PARK_NCOLS 14
#define RP_PARK_NPARAMS (RP_PARK_NCOLS + 1)

static rp_status rp_is_parked(void *self, const rp_dead_letter *facts, bool *parked) {
    rp_pg_store *s = self;
    *parked = false;
    if (facts == NULL || facts->identity == NULL || facts->death == NULL) return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "is_parked");
    if (st != RP_OK) return st;
    const char *vals[] = {facts->identity, facts->death};
    rp__pg_cmd k = {.stmt = RP__PG_IS_PARKED, .n = 2, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "is_parked", NULL);
    if (st != RP_OK) return st;
    *parked = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return RP_OK;
}

/* The bus.dead_letter job's payload: where the message was found and what
 * it is, for the person and for a replay; appended to w. */
static rp_status rp_job_payload_to(rp_jout *w, const char *vhost, const char *queue,
                                   const char *identity, const char *origin, const char *reason) {
    if (identity == NULL || queue == NULL || origin == NULL || reason == NULL)
        return RP_ERR_INVALID;
    rp_jout_obj_open(w);
    rp_jout_lit(w, "identity");
    rp_jout_strz(w, identity);
    rp_jout_lit(w, "vhost");
    rp_jout_strz(w, vhost);
    rp_jout_lit(w, "queue");
    rp_jout_strz(w, queue);
    rp_jout_lit(w, "origin_queue");
    rp_jout_strz(w, origin);
    rp_jout_lit(w, "reason");
    rp_jout_strz(w, reason);
    rp_jout_obj_close(w);
    return w->failed ? RP_ERR_INVALID : RP_OK; /* a text not UTF-8, or no memory */
}

/* An item's texts. In a batch, an item may share the previous item's
 * (rp_park_text_build_next): then shared_names says that origin, reason,
 * shown_queue and question are the previous item's pointers, freed with
 * it (an earlier item of the batch), not here. The job and ledger payloads
 * are not the item's: they lie in the park's arena (one rp_jout for every
 * item of a park, issue 21: two heap texts per dead letter before), at
 * job_at and ledger_at, and move with it until it is complete. */
typedef struct rp_park_text {
    char *origin, *reason, *shown_queue, *question;
    size_t job_at, job_len, ledger_at, ledger_len;
    bool shared_names;
} rp_park_text;

static void rp_park_text_cleanup(rp_park_text *t) {
    if (!t->shared_names) {
        free(t->origin);
        free(t->reason);
        free(t->shown_queue);
        free(t->question);
    }
}

/* The item's two payloads, appended to the arena. */
static rp_status rp_park_payloads(rp_jout *arena, rp_park_text *t, const char *vhost,
                                  const char *queue, const rp_dead_letter *facts,
                                  const rp_verdict *v) {
    t->job_at = arena->len;
    rp_status st = rp_job_payload_to(arena, vhost, queue, facts->identity, t->origin, t->reason);
    if (st != RP_OK) return st; /* or no memory; both refuse */
    t->job_len = arena->len - t->job_at;
    t->ledger_at = arena->len;
    st = rp__pg_payload_to(arena, v);
    t->ledger_len = arena->len - t->ledger_at;
    return st;
}

static rp_status rp_park_text_build(rp_park_text *t, rp_jout *arena, const char *vhost,
                                    const char *queue, const rp_dead_letter *facts,
                                    const rp_verdict *v) {
    rp_status st = rp_untrusted_render(
        (rp_bytes){(const uint8_t *)facts->origin_queue, facts->origin_queue_len}, &t->origin);
    if (st == RP_OK)
        st = rp_untrusted_render((rp_bytes){(const uint8_t *)facts->reason, facts->reason_len},
                                 &t->reason);
    if (st == RP_OK)
        st = rp_untrusted_render((rp_bytes){(const uint8_t *)queue, strlen(queue)},
                                 &t->shown_queue);
    if (st == RP_OK) {
        /* Joined, not formatted: the same sentence as the format "A message
         * that died on %s (reason %s) was found on dead-letter queue %s and
         * parked: ..." without parsing it per dead letter. */
        const char *parts[] = {"A message that died on ", t->origin, " (reason ", t->reason,
                               ") was found on dead-letter queue ", t->shown_queue,
                               " and parked: replay it to the queue it died on, or dismiss it?"};
        st = rp_text_join(&t->question, parts, sizeof parts / sizeof parts[0]);
    }
    if (st == RP_OK) st = rp_park_payloads(arena, t, vhost, queue, facts, v);
    return st;
}

static bool rp_same_str(const char *a, const char *b) {
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool rp_same_bytes(const char *a, size_t alen, const char *b, size_t blen) {
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* The texts of item `it` of a batch whose previous item was `prev` (texts
 * pt): a storm's dead letters mostly share their origin, reason and queue,
 * so the texts made of those alone (three renders and the question: the
 * same bytes for the same inputs) are the previous item's rather than made
 * again. The job and ledger payloads name the identity: made for each. */
static rp_status rp_park_text_build_next(rp_park_text *t, rp_jout *arena,
                                         const rp_pg_park_item *it, const rp_pg_park_item *prev,
                                         const rp_park_text *pt) {
    const rp_dead_letter *f = it->facts, *pf = prev->facts;
    bool same = rp_same_str(it->queue, prev->queue) &&
                rp_same_bytes(f->origin_queue, f->origin_queue_len, pf->origin_queue,
                              pf->origin_queue_len) &&
                rp_same_bytes(f->reason, f->reason_len, pf->reason, pf->reason_len);
    if (!same) return rp_park_text_build(t, arena, it->vhost, it->queue, f, it->v);
    t->origin = pt->origin;
    t->reason = pt->reason;
    t->shown_queue = pt->shown_queue;
    t->question = pt->question;
    t->shared_names = true;
    return rp_park_payloads(arena, t, it->vhost, it->queue, f, it->v);
}

/* The columns of one item, as the set statement binds them (NULL: SQL
 * NULL). texts: the item's rendered texts; death: room for the first
 * death's digits. */
typedef struct rp_park_row {
    const char *text[RP_PARK_NCOLS];
    size_t len[RP_PARK_NCOLS]; /* strlen of each text (0 for NULL) */
    const void *body;
    size_t body_len;
} rp_park_row;

static void rp_park_row_fill(rp_park_row *r, const rp_pg_park_item *it, const rp_park_text *t,
                             const char *arena, char death[24]) {
    const rp_dead_letter *f = it->facts;
    const rp_pg_dl_handle *h = it->msg->handle;
    size_t body_len = it->msg->body.len;
    bool truncated = it->msg->body_truncated;
    if (truncated || body_len > RP_PG_DL_BODY_MAX) {
        if (body_len > RP_PG_DL_BODY_MAX) body_len = RP_PG_DL_BODY_MAX;
        truncated = true;
    }
    bool death_known = f->first_death_known && f->first_death_at >= RP_PG_MIN_UNIX_S &&
                       f->first_death_at <= RP_PG_MAX_UNIX_S;
    const char *v[RP_PARK_NCOLS] = {
        f->identity,
        it->queue,
        t->origin,
        t->reason,
        death_known ? rp__pg_itoa(f->first_death_at, death) : NULL,
        h && h->headers_json ? h->headers_json : "{}",
        h && h->properties_json ? h->properties_json : "{}",
        NULL, /* the body: bytes, below */
        truncated ? "t" : "f",
        arena + t->job_at,
        t->question,
        arena + t->ledger_at,
        f->death,
        it->vhost,
    };
    memcpy(r->text, v, sizeof v);
    /* The payloads lie in the arena one after the other, unterminated. */
    for (int c = 0; c < RP_PARK_NCOLS; c++)
        r->len[c] = c == 9 ? t->job_len : c == 11 ? t->ledger_len : v[c] ? strlen(v[c]) : 0;
    /* An empty body is an empty value, never NULL. */
    r->body = it->msg->body.len > 0 ? (const void *)it->msg->body.ptr : "";
    r->body_len = body_len;
}

static bool rp_item_valid(const rp_pg_park_item *it) {
    return it->vhost != NULL && it->queue != NULL && it->msg != NULL && it->facts != NULL &&
           it->facts->identity != NULL && it->facts->death != NULL && it->v != NULL &&
           !(it->msg->body.len > 0 && it->msg->body.ptr == NULL);
}

/* ---- runs: no identity twice in one statement ---------------------------- */

/* The set statement reads the table as it was when the statement began, so
 * two deaths of one identity in one statement would not see each other (the
 * OCCURRENCE rule numbers and covers them in order). A batch is therefore
 * parked in runs, consecutive statements of one transaction: a run ends
 * before the item whose identity it holds already. Items, their events and
 * their ledger numbers keep the batch's order; a storm's batch is one run. */
typedef struct rp_run_key {
    const char *identity;
    size_t i;
} rp_run_key;

static int rp_run_cmp(const void *a, const void *b) {
    const rp_run_key *x = a, *y = b;
    int c = strcmp(x->identity, y->identity);
    if (c != 0) return c;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* run[i] for every item (0, 1, ... in order); returns the number of runs
 * (0: no memory). */
static size_t rp_runs(const rp_pg_park_item *items, size_t n, size_t *run) {
    rp_run_key *k = malloc(n * sizeof *k);
    size_t *prev = malloc(n * sizeof *prev); /* the last item before of its identity, or n */
    if (k == NULL || prev == NULL) {
        free(k);
        free(prev);
        return 0;
    }
    for (size_t i = 0; i < n; i++) k[i] = (rp_run_key){items[i].facts->identity, i};
    qsort(k, n, sizeof *k, rp_run_cmp);
    for (size_t j = 0; j < n; j++)
        prev[k[j].i] = j > 0 && strcmp(k[j].identity, k[j - 1].identity) == 0 ? k[j - 1].i : n;
    size_t runs = 1, start = 0;
    for (size_t i = 0; i < n; i++) {
        if (prev[i] != n && prev[i] >= start) {
            runs++;
            start = i;
        }
        run[i] = runs - 1;
    }
    free(k);
    free(prev);
    return runs;
}

/* ---- one statement's parameters ------------------------------------------ */

typedef struct rp_park_set {
    rp_pg_binarray col[RP_PARK_NCOLS];
    const char *vals[RP_PARK_NPARAMS];
    int lengths[RP_PARK_NPARAMS];
    int formats[RP_PARK_NPARAMS];
} rp_park_set;

static void rp_park_set_cleanup(rp_park_set *p) {
    for (int c = 0; c < RP_PARK_NCOLS; c++) rp_pg_binarray_cleanup(&p->col[c]);
}

/* The parameters of run r: the items whose run is r, in order. */
static rp_status rp_park_set_build(rp_park_set *p, const rp_park_row *rows, const size_t *run,
                                   size_t n, size_t r) {
    memset(p, 0, sizeof *p);
    uint32_t count = 0;
    /* Each column's bytes counted first and reserved at once (issue 21). */
    size_t bytes[RP_PARK_NCOLS] = {0};
    for (size_t i = 0; i < n; i++) {
        if (run[i] != r) continue;
        count++;
        for (int c = 0; c < RP_PARK_NCOLS; c++) {
            size_t len = c == 7 ? rows[i].body_len : rows[i].len[c];
            bytes[c] += 4 + len;
        }
    }
    for (int c = 0; c < RP_PARK_NCOLS; c++) {
        rp_pg_binarray_begin(&p->col[c], c == 7 ? RP_PG_OID_BYTEA : RP_PG_OID_TEXT, count);
        rp_pg_binarray_reserve(&p->col[c], bytes[c]);
    }
    for (size_t i = 0; i < n; i++) {
        if (run[i] != r) continue;
        for (int c = 0; c < RP_PARK_NCOLS; c++) {
            if (c == 7)
                rp_pg_binarray_add(&p->col[c], rows[i].body, rows[i].body_len);
            else
                rp_pg_binarray_add(&p->col[c], rows[i].text[c], rows[i].len[c]);
        }
    }
    for (int c = 0; c < RP_PARK_NCOLS; c++) {
        if (!rp_pg_binarray_ok(&p->col[c])) {
            rp_park_set_cleanup(p);
            return RP_ERR_NOMEM;
        }
        p->vals[c] = p->col[c].data;
        p->lengths[c] = (int)p->col[c].len;
        p->formats[c] = 1;
    }
    p->vals[RP_PARK_NCOLS] = RP_PG_BUS_PROJECT;
    return RP_OK;
}

/* Fills the results of run r from its statement's result. */
static void rp_park_set_results(rp_pg_park_item *items, const size_t *run, size_t n, size_t r,
                                PGresult *res) {
    /* The rows name the position in the run (1-based), ascending. */
    size_t pos = 0, i = 0;
    for (int row = 0; row < PQntuples(res); row++) {
        int64_t ord = rp__pg_i64(res, row, 0);
        for (; i < n; i++) {
            if (run[i] != r) continue;
            if ((int64_t)++pos == ord) break;
        }
        if (i == n) return; /* not one of ours: ignored, as before */
        rp_park_result *out = &items[i].result;
        out->parked = true;
        out->event.seq = rp__pg_i64(res, row, 1);
        out->event.at = rp__pg_i64(res, row, 2);
        out->job_id = rp__pg_i64(res, row, 3);
        out->gate_id = rp__pg_i64(res, row, 4);
        i++;
    }
}

/* ---- a park segment's lead and its commit's check ---------------------------- */

/* The commands before the parks in a segment: the lead (RP_PARK_LEAD_SQL). */
#define RP_PARK_LEAD 1
/* The lead is one statement doing two things.
 *
 * The plan mode: the park's plan does not depend on the data (inserts from
 * unnested parameters, the conflict on the primary key, joins of the sets
 * it inserted): within this transaction its generic plan is made once for
 * the session and reused, instead of a custom plan planned at every park
 * (rp_pg_store.c's plan mode, there for statements whose plans do depend on
 * the table). Local: it ends with the transaction (set_config rather than
 * SET LOCAL, which warns outside an explicit block).
 *
 * The standby's wait: a synchronous standby (synchronous_standby_names)
 * is what makes an acked dead letter survive a crash of the primary, but
 * PostgreSQL waits for it only at the commit of a transaction that has a
 * transaction id AND wrote WAL (xact.c RecordTransactionCommit: "we only
 * want to wait if this backend assigned an xid and wrote WAL"; an id alone,
 * pg_current_xact_id(), is not enough: checked). A park whose dead letters
 * are all on the primary already (committed there by a park whose wait was
 * cancelled, redelivered after a restart) inserts nothing, so its commit
 * would not wait, and the tap would ack rows the standby may not have. A
 * transactional logical message (a few bytes of WAL; it takes a
 * transaction id) makes every park's commit wait for the standby to have
 * its commit record, hence every commit before it (WAL is one sequence).
 * A park that inserts writes WAL anyway: it costs a few bytes there; no
 * privilege is needed. Decoders that ask for messages see prefix
 * "reaper.park". */
#define RP_PARK_LEAD_SQL                                                                   \
    "SELECT set_config('plan_cache_mode', 'force_generic_plan', true), "                   \
    "pg_logical_emit_message(true, 'reaper.park', '')"

/* A commit whose wait for the synchronous standby is cancelled (reaperd's
 * own cancel when a stop's grace runs out, an operator's pg_cancel_backend)
 * comes back as a success with a WARNING: committed on the primary alone.
 * A park whose results came with such a WARNING (rp_pg_conn_sync_warnings:
 * not a trigger's or an extension's, which would fail every park) is not
 * trusted: the session is dropped and the park fails (nothing acked;
 * delivered again). Both park paths (the batch's segments, and the
 * one-by-one park of rp_park that isolates a bad row and serves backfill)
 * keep this rule. */
static bool rp_park_warned(rp_pg_store *s, unsigned long w0, const char *op) {
    if (rp_pg_conn_sync_warnings(s->conn) == w0) return false;
    RP_WARN("a park's commit came back with a WARNING (its wait for a synchronous standby "
            "cancelled?): its dead letters are not acked; the session is dropped",
            "op", op, NULL);
    rp__pg_lose_session(s);
    return true;
}

/* ---- the park port's park(): a set of one --------------------------------- */

static rp_status rp_park(void *self, const char *vhost, const char *queue, const rp_dl_message *msg,
                         const rp_dead_letter *facts, const rp_verdict *v, rp_park_result *out) {
    rp_pg_store *s = self;
    memset(out, 0, sizeof *out);
    rp_pg_park_item it = {vhost, queue, msg, facts, v, {0}};
    if (!rp_item_valid(&it)) return RP_ERR_INVALID;
    rp_park_text t = {0};
    rp_jout arena;
    rp_jout_init(&arena);
    rp_status st = rp_park_text_build(&t, &arena, vhost, queue, facts, v);
    if (st == RP_OK) st = rp__pg_enter(s, RP__PG_WRITE, "park");
    if (st != RP_OK) {
        rp_park_text_cleanup(&t);
        rp_jout_free(&arena);
        return st;
    }
    char death[24];
    rp_park_row row;
    rp_park_row_fill(&row, &it, &t, arena.buf, death);
    size_t run = 0;
    rp_park_set p;
    st = rp_park_set_build(&p, &row, &run, 1, 0);
    if (st == RP_OK) {
        /* The batch's segment, of one: the same lead (the standby's wait),
         * the same check of its commit (rp_park_warned). */
        rp__pg_cmd k[2] = {{.stmt = -1, .sql = RP_PARK_LEAD_SQL},
                           {.stmt = RP__PG_PARK_SET, .n = RP_PARK_NPARAMS, .values = p.vals,
                            .lengths = p.lengths, .formats = p.formats}};
        PGresult *r[2] = {NULL, NULL};
        unsigned long w0 = rp_pg_conn_sync_warnings(s->conn);
        st = rp__pg_run(s, k, 2, r, "park", NULL);
        if (st == RP_OK && rp_park_warned(s, w0, "park")) {
            rp__pg_clear(r, 2);
            st = RP_ERR_UNAVAILABLE;
        }
        if (st == RP_OK) {
            rp_park_set_results(&it, &run, 1, 0, r[1]);
            *out = it.result;
            rp__pg_clear(r, 2);
        }
        rp_park_set_cleanup(&p);
    }
    rp_park_text_cleanup(&t);
    rp_jout_free(&arena);
    return st;
}

void rp__pg_fill_park(rp_dead_letter_port *out) {
    out->peek = NULL;
    out->is_parked = rp_is_parked;
    out->park = rp_park;
}

/* ---- the batch park (rp_pg_store.h) ----------------------------------------- */

/* A batch's bound parameters, as rp_pg_park_send binds them: its texts,
 * rows, runs, and one statement's parameters a run (k[RP_PARK_LEAD ..]). */
typedef struct rp_park_params {
    size_t n, runs, built;
    rp_jout arena; /* every item's job and ledger payloads */
    rp_park_text *t;
    rp_park_row *rows;
    char (*death)[24];
    size_t *run;
    rp_park_set *sets;
    rp__pg_cmd *k;
} rp_park_params;

static void rp_park_params_cleanup(rp_park_params *pp) {
    for (size_t r = 0; pp->sets && r < pp->built; r++) rp_park_set_cleanup(&pp->sets[r]);
    for (size_t i = 0; pp->t && i < pp->n; i++) rp_park_text_cleanup(&pp->t[i]);
    rp_jout_free(&pp->arena);
    free(pp->t);
    free(pp->rows);
    free(pp->death);
    free(pp->run);
    free(pp->sets);
    free(pp->k);
    memset(pp, 0, sizeof *pp);
}

/* n zeroed items of size bytes (NULL when out of memory or n * size
 * overflows), as calloc, but zeroed by memset. A batch's arrays of texts
 * and rows are tens of KiB (large allocations), freed after every send: a
 * calloc of such a size is served from a freed extent, which jemalloc
 * (reaperd links it) zeroes by handing its pages back to the kernel
 * (madvise MADV_DONTNEED) rather than writing zeros. That is a TLB
 * shootdown on every CPU the process runs on and a page fault for every
 * page touched again: in a storm it was most of reaperd's madvise calls,
 * each one a wait for the other CPU (tests/unit/test_pg_park_zeroed.c
 * counts them). memset writes the zeros in place; it is called through a
 * volatile pointer because GCC and clang turn a malloc followed by a
 * memset of the same size back into calloc. */
static void *(*volatile const rp_park_memset)(void *, int, size_t) = memset;

static void *rp_park_zeroed(size_t n, size_t size) {
    if (size != 0 && n > SIZE_MAX / size) return NULL;
    size_t bytes = n * size;
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (p != NULL) rp_park_memset(p, 0, bytes);
    return p;
}

/* Renders the items' texts and binds them (cleanup either way). */
static rp_status rp_park_params_build(rp_park_params *pp, rp_pg_park_item *items, size_t n) {
    memset(pp, 0, sizeof *pp);
    rp_jout_init(&pp->arena);
    if (items == NULL || n == 0 || n > 100000) return RP_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        memset(&items[i].result, 0, sizeof items[i].result);
        if (!rp_item_valid(&items[i])) return RP_ERR_INVALID;
    }
    pp->n = n;
    pp->t = rp_park_zeroed(n, sizeof *pp->t);
    pp->rows = rp_park_zeroed(n, sizeof *pp->rows);
    pp->death = rp_park_zeroed(n, sizeof *pp->death);
    pp->run = rp_park_zeroed(n, sizeof *pp->run);
    if (!pp->t || !pp->rows || !pp->death || !pp->run ||
        (pp->runs = rp_runs(items, n, pp->run)) == 0)
        return RP_ERR_NOMEM;
    pp->sets = rp_park_zeroed(pp->runs, sizeof *pp->sets);
    pp->k = rp_park_zeroed(pp->runs + RP_PARK_LEAD, sizeof *pp->k);
    if (!pp->sets || !pp->k) return RP_ERR_NOMEM;
    rp_status st = RP_OK;
    for (size_t i = 0; i < n && st == RP_OK; i++)
        st = i == 0 ? rp_park_text_build(&pp->t[i], &pp->arena, items[i].vhost, items[i].queue,
                                         items[i].facts, items[i].v)
                    : rp_park_text_build_next(&pp->t[i], &pp->arena, &items[i], &items[i - 1],
                                              &pp->t[i - 1]);
    /* The arena is complete: it moves no more. */
    for (size_t i = 0; i < n && st == RP_OK; i++)
        rp_park_row_fill(&pp->rows[i], &items[i], &pp->t[i], pp->arena.buf, pp->death[i]);
    for (; pp->built < pp->runs && st == RP_OK; pp->built++) {
        st = rp_park_set_build(&pp->sets[pp->built], pp->rows, pp->run, n, pp->built);
        if (st != RP_OK) break;
        pp->k[pp->built + RP_PARK_LEAD] =
            (rp__pg_cmd){.stmt = RP__PG_PARK_SET, .n = RP_PARK_NPARAMS,
                         .values = pp->sets[pp->built].vals,
                         .lengths = pp->sets[pp->built].lengths,
                         .formats = pp->sets[pp->built].formats};
    }
    /* No BEGIN: the segment is one implicit transaction, committed at its
     * sync (rp__pg_send), so that one that fails leaves the next alone. */
    pp->k[0] = (rp__pg_cmd){.stmt = -1, .sql = RP_PARK_LEAD_SQL};
    return st;
}

rp_status rp__pg_park_params(rp_pg_park_item *items, size_t n, rp__pg_park_visit visit,
                             void *arg) {
    rp_park_params pp;
    rp_status st = rp_park_params_build(&pp, items, n);
    if (st == RP_OK && visit != NULL) visit(arg, pp.k, pp.runs + RP_PARK_LEAD);
    rp_park_params_cleanup(&pp);
    return st;
}

rp_status rp_pg_park_send(rp_pg_store *s, rp_pg_park_item *items, size_t n) {
    if (s == NULL) return RP_ERR_INVALID;
    rp_park_params pp;
    rp_status st = rp_park_params_build(&pp, items, n);
    /* Nothing outstanding: a port call's usual start (connect, prepare).
     * Otherwise the session is the one the outstanding segments went on
     * (rp__pg_send refuses another). */
    if (st == RP_OK && s->pending == 0) st = rp__pg_enter(s, RP__PG_WRITE, "park_batch");
    /* libpq copies the values as it sends: nothing here need outlive this. */
    if (st == RP_OK) st = rp__pg_send(s, pp.k, pp.runs + RP_PARK_LEAD, "park_batch");
    rp_park_params_cleanup(&pp);
    return st;
}

rp_status rp_pg_park_recv(rp_pg_store *s, rp_pg_park_item *items, size_t n) {
    if (s == NULL || items == NULL || n == 0 || n > 100000) return RP_ERR_INVALID;
    /* The same runs as the send computed: the same items. */
    size_t *run = calloc(n, sizeof *run);
    size_t runs = run ? rp_runs(items, n, run) : 0;
    rp__pg_cmd *k = runs ? calloc(runs + RP_PARK_LEAD, sizeof *k) : NULL;
    PGresult **res = runs ? calloc(runs + RP_PARK_LEAD, sizeof *res) : NULL;
    if (k == NULL || res == NULL) {
        /* Its results must still be read, or every later call would read
         * them as its own: give the session up instead. */
        free(run);
        free(k);
        free(res);
        rp__pg_lose_session(s);
        return RP_ERR_UNAVAILABLE;
    }
    k[0] = (rp__pg_cmd){.stmt = -1, .sql = RP_PARK_LEAD_SQL};
    for (size_t r = 0; r < runs; r++) k[r + RP_PARK_LEAD] = (rp__pg_cmd){.stmt = RP__PG_PARK_SET};
    char code[6];
    unsigned long w0 = rp_pg_conn_sync_warnings(s->conn);
    rp_status st = rp__pg_recv(s, k, runs + RP_PARK_LEAD, res, "park_batch", code);
    if (st == RP_OK && rp_park_warned(s, w0, "park_batch")) {
        /* Committed on the primary, perhaps not on its synchronous standby
         * (above): not acked. */
        rp__pg_clear(res, runs + RP_PARK_LEAD);
        st = RP_ERR_UNAVAILABLE;
    }
    if (st == RP_OK) {
        for (size_t r = 0; r < runs; r++)
            rp_park_set_results(items, run, n, r, res[r + RP_PARK_LEAD]);
        rp__pg_clear(res, runs + RP_PARK_LEAD);
    }
    free(run);
    free(k);
    free(res);
    return st;
}

rp_status rp_pg_park_batch(rp_pg_store *s, rp_pg_park_item *items, size_t n) {
    if (s != NULL && s->pending > 0) return RP_ERR_INVALID;
    rp_status st = rp_pg_park_send(s, items, n);
    if (st == RP_OK) st = rp_pg_park_recv(s, items, n);
    return st;
}
