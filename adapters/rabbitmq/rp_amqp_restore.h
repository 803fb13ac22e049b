/*
 * rp_amqp_restore.h - a message's AMQP basic properties and headers as JSON
 * (the dead_letter row's `properties` and `headers` jsonb columns) and back,
 * losslessly, so that a replay puts the original properties back on the
 * wire (CONTRACT section 5: "byte for byte with its original properties
 * less the dead-letter headers").
 *
 * THE JSON FORM.
 *   properties: one object with the AMQP names of the flagged properties
 *     (content_type, content_encoding, delivery_mode, priority,
 *     correlation_id, reply_to, expiration, message_id, timestamp, type,
 *     user_id, app_id, cluster_id); absent properties are absent keys. The
 *     headers table is NOT in it (it is the headers column).
 *   headers: one object, the headers table. A field value is written as
 *     plain JSON when plain JSON gives its AMQP type back:
 *       't' bool -> true/false       'S' UTF-8 text without NUL -> string
 *       'l' int64 -> integer         'd' double -> real
 *       'V' void -> null             'A' array -> array
 *       'F' table -> object (unless a key is "$amqp")
 *     and otherwise as a tagged object {"$amqp": KIND, "value": V}, KIND
 *     the rabbitmq-c field kind letter: "b" "B" "s" "u" "I" "i" (integers),
 *     "L" (uint64; an integer, or a decimal string above INT64_MAX), "f"
 *     (float: a real, or its text as for "d"), "d" (a double that is not
 *     finite, is -0.0 or of magnitude 1e15 or more: its "%.17g" text, or
 *     "nan", "inf", "-inf"), "T" (timestamp, an integer), "D" (decimal, value
 *     {"decimals": n, "value": v}), "x" (bytes, base64), "S" (text that is
 *     not UTF-8 or holds NUL, base64), "F" (a table with a "$amqp" key).
 *   A short-string property that is not UTF-8 or holds NUL is written
 *   {"$amqp": "S", "value": base64} too.
 * jsonb keeps every integer and string exactly; a plain real goes through
 * PostgreSQL's numeric text and back, which keeps its value (numeric
 * prints no exponent: hence the tagged "d" for large magnitudes, which
 * would otherwise come back as integers).
 *
 * NESTING. A header value may hold arrays and tables RP_AMQP_RESTORE_MAX_DEPTH
 * deep at most. A deeper one (hostile: a frame of 128 KiB can nest some
 * 26,000 levels) is not stored in this form, so that no recursion here, in
 * jansson or in PostgreSQL's jsonb input grows with what a sender chose: the
 * dead letter is parked without its JSON and never replayed (see the
 * callers), and a stored text deeper than that is refused by restore.
 *
 * Ownership: rp_amqp_restore_capture returns two heap strings (free()).
 * rp_amqp_restore_props allocates every pointer of *out from the caller's
 * pool (empty_amqp_pool frees them). Inputs are borrowed. Any thread.
 */
#ifndef RP_AMQP_RESTORE_H
#define RP_AMQP_RESTORE_H

#include <amqp.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_common.h"
#include "rp_status.h"

#define RP_AMQP_RESTORE_MAX_DEPTH 100

/* Writes the properties and the headers of p as the two JSON texts above
 * (compact, valid UTF-8, no \u0000). RP_ERR_INVALID when a header key is not
 * UTF-8 text without NUL, or values nest deeper than
 * RP_AMQP_RESTORE_MAX_DEPTH (such a message cannot be stored losslessly);
 * RP_ERR_NOMEM. */
rp_status rp_amqp_restore_capture(const amqp_basic_properties_t *p, char **props_json,
                                  char **headers_json) RP_MUSTCHECK;

/* Whether a header name is one the broker writes when it dead-letters a
 * message (x-death, x-first-death-*, x-last-death-*): left out of a replay. */
bool rp_amqp_restore_is_death_header(const char *name, size_t len);

/* Builds the properties of a replay from the two JSON texts (either may be
 * NULL or "{}"), leaving out the dead-letter headers (an empty headers
 * table is then left out as well). The expiration the broker moved into
 * x-death's original-expiration when it dead-lettered the message is put
 * back (from the oldest x-death entry carrying one) when the properties
 * have none. RP_ERR_INVALID, with the reason in err,
 * when a text does not parse or a value does not fit its property or kind;
 * RP_ERR_NOMEM. */
rp_status rp_amqp_restore_props(amqp_pool_t *pool, const char *props_json,
                                const char *headers_json, amqp_basic_properties_t *out,
                                char *err, size_t errlen) RP_MUSTCHECK;

/* reaper's own note in the properties JSON: a key no AMQP property has.
 * {"not_replayable": REASON, "headers_bytes": N} when the dead letter was
 * kept without its headers (the tap's broker.tap_header_cap_bytes), and
 * "x_death_entries": N when x-death had more entries than the header model
 * parses (RP_AMQP_XDEATH_MAX). rp_amqp_restore_props refuses a text with
 * not_replayable (the reason in err) and ignores the rest of the note. */
#define RP_AMQP_RESTORE_NOTE "$reaper"

/* Adds the note to *props_json (a text of rp_amqp_restore_capture, which it
 * replaces). not_replayable may be NULL; x_death_entries 0 leaves it out.
 * RP_ERR_NOMEM (the text is then unchanged). */
rp_status rp_amqp_restore_note(char **props_json, const char *not_replayable,
                               size_t headers_bytes, size_t x_death_entries) RP_MUSTCHECK;

/* Whether a stored properties text carries a not_replayable note; its
 * reason into why. */
bool rp_amqp_restore_refusal(const char *props_json, char *why, size_t n);

#endif
