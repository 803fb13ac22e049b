/* libFuzzer: a dead letter's AMQP headers as core's header model
 * (adapters/rabbitmq/rp_amqp_table.h), fed from wire bytes through
 * rabbitmq-c's own decoder (amqp_decode_properties, hence amqp_decode_table
 * for the headers), then examined and judged as the tap does
 * (rp_dead_letter_examine, rp_judge_dead_letter).
 *
 * The input: byte 0 flags (bit 0: use the dead-letter pattern), then the
 * basic content header's property list as it travels on the wire (two
 * property-flag bytes, then the flagged fields). A list the library refuses
 * ends the run. Whatever the headers hold, the model never fails but for
 * memory, has one entry per x-death element, and the examination either
 * succeeds with a printable identity or runs out of memory. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_wire.h"
#include "rp_amqp_table.h"
#include "rp_deadletter.h"
#include "rp_judge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pcre2_code *rp_dlq_pattern(void) {
    static pcre2_code *re;
    if (re == NULL) {
        int err;
        PCRE2_SIZE off;
        re = pcre2_compile((PCRE2_SPTR) "(\\.dlq|\\.dead)$", PCRE2_ZERO_TERMINATED, 0, &err, &off,
                           NULL);
        if (re == NULL) abort();
    }
    return re;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rp_fuzz_reader r = {data, size};
    uint8_t flags = rp_fuzz_byte(&r);
    amqp_pool_t pool;
    init_amqp_pool(&pool, 4096);
    amqp_basic_properties_t *p = rp_fuzz_props(&pool, rp_fuzz_rest(&r));
    if (p == NULL) {
        empty_amqp_pool(&pool);
        return 0;
    }
    rp_amqp_dl_model m;
    if (rp_amqp_dl_model_init(&m, p) != RP_OK) {
        rp_amqp_dl_model_cleanup(&m);
        empty_amqp_pool(&pool);
        return 0;
    }
    if (m.headers.n_x_death > 0 && m.headers.x_death != m.entries) abort();
    if ((p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) != 0 && !m.headers.message_id.present) abort();
    bool dead = rp_amqp_dl_model_is_dead_letter(&m);
    if (dead != (m.headers.n_x_death > 0 || m.headers.first_death_queue.present)) abort();

    rp_dead_letter d;
    const pcre2_code *re = (flags & 1) ? rp_dlq_pattern() : NULL;
    static const uint8_t body[] = "body";
    rp_status st = rp_dead_letter_examine(&m.headers, "/", "vibey.x.dlq", re,
                                          (rp_bytes){body, sizeof body - 1}, &d);
    if (st == RP_OK) {
        size_t il = strlen(d.identity);
        for (size_t i = 0; i < il; i++)
            if ((uint8_t)d.identity[i] < 0x20 || d.identity[i] == 0x7f) abort();
        if (d.origin_queue_len == 0 || d.reason_len == 0) abort();
        rp_verdict v;
        if (rp_judge_dead_letter(&d, "/", "vibey.x.dlq", &v) != RP_OK) abort();
        if (v.trusted) abort();
        rp_verdict_cleanup(&v);
    } else if (st != RP_ERR_NOMEM) {
        abort();
    }
    rp_dead_letter_cleanup(&d);
    rp_amqp_dl_model_cleanup(&m);
    empty_amqp_pool(&pool);
    return 0;
}
