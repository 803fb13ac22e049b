/*
 * rp_config_internal.h - what the rp_config_*.c files of core share: the row
 * of the key table, the validators the table names, and small text helpers.
 * Not for other layers: they use rp_config.h.
 *
 * Ownership: nothing here allocates except rp__cfg_buf (the caller frees
 * b->s) and what rp_config_problems_add() copies.
 */
#ifndef RP_CONFIG_INTERNAL_H
#define RP_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_config.h"

typedef struct rp__config_row rp__config_row;

/* A whole-value validator, run by rp_config_validate() on the effective
 * value. It reports through rp__cfg_problem() and returns RP_OK, or
 * RP_ERR_NOMEM when it could not run. */
typedef rp_status (*rp__config_check_fn)(const rp__config_row *row, rp_config *cfg,
                                         rp_config_problems *p);
/* A secret detector, run when a value is set: returns a static sentence
 * saying what secret the value carries, or NULL. A value it flags is refused
 * and never stored. */
typedef const char *(*rp__config_leak_fn)(const char *value);

#define RP__CFG_SECRET 1u   /* masked in output; its value is never echoed */
#define RP__CFG_ENV_ONLY 2u /* refused from a file */
#define RP__CFG_NO_ECHO 4u  /* never quote its value in a message (URLs, DSNs) */
#define RP__CFG_RESTART 8u  /* a reload (SIGHUP) does not apply it: needs a restart */

struct rp__config_row {
    rp_config_key_id id;
    const char *key;            /* dotted */
    rp_config_type type;
    const char *def;            /* the default as an (unquoted) env value */
    size_t offset;              /* of the field in rp_config */
    int64_t min, max;           /* INT: the accepted range */
    const char *const *choices; /* ENUM: NULL-terminated; value = index */
    rp__config_check_fn check;  /* may be NULL */
    rp__config_leak_fn leak;    /* may be NULL */
    unsigned flags;
};

const rp__config_row *rp__config_row_get(rp_config_key_id id);
void *rp__config_field(rp_config *cfg, const rp__config_row *row);
const void *rp__config_cfield(const rp_config *cfg, const rp__config_row *row);

/* Adds a problem about key id, located at the key's effective origin. */
void rp__cfg_problem(rp_config_problems *p, const rp_config *cfg, rp_config_key_id id,
                     const char *fmt, ...) RP_PRINTF(4, 5);
/* Adds a problem about key id at an explicit origin. */
void rp__cfg_problem_at(rp_config_problems *p, const rp_config *cfg, rp_config_key_id id,
                        rp_config_origin origin, const char *fmt, ...) RP_PRINTF(5, 6);

/* Writes text (len bytes) into buf as a double-quoted, escaped string cut to
 * about 60 characters ("..." marks the cut). Returns buf. */
const char *rp__cfg_quote(const char *text, size_t len, char *buf, size_t cap);
/* The same in single quotes with backslashes as written (for patterns:
 * '(\.dlq' reads as the operator wrote it); control bytes still \xNN. */
const char *rp__cfg_quote_pattern(const char *text, size_t len, char *buf, size_t cap);

/* Optimal-string-alignment edit distance, giving up (returning limit + 1)
 * once it is certain to exceed limit. */
size_t rp__cfg_distance(const char *a, size_t alen, const char *b, size_t blen,
                        size_t limit);

/* Decodes one UTF-8 code point at s[0..len). Returns its length (1..4) and
 * *cp, or 0 when the bytes there are not valid UTF-8 (overlong forms and
 * surrogates are invalid). */
size_t rp__cfg_utf8_next(const unsigned char *s, size_t len, uint32_t *cp);
/* Whether s[0..len) is valid UTF-8. */
bool rp__cfg_utf8_valid(const char *s, size_t len);

/* A growing heap string. */
typedef struct rp__cfg_buf {
    char *s;
    size_t len, cap;
    bool nomem;
} rp__cfg_buf;
void rp__cfg_buf_add(rp__cfg_buf *b, const char *text, size_t len);
void rp__cfg_buf_printf(rp__cfg_buf *b, const char *fmt, ...) RP_PRINTF(2, 3);

/* Validators named by the table (rp_config_check.c). */
rp_status rp__cfg_check_amqp_url(const rp__config_row *row, rp_config *cfg,
                                 rp_config_problems *p);
rp_status rp__cfg_check_http_url(const rp__config_row *row, rp_config *cfg,
                                 rp_config_problems *p);
rp_status rp__cfg_check_amqp_name(const rp__config_row *row, rp_config *cfg,
                                  rp_config_problems *p);
rp_status rp__cfg_check_dsn(const rp__config_row *row, rp_config *cfg,
                            rp_config_problems *p);
rp_status rp__cfg_check_sql_identifier(const rp__config_row *row, rp_config *cfg,
                                       rp_config_problems *p);
rp_status rp__cfg_check_pattern(const rp__config_row *row, rp_config *cfg,
                                rp_config_problems *p);
rp_status rp__cfg_check_owned_pattern(const rp__config_row *row, rp_config *cfg,
                                      rp_config_problems *p);
/* control.reply_queue_pattern: empty is "none" (no code); else compiled, and
 * refused when it matches reaper's own queues (a reply there would feed
 * reaperd its own output). */
rp_status rp__cfg_check_reply_pattern(const rp__config_row *row, rp_config *cfg,
                                      rp_config_problems *p) RP_MUSTCHECK;
rp_status rp__cfg_check_vhosts(const rp__config_row *row, rp_config *cfg,
                               rp_config_problems *p);
rp_status rp__cfg_check_users(const rp__config_row *row, rp_config *cfg,
                              rp_config_problems *p);
rp_status rp__cfg_check_listen(const rp__config_row *row, rp_config *cfg,
                               rp_config_problems *p);
/* The rules between keys. */
rp_status rp__cfg_check_cross(rp_config *cfg, rp_config_problems *p);

/* Secret detectors named by the table. */
const char *rp__cfg_leak_url(const char *value);
const char *rp__cfg_leak_dsn(const char *value);

#endif
