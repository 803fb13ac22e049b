/*
 * rp_proto_internal.h - helpers shared by the files of proto/ (rp__ names).
 * Not for use outside proto/ and its tests.
 *
 * Ownership follows rp_proto.h: a json_t returned is a new reference.
 */
#ifndef RP_PROTO_INTERNAL_H
#define RP_PROTO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rp_proto.h"

/* Sets err (when not NULL) to code and the formatted message, cut on a
 * UTF-8 boundary. Returns code. */
rp_status rp__err_set(rp_proto_error *err, rp_status code, const char *fmt, ...) RP_PRINTF(3, 4);

/* Writes s[0..len) into dst as a double-quoted, escaped string: printable
 * ASCII and valid UTF-8 sequences are kept, '"' and '\\' are escaped, any
 * other byte is written as \xNN. At most RP_PROTO_QUOTE_MAX input bytes are
 * shown, then "..." follows the closing quote. dst is always NUL-terminated
 * (size must be >= 8). */
void rp__quote(char *dst, size_t size, const char *s, size_t len);

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when p[0..n) does not
 * start with one (overlongs, surrogates, above U+10FFFF and truncated
 * sequences are invalid). */
size_t rp__utf8_seq(const uint8_t *p, size_t n);

/* Whether p[0..n) is valid UTF-8. When not, *bad (if not NULL) is the offset
 * of the first bad byte. */
bool rp__utf8_valid(const uint8_t *p, size_t n, size_t *bad);

/* Largest length <= max at which s[0..len) can be cut without splitting a
 * UTF-8 sequence. */
size_t rp__utf8_cut(const char *s, size_t len, size_t max);

/* A json string of s, with invalid UTF-8 bytes replaced by U+FFFD; NULL s
 * gives json null. NULL only on allocation failure. */
json_t *rp__json_string(const char *s);

/* s (n bytes) with each byte that does not start strict UTF-8 replaced by
 * U+FFFD, as rp__json_string writes it: *out is s itself when it is valid
 * (*owned NULL), else a heap copy (*owned: free it). false: no memory. */
bool rp__utf8_fixed(const char *s, size_t n, const char **out, size_t *out_n, char **owned);

/* "a map", "an array", "a string", "an integer", "a float", "a bool",
 * "null". Static. */
const char *rp__type_name(const json_t *v);

/* Parses body (already known to be at most limits->max_body and not empty)
 * of encoding enc into a tree, enforcing limits. NULL with err filled on
 * failure. */
json_t *rp__msgpack_parse(const uint8_t *p, size_t n, const rp_proto_limits *limits,
                          rp_proto_error *err);
json_t *rp__json_parse(const uint8_t *p, size_t n, const rp_proto_limits *limits,
                       rp_proto_error *err);

/* The encoding of content type ct, or RP_ERR_BAD_REQUEST with err saying
 * which type was refused. */
rp_status rp__encoding_for(rp_bytes ct, rp_encoding *enc, rp_proto_error *err) RP_MUSTCHECK;

/* The whole decode front: body size, empty body, then the parser of enc. */
json_t *rp__parse(rp_bytes body, rp_encoding enc, const rp_proto_limits *limits,
                  rp_proto_error *err);

/* Checks an existing tree against limits (depth, entries, nodes, string
 * length, valid UTF-8 without NUL, finite reals). */
rp_status rp__tree_check(const json_t *tree, const rp_proto_limits *limits,
                         rp_proto_error *err) RP_MUSTCHECK;

/* Writers into an empty buffer. */
rp_status rp__msgpack_write(const json_t *tree, rp_proto_buf *out) RP_MUSTCHECK;
rp_status rp__json_write(const json_t *tree, size_t flags, rp_proto_buf *out) RP_MUSTCHECK;

/* Steals tree (decrefs it in every case): checks it against the reply
 * limits and writes it in enc into out. */
rp_status rp__finish(json_t *tree, rp_encoding enc, rp_proto_buf *out) RP_MUSTCHECK;

/* Sets key on obj to value, stealing value; false when value is NULL or the
 * set failed. */
bool rp__set(json_t *obj, const char *key, json_t *value) RP_MUSTCHECK;

/* A time as a wire string (SCHEMA.md section 5), null for 0 or a time
 * that cannot be written. New reference; NULL only on allocation failure. */
json_t *rp__time_json(rp_time_ms t);

/* Steals result (NULL fails): writes {"v":1,"op":op,"ok":true,"result":...}
 * in enc into out, as rp__finish. */
rp_status rp__reply(rp_op op, json_t *result, rp_encoding enc, rp_proto_buf *out) RP_MUSTCHECK;

#endif
