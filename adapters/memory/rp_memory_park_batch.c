/* The park-batch port in memory (rp_memory_park_batch.h). */
#include "rp_memory_park_batch.h"

#include <stdlib.h>
#include <string.h>

#define RP_MPB_QUEUE 16

typedef struct rp_mpb_sent {
    const rp_park_batch_item *items;
    size_t n;
} rp_mpb_sent;

struct rp_memory_park_batch {
    rp_memory *m;
    rp_ports mem; /* the memory store's own ports */
    size_t sessions;
    const char *bad_identity;
    bool down;
    rp_mpb_sent q[RP_MEMORY_PARK_BATCH_MAX_SESSIONS][RP_MPB_QUEUE];
    size_t q_head[RP_MEMORY_PARK_BATCH_MAX_SESSIONS], q_n[RP_MEMORY_PARK_BATCH_MAX_SESSIONS];
    size_t outstanding;
    rp_memory_park_batch_stats stats;
};

static bool rp_mpb_bad(const rp_memory_park_batch *pb, const rp_dead_letter *facts) {
    return pb->bad_identity != NULL && facts != NULL && facts->identity != NULL &&
           strcmp(facts->identity, pb->bad_identity) == 0;
}

static rp_status rp_mpb_send(void *self, size_t session, rp_park_batch_item *items, size_t n) {
    rp_memory_park_batch *pb = self;
    if (session >= pb->sessions || n == 0 || pb->q_n[session] == RP_MPB_QUEUE)
        return RP_ERR_INVALID;
    if (pb->down) return RP_ERR_UNAVAILABLE;
    size_t k = (pb->q_head[session] + pb->q_n[session]) % RP_MPB_QUEUE;
    pb->q[session][k] = (rp_mpb_sent){items, n};
    pb->q_n[session]++;
    pb->outstanding++;
    if (pb->outstanding > pb->stats.max_outstanding) pb->stats.max_outstanding = pb->outstanding;
    pb->stats.sent++;
    pb->stats.sent_on[session]++;
    return RP_OK;
}

static rp_status rp_mpb_recv(void *self, size_t session, rp_park_batch_item *items, size_t n) {
    rp_memory_park_batch *pb = self;
    if (session >= pb->sessions || pb->q_n[session] == 0) return RP_ERR_INVALID;
    rp_mpb_sent s = pb->q[session][pb->q_head[session]];
    pb->q_head[session] = (pb->q_head[session] + 1) % RP_MPB_QUEUE;
    pb->q_n[session]--;
    pb->outstanding--;
    if (s.items != items || s.n != n) pb->stats.order_errors++;
    if (pb->down) return RP_ERR_UNAVAILABLE;
    for (size_t i = 0; i < n; i++)
        if (rp_mpb_bad(pb, items[i].facts)) {
            pb->stats.failed++;
            return RP_ERR_INTERNAL; /* all or nothing: nothing parked */
        }
    for (size_t i = 0; i < n; i++) {
        rp_park_batch_item *it = &items[i];
        rp_status st = pb->mem.dead_letters.park(pb->mem.dead_letters.self, it->vhost, it->queue,
                                                 it->msg, it->facts, it->v, &it->result);
        if (st != RP_OK) {
            pb->stats.failed++;
            return st;
        }
    }
    pb->stats.committed++;
    return RP_OK;
}

/* The memory store's park, failing as the object says. */
static rp_status rp_mpb_park(void *self, const char *vhost, const char *queue,
                             const rp_dl_message *msg, const rp_dead_letter *facts,
                             const rp_verdict *v, rp_park_result *out) {
    rp_memory_park_batch *pb = self;
    pb->stats.singles++;
    memset(out, 0, sizeof *out);
    if (pb->down) return RP_ERR_UNAVAILABLE;
    if (rp_mpb_bad(pb, facts)) return RP_ERR_INTERNAL;
    return pb->mem.dead_letters.park(pb->mem.dead_letters.self, vhost, queue, msg, facts, v, out);
}

static rp_status rp_mpb_is_parked(void *self, const rp_dead_letter *facts, bool *parked) {
    rp_memory_park_batch *pb = self;
    if (pb->down) return RP_ERR_UNAVAILABLE;
    return pb->mem.dead_letters.is_parked(pb->mem.dead_letters.self, facts, parked);
}

static rp_status rp_mpb_peek(void *self, const char *vhost, const char *queue, size_t limit,
                             rp_dl_batch *out) {
    rp_memory_park_batch *pb = self;
    return pb->mem.dead_letters.peek(pb->mem.dead_letters.self, vhost, queue, limit, out);
}

rp_memory_park_batch *rp_memory_park_batch_new(rp_memory *m, size_t sessions) {
    if (sessions == 0 || sessions > RP_MEMORY_PARK_BATCH_MAX_SESSIONS) return NULL;
    rp_memory_park_batch *pb = calloc(1, sizeof *pb);
    if (pb == NULL) return NULL;
    pb->m = m;
    pb->sessions = sessions;
    rp_memory_ports(m, &pb->mem);
    return pb;
}

void rp_memory_park_batch_free(rp_memory_park_batch *pb) { free(pb); }

void rp_memory_park_batch_port(rp_memory_park_batch *pb, rp_park_batch_port *out) {
    *out = (rp_park_batch_port){
        .self = pb, .sessions = pb->sessions, .send = rp_mpb_send, .recv = rp_mpb_recv};
}

void rp_memory_park_batch_ports(rp_memory_park_batch *pb, rp_ports *out) {
    *out = pb->mem;
    out->dead_letters.self = pb;
    out->dead_letters.park = rp_mpb_park;
    out->dead_letters.is_parked = rp_mpb_is_parked;
    out->dead_letters.peek = rp_mpb_peek;
}

void rp_memory_park_batch_fail_identity(rp_memory_park_batch *pb, const char *identity) {
    pb->bad_identity = identity;
}

void rp_memory_park_batch_set_down(rp_memory_park_batch *pb, bool down) { pb->down = down; }

rp_memory_park_batch_stats rp_memory_park_batch_stats_of(const rp_memory_park_batch *pb) {
    return pb->stats;
}
