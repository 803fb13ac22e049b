/*
 * rp_json_out.h - a streaming JSON writer for the per-dead-letter texts
 * (the ledger payload, the job payload, the stored properties and headers).
 *
 * Why not jansson here: jansson builds a tree (a malloc per value, a hash
 * table per object) and its json_dumps keeps a table of the objects it is
 * inside, keyed by their address printed with snprintf, to refuse loops.
 * For the tap's four small texts per dead letter that was a quarter of
 * reaperd's CPU in a storm (perf, bench/REPORT.md). This writer appends to
 * one growing buffer and writes the bytes json_dumps(JSON_COMPACT) writes
 * for the same values in the same order: tests/unit/test_json_out.c
 * compares the two on generated values. Reading JSON stays jansson's job.
 *
 * Use: rp_jout w; rp_jout_init(&w); rp_jout_obj_open(&w); rp_jout_key(&w,
 * "a", 1); rp_jout_int(&w, 1); rp_jout_obj_close(&w); char *s =
 * rp_jout_take(&w); ... free(s). Commas are the writer's: a value after a
 * value in an array, a key after a value in an object. A failure (no
 * memory, a string that is not strict UTF-8, a real that is not finite,
 * nesting past RP_JOUT_MAX_DEPTH) sticks: later calls do nothing and
 * rp_jout_take returns NULL (and frees the buffer).
 *
 * Ownership: the writer owns its buffer until rp_jout_take hands it over
 * (free() it) or rp_jout_free drops it. Threads: one writer per thread.
 */
#ifndef RP_JSON_OUT_H
#define RP_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RP_JOUT_MAX_DEPTH 512

typedef struct rp_jout {
    char *buf;
    size_t len, cap;
    bool failed;
    int depth;
    /* per open container: whether something was written in it yet */
    bool filled[RP_JOUT_MAX_DEPTH];
} rp_jout;

void rp_jout_init(rp_jout *w);
void rp_jout_free(rp_jout *w);
/* The text (NUL-terminated, the caller frees it), or NULL after a failure
 * or with a container still open. The writer is empty afterwards. */
char *rp_jout_take(rp_jout *w);

void rp_jout_obj_open(rp_jout *w);
void rp_jout_obj_close(rp_jout *w);
void rp_jout_arr_open(rp_jout *w);
void rp_jout_arr_close(rp_jout *w);

/* A key of the open object: n bytes of strict UTF-8 (no NUL). */
void rp_jout_key(rp_jout *w, const char *k, size_t n);
/* rp_jout_key with a C string. */
void rp_jout_keyz(rp_jout *w, const char *k);
/* A key the program spells (a string literal of plain ASCII letters, digits,
 * '_', '-', '$', '.': nothing to escape or check). */
#define rp_jout_lit(w, k) rp_jout_key_plain((w), "\"" k "\":", sizeof k + 2)
void rp_jout_key_plain(rp_jout *w, const char *quoted, size_t n);

/* A string: n bytes of strict UTF-8 (as json_stringn takes them; a NUL
 * is written \u0000), else the writer fails. */
void rp_jout_str(rp_jout *w, const char *s, size_t n);
/* A C string, or null for NULL. */
void rp_jout_strz(rp_jout *w, const char *s);
/* rp_jout_str and rp_jout_key for text the caller has already checked
 * (rp_utf8_valid; for a key, no NUL either): the same bytes, without
 * reading the text a second time (issue 21: the stored headers' keys and
 * values and the verdict's texts were each checked twice per dead letter).
 * Text that is not strict UTF-8 is the caller's bug here, not refused. */
void rp_jout_str_checked(rp_jout *w, const char *s, size_t n);
void rp_jout_key_checked(rp_jout *w, const char *k, size_t n);
void rp_jout_int(rp_jout *w, int64_t v);
/* A finite real, written as jansson writes one ("%.17g", ".0" added when
 * it has neither a point nor an exponent, the exponent's '+' and leading
 * zeros dropped); NaN or an infinity fails the writer. */
void rp_jout_real(rp_jout *w, double v);
void rp_jout_bool(rp_jout *w, bool v);
void rp_jout_null(rp_jout *w);

#endif
