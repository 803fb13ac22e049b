/*
 * rp_common.h - small definitions every layer of reaper shares.
 *
 * Naming: public names start with rp_ (types rp_*_t are avoided; plain
 * rp_name), internal helpers of one file are static, internal helpers shared
 * between the files of one layer start with rp__.
 *
 * Ownership: nothing here allocates.
 */
#ifndef RP_COMMON_H
#define RP_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define RP_MUSTCHECK __attribute__((warn_unused_result))
#define RP_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define RP_UNUSED(x) ((void)(x))
#define RP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A borrowed byte slice: the struct never owns ptr. */
typedef struct rp_bytes {
    const uint8_t *ptr;
    size_t len;
} rp_bytes;

/* Time in reaper is always Unix time in milliseconds, passed in by the
 * caller: core never reads a clock. */
typedef int64_t rp_time_ms;

#endif
