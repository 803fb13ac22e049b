/*
 * rp_arith.h - saturating 64-bit arithmetic for measurements (internal to
 * core, hence the rp__ prefix).
 *
 * Times and counts reach the judge from outside: the broker, the database and
 * message headers written by publishers. A corrupt or hostile value must give
 * a wrong but bounded measurement, never signed overflow (undefined
 * behaviour, and a crash under UBSan). Every subtraction of two times and
 * every seconds-to-milliseconds scaling in core goes through these.
 *
 * Ownership: nothing here allocates.
 */
#ifndef RP_ARITH_H
#define RP_ARITH_H

#include <stdint.h>

static inline int64_t rp__sat_add(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t rp__sat_sub(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t rp__sat_mul(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return ((a < 0) != (b < 0)) ? INT64_MIN : INT64_MAX;
    return r;
}

/* Seconds to milliseconds, saturating. */
static inline int64_t rp__s_to_ms(int64_t s) { return rp__sat_mul(s, 1000); }

/* A count that cannot be negative: a negative value from outside reads as 0. */
static inline int64_t rp__nonneg(int64_t v) { return v < 0 ? 0 : v; }

#endif
