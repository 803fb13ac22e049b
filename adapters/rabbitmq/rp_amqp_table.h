/*
 * rp_amqp_table.h - a dead letter's AMQP headers as core's header model
 * (rp_dl_headers, core/rp_deadletter.h), used by the tap and the backfill
 * peek alike so that both see one message the same way (one identity,
 * CONTRACT section 6). What the store keeps of the properties and headers is
 * rp_amqp_restore.h's JSON form (the one replay reads back).
 *
 * Every value comes from a publisher and is untrusted: any type may stand
 * where another belongs; nothing here fails on such a value.
 *
 * THE HEADER MODEL (rp_dl_headers): message_id from the property;
 * x-first-death-queue and x-first-death-reason when they are strings (S or
 * x); x-death when it is an array: one rp_xdeath per element (an element
 * that is not a table is an entry with every field absent), each with
 * queue and reason when strings, time when a timestamp (at most
 * INT64_MAX), count when an integer that fits int64. The first of
 * duplicate keys wins. Anything else: absent.
 *
 * Ownership: rp_amqp_dl_model borrows the properties' memory (its strings point
 * into it): keep the properties alive while the model is used, then
 * rp_amqp_dl_model_cleanup(). Any thread (pure functions).
 */
#ifndef RP_AMQP_TABLE_H
#define RP_AMQP_TABLE_H

#include <amqp.h>

#include "rp_common.h"
#include "rp_deadletter.h"
#include "rp_status.h"

/* The most x-death entries parsed (issue 14 item 6): the first
 * RP_AMQP_XDEATH_MAX - 1 (the newest) and the last one (the oldest, the
 * first death); the ones between are only counted (x_death_unparsed). */
#define RP_AMQP_XDEATH_MAX 32

typedef struct rp_amqp_dl_model {
    rp_dl_headers headers; /* what core reads; x_death points to entries */
    rp_xdeath *entries;    /* heap; NULL when there is none */
    size_t x_death_unparsed; /* x-death entries beyond RP_AMQP_XDEATH_MAX */
} rp_amqp_dl_model;

/* Fills *m from p (zeroed first). RP_ERR_NOMEM only. */
rp_status rp_amqp_dl_model_init(rp_amqp_dl_model *m, const amqp_basic_properties_t *p)
    RP_MUSTCHECK;
void rp_amqp_dl_model_cleanup(rp_amqp_dl_model *m);

/* Whether the headers carry any x-death or x-first-death-queue entry at
 * all: a message without either was not dead-lettered by a broker (it was
 * published to the dead-letter exchange directly). */
bool rp_amqp_dl_model_is_dead_letter(const rp_amqp_dl_model *m);

/* What a decoded table holds in memory, in bytes: every key and string,
 * every nested table and array, and per entry its struct and
 * RP_AMQP_ENTRY_OVERHEAD (pool alignment and bookkeeping). Past
 * RP_AMQP_FOOTPRINT_DEPTH levels of nesting: SIZE_MAX (such a table is not
 * kept anyway: rp_amqp_restore.h). Saturates at SIZE_MAX. */
#define RP_AMQP_ENTRY_OVERHEAD 16u
#define RP_AMQP_FOOTPRINT_DEPTH 200
size_t rp_amqp_table_footprint(const amqp_table_t *t);
/* The same for a message's properties: its short strings, each with
 * RP_AMQP_ENTRY_OVERHEAD, and its headers table. */
size_t rp_amqp_props_footprint(const amqp_basic_properties_t *p);

/* The longest string kept of a death header by rp_amqp_death_headers
 * (queue names are at most 255 bytes; longer is forged). */
#define RP_AMQP_DEATH_STRING_MAX 1024
/* A table of only what the identity rule (core/rp_deadletter.h) reads,
 * allocated from pool: x-first-death-queue, -reason and -exchange, and
 * x-death with the entries the header model parses (at most
 * RP_AMQP_XDEATH_MAX, each with its queue, reason, exchange, time and
 * count). A string longer than RP_AMQP_DEATH_STRING_MAX is left out. For a
 * header table too large to keep (the tap's tap.header_cap_bytes): the
 * model of the result equals the model of src but for such strings.
 * RP_ERR_NOMEM. */
rp_status rp_amqp_death_headers(amqp_pool_t *pool, const amqp_table_t *src, amqp_table_t *out)
    RP_MUSTCHECK;

#endif
