/* libFuzzer entry for dead-letter header handling (core/rp_deadletter.h,
 * rp_untrusted.h, rp_judge_dead_letter): hostile header models must never
 * crash, leak or break the invariants of the identity and the rendering.
 *
 * The input is read as a header model:
 *   byte 0      presence flags: bit 0 message_id, 1 x-first-death-queue,
 *               2 x-first-death-reason, 3 use the dead-letter pattern
 *   then        three length-prefixed strings (1 length byte each):
 *               message_id, x-first-death-queue, x-first-death-reason
 *   then        1 byte: number of x-death entries, each
 *               1 flag byte (bit 0 queue, 1 reason, 2 time, 3 count),
 *               two length-prefixed strings (queue, reason),
 *               8 bytes time, 8 bytes count (little-endian)
 *   the rest    the body.
 * A short input simply ends the model early. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rp_deadletter.h"
#include "rp_judge.h"
#include "rp_untrusted.h"
#include "rp_utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static uint8_t take_byte(reader *r) {
    if (r->n == 0) return 0;
    r->n--;
    return *r->p++;
}

static rp_bytes take_str(reader *r) {
    size_t len = take_byte(r);
    if (len > r->n) len = r->n;
    rp_bytes b = {r->p, len};
    r->p += len;
    r->n -= len;
    return b;
}

static int64_t take_i64(reader *r) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)take_byte(r) << (8 * i);
    return (int64_t)v;
}

static pcre2_code *pattern(void) {
    static pcre2_code *re;
    if (re == NULL) {
        int err;
        PCRE2_SIZE off;
        re = pcre2_compile((PCRE2_SPTR) "(\\.dlq|\\.dead)$", PCRE2_ZERO_TERMINATED, 0, &err, &off,
                           NULL);
        if (re == NULL) abort();
    }
    return re;
}

static void check_rendering(const char *s, size_t len) {
    char *out = NULL;
    if (rp_untrusted_render((rp_bytes){(const uint8_t *)s, len}, &out) != RP_OK) abort();
    size_t n = strlen(out);
    if (n < 2 || out[0] != '"' || !rp_utf8_valid((const uint8_t *)out, n)) abort();
    for (size_t i = 0; i < n; i++)
        if ((uint8_t)out[i] < 0x20 || out[i] == 0x7f) abort();
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size};
    uint8_t flags = take_byte(&r);
    rp_dl_headers h = {0};
    rp_bytes id = take_str(&r), fq = take_str(&r), fr = take_str(&r);
    h.message_id = (rp_opt_str){(flags & 1) != 0, id};
    h.first_death_queue = (rp_opt_str){(flags & 2) != 0, fq};
    h.first_death_reason = (rp_opt_str){(flags & 4) != 0, fr};
    size_t n = take_byte(&r);
    rp_xdeath *e = n ? calloc(n, sizeof *e) : NULL;
    for (size_t i = 0; i < n; i++) {
        uint8_t ef = take_byte(&r);
        rp_bytes q = take_str(&r), why = take_str(&r);
        e[i].queue = (rp_opt_str){(ef & 1) != 0, q};
        e[i].reason = (rp_opt_str){(ef & 2) != 0, why};
        e[i].time = (rp_opt_i64){(ef & 4) != 0, take_i64(&r)};
        e[i].count = (rp_opt_i64){(ef & 8) != 0, take_i64(&r)};
    }
    h.x_death = e;
    h.n_x_death = n;
    rp_bytes body = {r.p, r.n};

    rp_dead_letter d;
    const pcre2_code *re = (flags & 8) ? pattern() : NULL;
    rp_status st = rp_dead_letter_examine(&h, "/", "vibey.x.dlq", re, body, &d);
    if (st == RP_OK) {
        /* The identity is printable and takes one of its two forms; the
         * death is "<time or nothing>/<count>". */
        size_t il = strlen(d.identity);
        if (d.identity_by_id) {
            if (strncmp(d.identity, "id:%2F/", 7) != 0 || il < 9) abort();
        } else if (il != RP_DL_DIGEST_IDENTITY_LEN + 4 ||
                   strncmp(d.identity, "sha256:%2F/", 11) != 0) {
            abort();
        }
        if (d.death == NULL || strchr(d.death, '/') == NULL || d.deaths < 0) abort();
        for (size_t i = 0; i < il; i++)
            if ((uint8_t)d.identity[i] < 0x20 || d.identity[i] == 0x7f) abort();
        if (d.origin_queue_len == 0 || d.reason_len == 0) abort();
        check_rendering(d.origin_queue, d.origin_queue_len);
        check_rendering(d.reason, d.reason_len);
        rp_verdict v;
        if (rp_judge_dead_letter(&d, "/", "vibey.x.dlq", &v) != RP_OK) abort();
        if (v.trusted || v.detail == NULL) abort();
        rp_verdict_cleanup(&v);
    } else if (st != RP_ERR_NOMEM) {
        abort();
    }
    rp_dead_letter_cleanup(&d);
    free(e);
    return 0;
}
