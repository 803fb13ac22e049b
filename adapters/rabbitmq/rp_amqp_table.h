/*
 * rp_amqp_table.h - a dead letter's AMQP properties and headers table as
 * what the store keeps (JSON text for the jsonb columns of dead_letter) and
 * as core's header model (rp_dl_headers, core/rp_deadletter.h).
 *
 * Every value comes from a publisher and is untrusted: any type may stand
 * where another belongs, strings may hold NUL bytes or invalid UTF-8,
 * tables may nest deeply, arrays may be long. Nothing here fails on such a
 * value; it is stored in a form jsonb accepts (valid UTF-8, no \u0000).
 *
 * THE JSON FORM (one JSON object; the same rules for properties, headers
 * and every nested table):
 *   - a long string (S) or short string that is valid UTF-8 without NUL:
 *     a JSON string; any other string, and every byte array (x):
 *     {"$bytes": "<base64>"};
 *   - booleans, void: true/false, null;
 *   - integers of every width: a JSON integer, except a uint64 above
 *     INT64_MAX: {"$u64": "<decimal>"};
 *   - float and double: a JSON number; NaN and infinities {"$float": "nan"
 *     | "inf" | "-inf"};
 *   - decimal: {"$decimal": {"decimals": d, "value": v}};
 *   - timestamp: {"$timestamp": <Unix seconds>} (a value above INT64_MAX as
 *     {"$timestamp": "<decimal>"});
 *   - table: an object; array: an array;
 *   - a table or array nested deeper than RP_AMQP_JSON_MAX_DEPTH:
 *     {"$cut": "nested too deep"}; a field kind the library does not know:
 *     {"$kind": <the kind byte>};
 *   - a table key that is not valid UTF-8 without NUL is replaced by its
 *     rp_untrusted_render() form (quoted, escaped, cut at 200 characters);
 *     when two keys collide the first one is kept.
 * Properties: {"content_type", "content_encoding", "delivery_mode",
 * "priority", "correlation_id", "reply_to", "expiration", "message_id",
 * "timestamp" (plain Unix seconds), "type", "user_id", "app_id",
 * "cluster_id"}, only those flagged present; the headers are not part of
 * it (they have their own column).
 *
 * THE HEADER MODEL (rp_dl_headers): message_id from the property;
 * x-first-death-queue and x-first-death-reason when they are strings (S or
 * x); x-death when it is an array: one rp_xdeath per element (an element
 * that is not a table is an entry with every field absent), each with
 * queue and reason when strings, time when a timestamp (at most
 * INT64_MAX), count when an integer that fits int64. The first of
 * duplicate keys wins. Anything else: absent.
 *
 * Ownership: the JSON functions return a heap string the caller frees with
 * free(). rp_amqp_dl_model borrows the properties' memory (its strings point
 * into it): keep the properties alive while the model is used, then
 * rp_amqp_dl_model_cleanup(). Any thread (pure functions).
 */
#ifndef RP_AMQP_TABLE_H
#define RP_AMQP_TABLE_H

#include <amqp.h>

#include "rp_common.h"
#include "rp_deadletter.h"
#include "rp_status.h"

#define RP_AMQP_JSON_MAX_DEPTH 32

/* The headers table as JSON text ("{}" for an empty or absent table).
 * RP_ERR_NOMEM, RP_ERR_INVALID for a NULL argument. */
rp_status rp_amqp_table_json(const amqp_table_t *t, char **out) RP_MUSTCHECK;

/* The flagged properties but the headers, as JSON text. */
rp_status rp_amqp_props_json(const amqp_basic_properties_t *p, char **out) RP_MUSTCHECK;

typedef struct rp_amqp_dl_model {
    rp_dl_headers headers; /* what core reads; x_death points to entries */
    rp_xdeath *entries;    /* heap; NULL when there is none */
} rp_amqp_dl_model;

/* Fills *m from p (zeroed first). RP_ERR_NOMEM only. */
rp_status rp_amqp_dl_model_init(rp_amqp_dl_model *m, const amqp_basic_properties_t *p)
    RP_MUSTCHECK;
void rp_amqp_dl_model_cleanup(rp_amqp_dl_model *m);

/* Whether the headers carry any x-death or x-first-death-queue entry at
 * all: a message without either was not dead-lettered by a broker (it was
 * published to the dead-letter exchange directly). */
bool rp_amqp_dl_model_is_dead_letter(const rp_amqp_dl_model *m);

#endif
