/* The decisions from broker events (core/rp_consumers.h), table-driven:
 * each scenario is a list of steps (a time, an input, what core must say
 * back). What core says is rendered as text, one step at a time:
 *   Q+ vhost/name[dlq]  Q- vhost/name          the queue hook; name NULL prints "*"
 *   N name=K  N name=?                        the count the sweep shares
 *   W why name  W- why name                   a reconcile wanted / not (reap.enabled false)
 *   U! policy queue  U policy queue            a pattern over the match limits (first / later)
 *   check@T  rec@T                             the timers to arm
 *   take name/now[ev=K] name/late[ev=K]        the checks due together
 *   begin busy merged=O+A-R again retry=S      the seed
 *   run wait                                   the reconcile timer fired
 * so that a failure prints what was wanted and what came. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_consumers.h"

/* ---- the fake sink ---------------------------------------------------------- */

static char said[4096];

static void say(const char *fmt, ...) RP_PRINTF(1, 2);
static void say(const char *fmt, ...) {
    size_t n = strlen(said);
    if (n > 0 && n < sizeof said - 2) {
        said[n++] = ';';
        said[n++] = ' ';
        said[n] = '\0';
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(said + n, sizeof said - n, fmt, ap);
    va_end(ap);
}

static void on_queue(void *self, const char *vhost, const char *name, bool dlq, bool created) {
    (void)self;
    say("Q%c %s/%s%s", created ? '+' : '-', vhost, name ? name : "*", dlq ? "[dlq]" : "");
}

static void on_recent(void *self, const char *vhost, const char *name, bool known,
                      int64_t consumers, int64_t now, int64_t until) {
    (void)self;
    (void)vhost;
    assert_int_equal(until, now + RP_CONSUMERS_STATS_WINDOW_MS);
    if (known) say("N %s=%lld", name, (long long)consumers);
    else say("N %s=?", name);
}

static void on_reconcile(void *self, bool wanted, const char *why, const char *name) {
    (void)self;
    say("W%s %s %s", wanted ? "" : "-", why, name);
}

static void on_pattern(void *self, bool first, const char *policy, const char *vhost,
                       const char *queue) {
    (void)self;
    (void)vhost;
    say("U%s %s %s", first ? "!" : "", policy, queue);
}

static void on_skipped(void *self, const char *name) {
    (void)self;
    say("skipped %s", name);
}

static void say_due(rp_consumers_due d) {
    if (d.check_at) say("check@%lld", (long long)d.check_at);
    if (d.reconcile_at) say("rec@%lld", (long long)d.reconcile_at);
}

/* ---- the steps ---------------------------------------------------------------- */

typedef enum op {
    END = 0,
    QC,        /* queue.created a (vhost b, default "/") */
    QD,        /* queue.deleted a */
    CC,        /* consumer.created queue a, channel b, tag c */
    CD,        /* consumer.deleted queue a, channel b, tag c, user d */
    CH,        /* channel.closed b */
    PSET,      /* policy.set a with pattern b (NULL: none), vhost c (default "/") */
    PCLR,      /* policy.cleared a */
    BIND,      /* binding.created to a */
    EXCH,      /* exchange.deleted a */
    SEED,      /* seed_begin */
    SEED_ABORT,
    LISTED,    /* seed_done with items a ("q:2,r:?,s.dlq:0"), n: 1 stale, 2 failed */
    TAKE,      /* take_due */
    DONE,      /* check_done, every item read as a ("R/U/C", "gone", "nostats"); n 1: stale */
    FIRE,      /* the reconcile timer fired */
    REC_ABORT, /* the reconcile could not be started */
    REC_DONE,  /* reconcile_done, n 1: back off */
    COUNT,     /* rp_consumers_count of a */
    OWNED,     /* whether a is owned, and how many are */
} op;

typedef struct step {
    int64_t t;
    op op;
    const char *a, *b, *c, *d;
    int64_t n;
    const char *want;
} step;

typedef struct scenario {
    const char *name;
    bool disabled; /* reap.enabled false */
    const step *steps;
} scenario;

typedef struct run {
    rp_config cfg;
    rp_consumers *c;
    rp_consumers_batch batch;
} run;

static const char *const own[] = {"vibey-reap", "vibey-reap-classic", NULL};

static void event(run *r, rp_broker_event_kind kind, const char *key, const step *s) {
    rp_broker_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    snprintf(ev.routing_key, sizeof ev.routing_key, "%s", key);
    snprintf(ev.vhost, sizeof ev.vhost, "%s", "/");
    if (s->a) snprintf(ev.name, sizeof ev.name, "%s", s->a);
    switch (kind) {
    case RP_BEV_QUEUE_CREATED:
        if (s->b) snprintf(ev.vhost, sizeof ev.vhost, "%s", s->b);
        break;
    case RP_BEV_CONSUMER_CREATED:
    case RP_BEV_CONSUMER_DELETED:
    case RP_BEV_CHANNEL_CLOSED:
        if (s->b) snprintf(ev.pid, sizeof ev.pid, "%s", s->b);
        if (s->c) snprintf(ev.consumer_tag, sizeof ev.consumer_tag, "%s", s->c);
        if (s->d) snprintf(ev.user, sizeof ev.user, "%s", s->d);
        break;
    case RP_BEV_POLICY_SET:
        if (s->b) {
            ev.has_pattern = true;
            snprintf(ev.pattern, sizeof ev.pattern, "%s", s->b);
        }
        if (s->c) snprintf(ev.vhost, sizeof ev.vhost, "%s", s->c);
        break;
    default:
        break;
    }
    ev.has_timestamp = true;
    ev.timestamp_ms = 1700000000000LL + s->t;
    say_due(rp_consumers_on_event(r->c, &r->cfg, &ev, s->t));
}

/* "q:2,r:?" -> items; the strings point into buf. */
static size_t items_of(const char *spec, char *buf, size_t cap, rp_consumers_seed_item *items,
                       size_t max) {
    size_t n = 0;
    if (spec == NULL || spec[0] == '\0') return 0;
    snprintf(buf, cap, "%s", spec);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && n < max;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        assert_non_null(colon);
        *colon = '\0';
        rp_consumers_seed_item *it = &items[n++];
        it->vhost = "/";
        it->name = tok;
        it->dlq = strstr(tok, ".dlq") != NULL;
        it->consumers_known = colon[1] != '?';
        it->consumers = it->consumers_known ? atoll(colon + 1) : 0;
    }
    return n;
}

static void reading_of(const char *spec, rp_consumers_check *it) {
    it->got = (rp_consumers_reading){0};
    if (strcmp(spec, "gone") == 0) {
        it->read_status = RP_ERR_NOT_FOUND;
        return;
    }
    it->read_status = RP_OK;
    it->got.read = true;
    if (strcmp(spec, "nostats") == 0) return;
    long long ready, unacked, consumers;
    assert_int_equal(sscanf(spec, "%lld/%lld/%lld", &ready, &unacked, &consumers), 3);
    it->got.counts_known = it->got.consumers_known = true;
    it->got.ready = ready;
    it->got.unacked = unacked;
    it->got.consumers = consumers;
}

static void step_run(run *r, const step *s) {
    switch (s->op) {
    case QC: event(r, RP_BEV_QUEUE_CREATED, "queue.created", s); break;
    case QD: event(r, RP_BEV_QUEUE_DELETED, "queue.deleted", s); break;
    case CC: event(r, RP_BEV_CONSUMER_CREATED, "consumer.created", s); break;
    case CD: event(r, RP_BEV_CONSUMER_DELETED, "consumer.deleted", s); break;
    case CH: event(r, RP_BEV_CHANNEL_CLOSED, "channel.closed", s); break;
    case PSET: event(r, RP_BEV_POLICY_SET, "policy.set", s); break;
    case PCLR: event(r, RP_BEV_POLICY_CLEARED, "policy.cleared", s); break;
    case BIND: event(r, RP_BEV_BINDING_CREATED, "binding.created", s); break;
    case EXCH: event(r, RP_BEV_EXCHANGE_DELETED, "exchange.deleted", s); break;
    case SEED: say(rp_consumers_seed_begin(r->c, s->t) ? "begin" : "busy"); break;
    case SEED_ABORT: rp_consumers_seed_abort(r->c); break;
    case LISTED: {
        char buf[512];
        rp_consumers_seed_item items[16];
        size_t n = items_of(s->a, buf, sizeof buf, items, 16);
        rp_consumers_seed_result res = rp_consumers_seed_done(
            r->c, s->n == 1, s->n == 2 ? RP_ERR_IO : RP_OK, items, n, s->t);
        if (res.outcome == RP_SEED_AGAIN) say("again");
        else if (res.outcome == RP_SEED_RETRY) say("retry=%d", res.retry_s);
        else say("merged=%zu+%zu-%zu", res.owned, res.added, res.removed);
        break;
    }
    case TAKE: {
        rp_consumers_due due;
        rp_consumers_batch_cleanup(&r->batch);
        assert_int_equal(rp_consumers_take_due(r->c, s->t, &r->batch, &due), RP_OK);
        if (r->batch.n > 0) {
            char line[1024] = "take";
            for (size_t i = 0; i < r->batch.n; i++) {
                const rp_consumers_check *it = &r->batch.items[i];
                char ev[32] = "";
                if (it->override) snprintf(ev, sizeof ev, "[ev=%lld]", (long long)it->consumers_ev);
                size_t len = strlen(line);
                snprintf(line + len, sizeof line - len, " %s/%s%s", it->name,
                         it->late ? "late" : "now", ev);
            }
            say("%s", line);
        }
        say_due(due);
        break;
    }
    case DONE:
        for (size_t i = 0; i < r->batch.n; i++) reading_of(s->a, &r->batch.items[i]);
        say_due(rp_consumers_check_done(r->c, &r->batch, s->n == 1, s->t));
        rp_consumers_batch_cleanup(&r->batch);
        break;
    case FIRE: {
        rp_consumers_due due;
        say(rp_consumers_reconcile_fire(r->c, s->t, &due) ? "run" : "wait");
        say_due(due);
        break;
    }
    case REC_ABORT: rp_consumers_reconcile_abort(r->c); break;
    case REC_DONE: say_due(rp_consumers_reconcile_done(r->c, s->n == 1, s->t)); break;
    case COUNT: {
        int64_t k = -1;
        if (rp_consumers_count(r->c, "/", s->a, s->t, &k)) say("count=%lld", (long long)k);
        else say("count=?");
        break;
    }
    case OWNED:
        say("%s %s, owned=%zu", s->a, rp_consumers_is_owned(r->c, "/", s->a) ? "owned" : "not owned",
            rp_consumers_owned(r->c));
        break;
    case END:
    default: fail_msg("bad step");
    }
}

static void play(const scenario *sc) {
    run r;
    memset(&r, 0, sizeof r);
    assert_int_equal(rp_config_init(&r.cfg), RP_OK);
    rp_config_problems problems;
    rp_config_problems_init(&problems);
    assert_int_equal(rp_config_validate(&r.cfg, &problems), RP_OK); /* compiles the patterns */
    rp_config_problems_cleanup(&problems);
    r.cfg.reap.enabled = !sc->disabled;
    rp_consumers_sink sink = {NULL, on_queue, on_recent, on_reconcile, on_pattern, on_skipped};
    r.c = rp_consumers_new(&sink, own);
    assert_non_null(r.c);
    for (size_t i = 0; sc->steps[i].op != END; i++) {
        said[0] = '\0';
        step_run(&r, &sc->steps[i]);
        if (strcmp(said, sc->steps[i].want) != 0)
            fail_msg("%s, step %zu (t=%lld):\n  want: %s\n  got:  %s", sc->name, i + 1,
                     (long long)sc->steps[i].t, sc->steps[i].want, said);
    }
    rp_consumers_batch_cleanup(&r.batch);
    rp_consumers_free(r.c);
    rp_config_cleanup(&r.cfg);
}

#define S(...) ((const step[]){__VA_ARGS__, {0, END, NULL, NULL, NULL, NULL, 0, NULL}})

/* ---- the rules ---------------------------------------------------------------- */

/* A consumer gone from an owned queue (basic.cancel, the channel left open)
 * gives ONE check RP_CONSUMERS_NOW_MS after the first event however many
 * events follow, using the events' count (the statistics lag), then one
 * check after the statistics emission: 6.5 s after the latest event. */
static const scenario cancel_debounced = {"cancel: one check after the debounce", false, S(
    {1000, QC, "vibey.a", .want = "Q+ //vibey.a; W owned queue created vibey.a; rec@2000"},
    {1100, CC, "vibey.a", "<0.1.0>", "t1", .want = "N vibey.a=1"},
    {1101, CC, "vibey.a", "<0.1.0>", "t2", .want = "N vibey.a=2"},
    {2000, CD, "vibey.a", "<0.1.0>", "t1", "guest", .want = "N vibey.a=1; check@2150"},
    {2040, CD, "vibey.a", "<0.1.0>", "t2", "guest", .want = "N vibey.a=0; check@2150"},
    {2100, CD, "vibey.a", "<0.1.0>", "t3", "guest", .want = "N vibey.a=0; check@2150"},
    {2149, TAKE, .want = "check@2150"},
    {2150, TAKE, .want = "take vibey.a/now[ev=0]"},
    {2151, TAKE, .want = ""}, /* one in flight: nothing more */
    {2300, DONE, "0/2/1", .want = "check@8600"},
    {8599, TAKE, .want = "check@8600"},
    {8600, TAKE, .want = "take vibey.a/late[ev=0]"},
    {9000, DONE, "0/2/0", .want = ""},
    {9001, TAKE, .want = ""})};

/* Events keep coming: the later check moves with the latest event, but
 * never past 20 s after the first. */
static const scenario late_capped = {"the later check is capped", false, S(
    {1000, QC, "vibey.a", .want = "Q+ //vibey.a; W owned queue created vibey.a; rec@2000"},
    {2000, CD, "vibey.a", "<0.1.0>", "t1", "guest", .want = "N vibey.a=0; check@2150"},
    {2150, TAKE, .want = "take vibey.a/now[ev=0]"},
    {2200, DONE, "0/1/1", .want = "check@8500"},
    {8000, CD, "vibey.a", "<0.1.0>", "t2", "guest", .want = "N vibey.a=0; check@8150"},
    {8150, TAKE, .want = "take vibey.a/now[ev=0]"},
    {8200, DONE, "0/1/1", .want = "check@14500"},
    {14000, CD, "vibey.a", "<0.1.0>", "t3", "guest", .want = "N vibey.a=0; check@14150"},
    {14150, TAKE, .want = "take vibey.a/now[ev=0]"},
    {14200, DONE, "0/1/1", .want = "check@20500"},
    {20000, CD, "vibey.a", "<0.1.0>", "t4", "guest", .want = "N vibey.a=0; check@20150"},
    {20150, TAKE, .want = "take vibey.a/now[ev=0]"},
    {20200, DONE, "0/1/1", .want = "check@22000"}, /* 2000 + 20000, not 26500 */
    {22000, TAKE, .want = "take vibey.a/late[ev=0]"})};

/* A later check that reads what the check at once read (no statistics
 * emission since), or no statistics, is made again 5 s later, three
 * checks after the emission at most; a fresh reading with no event since
 * sets the base again. */
static const scenario recheck_after_stats = {"re-check after the statistics", false, S(
    {100, SEED, .want = "begin"},
    {200, LISTED, "vibey.a:1", .want = "Q+ //vibey.a; merged=1+1-0"},
    {1000, CD, "vibey.a", "<0.1.0>", "t0", "guest", .want = "N vibey.a=0; check@1150"},
    {1150, TAKE, .want = "take vibey.a/now[ev=0]"},
    {1200, DONE, "0/3/1", .want = "check@7500"},
    {7500, TAKE, .want = "take vibey.a/late[ev=0]"},
    {7600, DONE, "0/3/1", .want = "check@12600"}, /* the same reading: again */
    {12600, TAKE, .want = "take vibey.a/late[ev=0]"},
    {12700, DONE, "nostats", .want = "check@17700"}, /* no statistics: again */
    {17700, TAKE, .want = "take vibey.a/late[ev=0]"},
    {17800, DONE, "0/3/1", .want = ""}, /* the third: no more */
    {17900, COUNT, "vibey.a", .want = "count=0"},
    {20000, CD, "vibey.a", "<0.2.0>", "t9", "guest", .want = "N vibey.a=0; check@20150"},
    {20150, TAKE, .want = "take vibey.a/now[ev=0]"},
    {20200, DONE, "0/3/0", .want = "check@26500"},
    {26500, TAKE, .want = "take vibey.a/late[ev=0]"},
    {26600, DONE, "0/0/4", .want = ""}, /* fresh: the base is the reading's */
    {26700, COUNT, "vibey.a", .want = "count=4"})};

/* A channel that closed requeues its deliveries; the statistics still show
 * them unacknowledged, so for a statistics interval the events' count is
 * not used (4.0.5 sends only channel.closed; 3.10.8 a consumer.deleted by
 * rmq-internal first). */
static const scenario channel_closed = {"channel closed: the reading decides", false, S(
    {1000, QC, "vibey.a", .want = "Q+ //vibey.a; W owned queue created vibey.a; rec@2000"},
    {1000, QC, "vibey.b", .want = "Q+ //vibey.b; W owned queue created vibey.b"},
    {1100, CC, "vibey.a", "<0.7.0>", "t1", .want = "N vibey.a=1"},
    {1100, CC, "vibey.b", "<0.8.0>", "t1", .want = "N vibey.b=1"},
    {2000, CH, NULL, "<0.7.0>", .want = "N vibey.a=?; check@2150"},
    {2150, TAKE, .want = "take vibey.a/now"},
    {2200, DONE, "3/0/1", .want = "check@8500"},
    {2200, COUNT, "vibey.a", .want = "count=?"},
    {2200, COUNT, "vibey.b", .want = "count=1"},
    {8500, COUNT, "vibey.a", .want = "count=0"},
    {8500, TAKE, .want = "take vibey.a/late[ev=0]"},
    {8600, DONE, "3/0/0", .want = ""},
    {9000, CD, "vibey.b", "<0.8.0>", "t1", "rmq-internal", .want = "N vibey.b=?; check@9150"},
    {9001, CH, NULL, "<0.8.0>", .want = "N vibey.b=?; check@9150"},
    {9100, CH, NULL, "<0.9.0>", .want = "check@9150"}, /* no consumer of an owned queue */
    {9150, TAKE, .want = "take vibey.b/now"})};

/* Queues that are not owned are not counted and give no check. */
static const scenario not_owned = {"a queue not owned is ignored", false, S(
    {1000, QC, "other.q", .want = ""},
    {1100, CC, "other.q", "<0.1.0>", "t1", .want = ""},
    {1200, CD, "other.q", "<0.1.0>", "t1", "guest", .want = ""},
    {1300, CH, NULL, "<0.1.0>", .want = ""},
    {1400, QD, "other.q", .want = ""},
    {1500, COUNT, "other.q", .want = "count=?"},
    {1500, OWNED, "other.q", .want = "other.q not owned, owned=0"},
    {1600, TAKE, .want = ""},
    {1700, QC, "vibey.x.dlq", .want = "Q+ //vibey.x.dlq[dlq]; W owned queue created vibey.x.dlq; rec@2700"},
    {1800, QC, "other.dlq", .want = ""})};

/* queue.deleted of an owned queue: the hook hears it, and its check comes
 * (what was sighted on it clears). */
static const scenario deleted = {"an owned queue deleted is checked", false, S(
    {1000, QC, "vibey.a", .want = "Q+ //vibey.a; W owned queue created vibey.a; rec@2000"},
    {1500, QD, "vibey.a", .want = "Q- //vibey.a; check@1650"},
    {1500, OWNED, "vibey.a", .want = "vibey.a not owned, owned=0"},
    {1650, TAKE, .want = "take vibey.a/now"})};

/* A seed replaces the inventory and the counts, and keeps what events said
 * while it listed: queues created after it began stay, queues deleted
 * during it do not come back, consumers created after it began stay
 * counted on top of the listing's count, earlier ones are in the count. */
static const scenario seed_merge = {"a seed replaces counts, keeps events seen during it", false, S(
    {100, SEED, .want = "begin"},
    {200, LISTED, "vibey.old:1,vibey.stale:0", .want = "Q+ //vibey.old; Q+ //vibey.stale; merged=2+2-0"},
    {250, COUNT, "vibey.old", .want = "count=1"},
    {300, CC, "vibey.old", "<0.1.0>", "t1", .want = "N vibey.old=2"},
    {1000, SEED, .want = "begin"},
    {1100, CC, "vibey.old", "<0.2.0>", "t2", .want = "N vibey.old=3"},
    {1200, QC, "vibey.new", .want = "Q+ //vibey.new; W owned queue created vibey.new; rec@2200"},
    {1300, QD, "vibey.gone", .want = ""},
    {1500, LISTED, "vibey.old:5,vibey.gone:0", .want = "Q- //vibey.stale; merged=2+0-1"},
    {1600, COUNT, "vibey.old", .want = "count=6"}, /* 5 listed + t2 seen after the listing began */
    {1600, OWNED, "vibey.new", .want = "vibey.new owned, owned=2"},
    {1600, OWNED, "vibey.gone", .want = "vibey.gone not owned, owned=2"},
    {1600, OWNED, "vibey.stale", .want = "vibey.stale not owned, owned=2"},
    /* the tombs are for one listing only */
    {2000, SEED, .want = "begin"},
    {2100, LISTED, "vibey.old:5,vibey.new:0,vibey.gone:?", .want = "Q+ //vibey.gone; merged=3+1-0"},
    {2100, COUNT, "vibey.gone", .want = "count=?"})};

/* A listing that began before a reconnect (or while another was asked for)
 * is not merged: listed again. A failed one is retried after 5 s doubling
 * to 5 min; a success resets that. */
static const scenario seed_again = {"a seed is redone or retried", false, S(
    {100, SEED, .want = "begin"},
    {150, SEED, .want = "busy"},
    {200, LISTED, "vibey.a:0", .want = "again"},
    {200, OWNED, "vibey.a", .want = "vibey.a not owned, owned=0"},
    {200, SEED, .want = "begin"},
    {300, LISTED, "vibey.a:0", .n = 1, .want = "again"},
    {300, SEED, .want = "begin"},
    {400, LISTED, NULL, .n = 2, .want = "retry=5"},
    {400, SEED, .want = "begin"}, {500, LISTED, NULL, .n = 2, .want = "retry=10"},
    {500, SEED, .want = "begin"}, {600, LISTED, NULL, .n = 2, .want = "retry=20"},
    {600, SEED, .want = "begin"}, {700, LISTED, NULL, .n = 2, .want = "retry=40"},
    {700, SEED, .want = "begin"}, {800, LISTED, NULL, .n = 2, .want = "retry=80"},
    {800, SEED, .want = "begin"}, {900, LISTED, NULL, .n = 2, .want = "retry=160"},
    {900, SEED, .want = "begin"}, {1000, LISTED, NULL, .n = 2, .want = "retry=300"},
    {1000, SEED, .want = "begin"}, {1100, LISTED, NULL, .n = 2, .want = "retry=300"},
    {1100, SEED, .want = "begin"}, {1200, LISTED, "vibey.a:0", .want = "Q+ //vibey.a; merged=1+1-0"},
    {1200, SEED, .want = "begin"}, {1300, LISTED, NULL, .n = 2, .want = "retry=5"},
    {1300, SEED, .want = "begin"}, {1300, SEED_ABORT, .want = ""},
    {1400, SEED, .want = "begin"})};

/* Reconciles: 1 s after the first asking event, never more often than
 * every 10 s (from the end of the last), one timer for many events, none
 * while one runs; the gap doubles while the broker refuses or the policy
 * keeps being changed back (up to 5 min), and is 10 s again after a quiet
 * one. */
static const scenario reconcile_gap = {"reconcile not more often than every 10 s", false, S(
    {1000, QC, "vibey.a", .want = "Q+ //vibey.a; W owned queue created vibey.a; rec@2000"},
    {1500, QC, "vibey.b", .want = "Q+ //vibey.b; W owned queue created vibey.b"},
    {2000, FIRE, .want = "run"},
    {2500, QC, "vibey.c", .want = "Q+ //vibey.c; W owned queue created vibey.c"},
    {3000, REC_DONE, .want = "rec@13000"},
    {4000, QC, "vibey.d", .want = "Q+ //vibey.d; W owned queue created vibey.d"},
    {12999, FIRE, .want = "wait; rec@13999"}, /* early: at least the 1 s delay again */
    {13999, FIRE, .want = "run"},
    {14000, REC_DONE, .n = 1, .want = ""}, /* nothing wanted meanwhile: no timer */
    {15000, PSET, "vibey-reap", "^vibey\\.", .want = "W policy.set vibey-reap; Q+ //*; rec@34000"},
    {33999, FIRE, .want = "wait; rec@34999"},
    {34999, FIRE, .want = "run"},
    {35000, REC_DONE, .n = 1, .want = ""},
    {35001, PCLR, "vibey-reap", .want = "W policy.cleared vibey-reap; Q+ //*; rec@75000"},
    {75000, FIRE, .want = "run"},
    {75000, REC_ABORT, .want = ""}, /* could not start: still wanted, the next event arms */
    {75500, PCLR, "vibey-reap", .want = "W policy.cleared vibey-reap; Q+ //*; rec@76500"},
    {76500, FIRE, .want = "run"},
    {77000, REC_DONE, .n = 1, .want = ""},
    {77000, PCLR, "vibey-reap", .want = "W policy.cleared vibey-reap; Q+ //*; rec@157000"},
    {157000, FIRE, .want = "run"},
    {158000, REC_DONE, .n = 1, .want = ""},
    {158000, PCLR, "vibey-reap", .want = "W policy.cleared vibey-reap; Q+ //*; rec@318000"},
    {318000, FIRE, .want = "run"},
    {319000, REC_DONE, .n = 1, .want = ""},
    {319000, PCLR, "vibey-reap", .want = "W policy.cleared vibey-reap; Q+ //*; rec@619000"},
    {619000, FIRE, .want = "run"},
    {620000, REC_DONE, .n = 1, .want = ""}, /* at most 5 min */
    {620000, PCLR, "vibey-reap", .want = "W policy.cleared vibey-reap; Q+ //*; rec@920000"},
    {920000, FIRE, .want = "run"},
    {921000, REC_DONE, .n = 0, .want = ""}, /* a quiet one: 10 s again */
    {921000, PCLR, "vibey-reap", .want = "W policy.cleared vibey-reap; Q+ //*; rec@931000"})};

/* reap.enabled false: events still say what changed and checks still run,
 * but no reconcile is wanted (it writes to the broker). */
static const scenario reap_disabled = {"no reconcile while reap.enabled is false", true, S(
    {1000, QC, "vibey.a", .want = "Q+ //vibey.a; W- owned queue created vibey.a"},
    {1100, PSET, "vibey-reap", NULL, .want = "W- policy.set vibey-reap; Q+ //*"},
    {2000, FIRE, .want = "wait"},
    {2100, CD, "vibey.a", "<0.1.0>", "t1", "guest", .want = "N vibey.a=0; check@2250"})};

/* Which policy events concern reaper: its own policies; a pattern that
 * matches an owned queue of that vhost; a policy without pattern (cleared)
 * when the vhost has owned queues; a pattern it cannot compile or match
 * within the limits (the reconcile decides). */
static const scenario policy_relevance = {"which policy events are relevant", false, S(
    {100, PSET, "theirs", "^vibey\\.", .want = ""}, /* no owned queue yet */
    {200, PCLR, "theirs", .want = ""},
    {1000, QC, "vibey.a", .want = "Q+ //vibey.a; W owned queue created vibey.a; rec@2000"},
    {1100, PSET, "theirs", "^other\\.", .want = ""},
    {1200, PSET, "theirs", "^vibey\\.a$", "/other", .want = ""},
    {1300, PSET, "theirs", "^vibey\\.a$", .want = "W policy.set theirs; Q+ //*"},
    {1400, PCLR, "theirs", .want = "W policy.cleared theirs; Q+ //*"},
    {1500, PSET, "theirs", "([", .want = "W policy.set theirs; Q+ //*"},
    {1600, PSET, "vibey-reap-classic", "^nothing$", "/other", .want = "W policy.set vibey-reap-classic; Q+ /other/*"},
    {1700, QC, "vibey.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
     .want = "Q+ //vibey.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab; "
             "W owned queue created vibey.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"},
    {1800, QD, "vibey.a", .want = "Q- //vibey.a; check@1950"},
    {1900, PSET, "theirs", "(a+)+$",
     .want = "U! theirs vibey.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab; W policy.set theirs; Q+ //*"},
    {1900, PSET, "theirs", "(a+)+$",
     .want = "U theirs vibey.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab; W policy.set theirs; Q+ //*"})};

/* Routes: a binding or an exchange of a vhost says "its owned queues'
 * routes changed" (the tap derives its bindings again), but the tap
 * queue's own bindings are what a reconcile writes: ignored. */
static const scenario routes = {"route events reach the hook, the tap's own do not", false, S(
    {1000, BIND, "vibey.reap.tap", .want = ""},
    {1100, BIND, "vibey.a.dlq", .want = "Q+ //*"},
    {1200, BIND, "", .want = "Q+ //*"},
    {1300, EXCH, "vibey.dlx", .want = "Q+ //*"})};

/* A check that ran across a reconnect teaches nothing about the counts. */
static const scenario stale_check = {"a check across a reconnect changes no base", false, S(
    {100, SEED, .want = "begin"},
    {200, LISTED, "vibey.a:2", .want = "Q+ //vibey.a; merged=1+1-0"},
    {1000, CD, "vibey.a", "<0.1.0>", "t0", "guest", .want = "N vibey.a=1; check@1150"},
    {1150, TAKE, .want = "take vibey.a/now[ev=1]"},
    {1200, DONE, "0/0/1", .want = "check@7500"},
    {7500, TAKE, .want = "take vibey.a/late[ev=1]"},
    {7600, DONE, "0/0/7", .n = 1, .want = ""},
    {7700, COUNT, "vibey.a", .want = "count=1"})};

static void t_scenario(void **state) { play(*state); }

#define T(sc) {(sc).name, t_scenario, NULL, NULL, (void *)&(sc)}

int main(void) {
    const struct CMUnitTest tests[] = {
        T(cancel_debounced), T(late_capped),   T(recheck_after_stats), T(channel_closed),
        T(not_owned),        T(deleted),       T(seed_merge),          T(seed_again),
        T(reconcile_gap),    T(reap_disabled), T(policy_relevance),    T(routes),
        T(stale_check),
    };
    return cmocka_run_group_tests_name("consumers", tests, NULL, NULL);
}
