/* libFuzzer: header capture from wire-decoded tables
 * (adapters/rabbitmq/rp_amqp_restore.h). The input is a basic content
 * header's property list as it travels on the wire, decoded by rabbitmq-c
 * (amqp_decode_properties, amqp_decode_table for the headers), then copied
 * as the delivery assembler copies it (rp_amqp_props_copy). Whatever it
 * holds, the capture either refuses it (a key that is not text, nesting
 * past the bound) or writes two JSON texts that parse, hold no NUL escape,
 * and restore to properties with the same flags (the headers aside, which
 * lose the dead-letter headers) and no more headers than were captured. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_wire.h"
#include "rp_amqp_msg.h"
#include "rp_amqp_restore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void rp_check_json(const char *text) {
    if (text == NULL) abort();
    /* jansson refuses a \u0000 escape unless JSON_ALLOW_NUL is given: a
     * text that loads holds none (a plain search would also find the
     * escaped backslash of "\\u0000", a name's own six characters). */
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    if (j == NULL || !json_is_object(j)) abort();
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    amqp_pool_t pool, copy_pool, back_pool;
    init_amqp_pool(&pool, 4096);
    init_amqp_pool(&copy_pool, 4096);
    init_amqp_pool(&back_pool, 4096);
    amqp_basic_properties_t *wire = rp_fuzz_props(&pool, (amqp_bytes_t){size, (void *)data});
    amqp_basic_properties_t p;
    if (wire == NULL || !rp_amqp_props_copy(&copy_pool, wire, &p)) goto out;
    if (p._flags != wire->_flags) abort();
    if ((p._flags & AMQP_BASIC_HEADERS_FLAG) &&
        rp_fuzz_walk_table(&p.headers, 0) < (size_t)p.headers.num_entries)
        abort();
    char *props_json = NULL, *headers_json = NULL;
    rp_status st = rp_amqp_restore_capture(&p, &props_json, &headers_json);
    if (st == RP_OK) {
        rp_check_json(props_json);
        rp_check_json(headers_json);
        amqp_basic_properties_t back;
        char err[200];
        if (rp_amqp_restore_props(&back_pool, props_json, headers_json, &back, err, sizeof err) !=
            RP_OK) {
            /* What was captured must restore. */
            fprintf(stderr, "restore refused %s / %s: %s\n", props_json, headers_json, err);
            abort();
        }
        /* The two low bits are no property (the wire's continuation bit
         * and a reserved one): the library keeps them, the capture not. */
        amqp_flags_t mask = (amqp_flags_t)0xFFFC &
                            ~(amqp_flags_t)(AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_EXPIRATION_FLAG);
        if ((back._flags & mask) != (p._flags & mask)) abort();
        if ((p._flags & AMQP_BASIC_EXPIRATION_FLAG) && !(back._flags & AMQP_BASIC_EXPIRATION_FLAG))
            abort();
        if (back._flags & AMQP_BASIC_HEADERS_FLAG) {
            if (!(p._flags & AMQP_BASIC_HEADERS_FLAG)) abort();
            if (back.headers.num_entries > p.headers.num_entries) abort();
            for (int i = 0; i < back.headers.num_entries; i++)
                if (rp_amqp_restore_is_death_header(back.headers.entries[i].key.bytes,
                                                    back.headers.entries[i].key.len))
                    abort();
        }
    } else if (st != RP_ERR_INVALID && st != RP_ERR_NOMEM) {
        abort();
    }
    free(props_json);
    free(headers_json);
out:
    empty_amqp_pool(&back_pool);
    empty_amqp_pool(&copy_pool);
    empty_amqp_pool(&pool);
    return 0;
}
