#include "rp_deadletter.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "rp_match.h"
#include "rp_text.h"
#include "rp_utf8.h"

void rp_dead_letter_init(rp_dead_letter *d) { memset(d, 0, sizeof *d); }

void rp_dead_letter_cleanup(rp_dead_letter *d) {
    free(d->identity);
    free(d->origin_queue);
    free(d->reason);
    free(d->death);
    memset(d, 0, sizeof *d);
}

static bool rp_slice_ok(rp_bytes b) { return b.ptr != NULL || b.len == 0; }

/* A present, non-empty, well-formed optional string. */
static bool rp_usable(const rp_opt_str *s) {
    return s->present && s->value.len > 0 && s->value.ptr != NULL;
}

const rp_xdeath *rp_dl_oldest_entry(const rp_dl_headers *h) {
    if (h->x_death == NULL || h->n_x_death == 0) return NULL;
    const rp_xdeath *best = NULL;
    for (size_t i = 0; i < h->n_x_death; i++) {
        const rp_xdeath *e = &h->x_death[i];
        if (!e->time.present) continue;
        /* "<=" so that on a tie the later entry, the older by the broker's
         * newest-first order, wins. */
        if (best == NULL || e->time.value <= best->time.value) best = e;
    }
    return best ? best : &h->x_death[h->n_x_death - 1];
}

bool rp_dl_message_id_usable(rp_bytes id) {
    if (id.ptr == NULL || id.len == 0 || id.len > RP_DL_MESSAGE_ID_MAX) return false;
    size_t i = 0;
    while (i < id.len) {
        uint32_t cp;
        size_t n = rp_utf8_next(id.ptr + i, id.len - i, &cp);
        if (n == 0 || rp_utf8_is_control(cp)) return false;
        i += n;
    }
    return true;
}

size_t rp_dl_render_time(bool known, int64_t seconds, char buf[RP_DL_TIME_BUF]) {
    if (!known) {
        buf[0] = '\0';
        return 0;
    }
    return rp_text_i64(seconds, buf);
}

/* SHA-256, fetched from OpenSSL's provider once: EVP_sha256() in
 * EVP_DigestInit_ex fetches it again on every call (OpenSSL 3), which cost
 * about half of each identity's digest in a storm (issue 21 item 3). Never
 * freed (one object for the process); NULL when the fetch fails, and the
 * implicit fetch is used then. */
static const EVP_MD *rp_sha256(void) {
    static _Atomic(EVP_MD *) md;
    EVP_MD *m = atomic_load_explicit(&md, memory_order_acquire);
    if (m != NULL) return m;
    m = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (m == NULL) return EVP_sha256();
    EVP_MD *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&md, &none, m, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        EVP_MD_free(m); /* another thread's won */
        return none;
    }
    return m;
}

rp_status rp_dl_digest_identity(rp_bytes origin, bool first_death_known, int64_t first_death_at,
                                rp_bytes body, char out[RP_DL_DIGEST_IDENTITY_LEN + 1]) {
    out[0] = '\0';
    if (!rp_slice_ok(origin) || !rp_slice_ok(body)) return RP_ERR_INVALID;
    char when[RP_DL_TIME_BUF];
    size_t when_len = rp_dl_render_time(first_death_known, first_death_at, when);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == NULL) return RP_ERR_NOMEM;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    int ok = EVP_DigestInit_ex(ctx, rp_sha256(), NULL) &&
             (origin.len == 0 || EVP_DigestUpdate(ctx, origin.ptr, origin.len)) &&
             EVP_DigestUpdate(ctx, "\n", 1) &&
             (when_len == 0 || EVP_DigestUpdate(ctx, when, when_len)) &&
             EVP_DigestUpdate(ctx, "\n", 1) &&
             (body.len == 0 || EVP_DigestUpdate(ctx, body.ptr, body.len)) &&
             EVP_DigestFinal_ex(ctx, md, &md_len);
    EVP_MD_CTX_free(ctx);
    if (!ok || md_len != 32) return RP_ERR_INTERNAL;
    static const char hex[] = "0123456789abcdef";
    memcpy(out, "sha256:", 7);
    for (unsigned i = 0; i < md_len; i++) {
        out[7 + 2 * i] = hex[md[i] >> 4];
        out[7 + 2 * i + 1] = hex[md[i] & 0x0F];
    }
    out[RP_DL_DIGEST_IDENTITY_LEN] = '\0';
    return RP_OK;
}

rp_status rp_dl_escape(rp_bytes in, char **out) {
    *out = NULL;
    if (!rp_slice_ok(in)) return RP_ERR_INVALID;
    if (in.len > (SIZE_MAX - 1) / 3) return RP_ERR_TOO_LARGE;
    char *s = malloc(in.len * 3 + 1);
    if (s == NULL) return RP_ERR_NOMEM;
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (size_t i = 0; i < in.len; i++) {
        uint8_t c = in.ptr[i];
        if (c >= '!' && c <= '~' && c != '%' && c != '/') {
            s[n++] = (char)c;
        } else {
            s[n++] = '%';
            s[n++] = hex[c >> 4];
            s[n++] = hex[c & 0x0F];
        }
    }
    s[n] = '\0';
    *out = s;
    return RP_OK;
}

int64_t rp_dl_death_count(const rp_dl_headers *h) {
    int64_t sum = 0;
    for (size_t i = 0; h->x_death != NULL && i < h->n_x_death; i++) {
        const rp_opt_i64 *c = &h->x_death[i].count;
        int64_t add = c->present && c->value >= 1 ? c->value : 1;
        sum = sum > INT64_MAX - add ? INT64_MAX : sum + add;
    }
    return sum;
}

/* Copies len bytes into a new heap buffer with a NUL after them. */
static rp_status rp_dup_bytes(const uint8_t *p, size_t len, char **out, size_t *out_len) {
    if (len == SIZE_MAX) return RP_ERR_TOO_LARGE;
    char *s = malloc(len + 1);
    if (s == NULL) return RP_ERR_NOMEM;
    if (len) memcpy(s, p, len);
    s[len] = '\0';
    *out = s;
    *out_len = len;
    return RP_OK;
}

/* ORIGIN rule 3: the queue's name less the first match of the pattern. */
static rp_status rp_origin_from_name(const char *dlq_name, const pcre2_code *re, char **out,
                                     size_t *out_len) {
    rp_status st = rp_match_cut(re, dlq_name, out);
    if (st == RP_OK) *out_len = strlen(*out);
    return st;
}

static rp_status rp_find_origin(const rp_dl_headers *h, const rp_xdeath *oldest,
                                const char *dlq_name, const pcre2_code *re, rp_dead_letter *d) {
    if (rp_usable(&h->first_death_queue)) {
        d->origin_from = RP_DL_ORIGIN_FIRST_DEATH_HEADER;
        return rp_dup_bytes(h->first_death_queue.value.ptr, h->first_death_queue.value.len,
                            &d->origin_queue, &d->origin_queue_len);
    }
    if (oldest != NULL && rp_usable(&oldest->queue)) {
        d->origin_from = RP_DL_ORIGIN_X_DEATH;
        return rp_dup_bytes(oldest->queue.value.ptr, oldest->queue.value.len, &d->origin_queue,
                            &d->origin_queue_len);
    }
    d->origin_from = RP_DL_ORIGIN_QUEUE_NAME;
    return rp_origin_from_name(dlq_name, re, &d->origin_queue, &d->origin_queue_len);
}

static rp_status rp_find_reason(const rp_dl_headers *h, const rp_xdeath *oldest,
                                rp_dead_letter *d) {
    if (rp_usable(&h->first_death_reason)) {
        d->reason_from = RP_DL_REASON_FIRST_DEATH_HEADER;
        return rp_dup_bytes(h->first_death_reason.value.ptr, h->first_death_reason.value.len,
                            &d->reason, &d->reason_len);
    }
    if (oldest != NULL && rp_usable(&oldest->reason)) {
        d->reason_from = RP_DL_REASON_X_DEATH;
        return rp_dup_bytes(oldest->reason.value.ptr, oldest->reason.value.len, &d->reason,
                            &d->reason_len);
    }
    d->reason_from = RP_DL_REASON_UNKNOWN;
    return rp_dup_bytes((const uint8_t *)"unknown", 7, &d->reason, &d->reason_len);
}

static rp_status rp_find_identity(const rp_dl_headers *h, const char *vhost, rp_bytes body,
                                  rp_dead_letter *d) {
    char *ev = NULL, *eo = NULL;
    rp_status st = rp_dl_escape((rp_bytes){(const uint8_t *)vhost, strlen(vhost)}, &ev);
    if (st != RP_OK) return st;
    if (h->message_id.present && rp_dl_message_id_usable(h->message_id.value) &&
        d->origin_queue_len <= RP_DL_ORIGIN_ID_MAX) {
        st = rp_dl_escape((rp_bytes){(const uint8_t *)d->origin_queue, d->origin_queue_len}, &eo);
        if (st == RP_OK)
            st = rp_text_format(&d->identity, "id:%s/%s/%.*s", ev, eo,
                                (int)h->message_id.value.len,
                                (const char *)h->message_id.value.ptr);
        d->identity_by_id = true;
    } else {
        char digest[RP_DL_DIGEST_IDENTITY_LEN + 1];
        rp_bytes origin = {(const uint8_t *)d->origin_queue, d->origin_queue_len};
        st = rp_dl_digest_identity(origin, d->first_death_known, d->first_death_at, body, digest);
        /* Joined, not formatted (issue 21): "sha256:%s/%s". */
        const char *parts[] = {"sha256:", ev, "/", digest + 7};
        if (st == RP_OK) st = rp_text_join(&d->identity, parts, sizeof parts / sizeof parts[0]);
        d->identity_by_id = false;
    }
    free(ev);
    free(eo);
    return st;
}

static rp_status rp_find_death(const rp_dl_headers *h, rp_dead_letter *d) {
    char when[RP_DL_TIME_BUF];
    rp_dl_render_time(d->first_death_known, d->first_death_at, when);
    d->deaths = rp_dl_death_count(h);
    /* Joined, not formatted (issue 21): "%s/%" PRId64. */
    char count[RP_TEXT_I64_BUF];
    rp_text_i64(d->deaths, count);
    const char *parts[] = {when, "/", count};
    return rp_text_join(&d->death, parts, sizeof parts / sizeof parts[0]);
}

rp_status rp_dead_letter_examine(const rp_dl_headers *h, const char *vhost, const char *dlq_name,
                                 const pcre2_code *dlq_pattern, rp_bytes body,
                                 rp_dead_letter *out) {
    rp_dead_letter_init(out);
    if (h == NULL || vhost == NULL || dlq_name == NULL || !rp_slice_ok(body))
        return RP_ERR_INVALID;
    if (h->n_x_death != 0 && h->x_death == NULL) return RP_ERR_INVALID;
    const rp_xdeath *oldest = rp_dl_oldest_entry(h);
    if (oldest != NULL && oldest->time.present) {
        out->first_death_known = true;
        out->first_death_at = oldest->time.value;
    }
    rp_status st = rp_find_origin(h, oldest, dlq_name, dlq_pattern, out);
    if (st == RP_OK) st = rp_find_reason(h, oldest, out);
    if (st == RP_OK) st = rp_find_identity(h, vhost, body, out);
    if (st == RP_OK) st = rp_find_death(h, out);
    return st;
}
