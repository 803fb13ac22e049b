/*
 * rp_log.h - one line per event on standard error, JSON or text.
 *
 * A line has a time, a level, a message and optional fields (queue,
 * condition, gate, job, ...). The level is tested before anything is
 * formatted, so a debug line costs a comparison when debug
 * is off (RP_DEBUG, RP_INFO, RP_WARN, RP_ERROR). Callers must never pass a secret or a message body: the log does
 * not know what is secret.
 *
 * Fields are given as a NULL-terminated list of key, value string pairs:
 *   RP_INFO("broker connected", "host", host, "port", port_str, NULL);
 *
 * Ownership: nothing is kept; every string is copied into the line. The
 * logger state is process-wide (set once at start, and on reload, from the
 * loop thread); writing a line is safe from any thread (one write(2) each).
 */
#ifndef RP_LOG_H
#define RP_LOG_H

#include <stdbool.h>

#include "rp_common.h"
#include "rp_config.h"

/* rp_log_level and rp_log_format are the configuration's (log.level,
 * log.format). */
#define RP_LOG_LEVEL_COUNT_ (RP_LOG_ERROR + 1)

extern rp_log_level rp_log_min_level;

/* "debug", "info", "warn", "error"; "unknown" outside the enum. */
const char *rp_log_level_string(rp_log_level l);

/* Sets the level and format; safe while other threads log (a reload sets
 * them from the loop thread). */
void rp_log_setup(rp_log_level min, rp_log_format format);

/* The level in force (an atomic read). */
static inline rp_log_level rp_log_level_now(void) {
    return __atomic_load_n(&rp_log_min_level, __ATOMIC_RELAXED);
}

/* Writes one line: msg, then key/value string pairs ending with NULL. A NULL
 * value is written as null (JSON) or "-" (text). */
void rp_log_write(rp_log_level level, const char *msg, ...) __attribute__((sentinel));

#define RP_LOG_AT(lvl, ...)                                              \
    do {                                                                 \
        if ((lvl) >= rp_log_level_now()) rp_log_write((lvl), __VA_ARGS__); \
    } while (0)
#define RP_DEBUG(...) RP_LOG_AT(RP_LOG_DEBUG, __VA_ARGS__)
#define RP_INFO(...) RP_LOG_AT(RP_LOG_INFO, __VA_ARGS__)
#define RP_WARN(...) RP_LOG_AT(RP_LOG_WARN, __VA_ARGS__)
#define RP_ERROR(...) RP_LOG_AT(RP_LOG_ERROR, __VA_ARGS__)

#endif
