/* Core's backfill-record port over the PostgreSQL store (rp_pg_backfill.h). */
#include "rp_pg_backfill.h"

#include "rp_pg_replay.h"

static rp_status rp_lock(void *self, const char *vhost, const char *queue, bool *got) {
    return rp_pg_backfill_lock(self, vhost, queue, got);
}

static rp_status rp_unlock(void *self, const char *vhost, const char *queue) {
    return rp_pg_backfill_unlock(self, vhost, queue);
}

static rp_status rp_was_read(void *self, const char *vhost, const char *queue, bool *read,
                             int64_t *unread) {
    return rp_pg_backfill_was_read(self, vhost, queue, read, unread);
}

static rp_status rp_mark_read(void *self, const char *vhost, const char *queue, size_t n,
                              int64_t unread) {
    return rp_pg_backfill_mark_read(self, vhost, queue, n, unread);
}

void rp_pg_backfill_port(rp_pg_store *s, rp_backfill_record_port *out) {
    out->self = s;
    out->lock = rp_lock;
    out->unlock = rp_unlock;
    out->was_read = rp_was_read;
    out->mark_read = rp_mark_read;
}
