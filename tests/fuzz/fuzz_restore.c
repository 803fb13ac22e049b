/* libFuzzer: restoring a replay's properties from the stored JSON
 * (adapters/rabbitmq/rp_amqp_restore.h). The input is split at the first
 * NUL into the properties text and the headers text; whatever they hold,
 * the restore refuses or gives properties whose headers hold no dead-letter
 * header, and what it gives captures and restores to the same flags. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_restore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 2);
    if (text == NULL) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    text[size + 1] = '\0';
    const char *props = text;
    const char *headers = text + strlen(text) + 1; /* "" when no NUL */
    amqp_pool_t pool;
    init_amqp_pool(&pool, 4096);
    amqp_basic_properties_t p;
    char err[200];
    if (rp_amqp_restore_props(&pool, props, *headers ? headers : NULL, &p, err, sizeof err) ==
        RP_OK) {
        for (int i = 0; (p._flags & AMQP_BASIC_HEADERS_FLAG) && i < p.headers.num_entries; i++)
            if (rp_amqp_restore_is_death_header(p.headers.entries[i].key.bytes,
                                                p.headers.entries[i].key.len))
                abort();
        char *pj = NULL, *hj = NULL;
        rp_status st = rp_amqp_restore_capture(&p, &pj, &hj);
        if (st == RP_OK) {
            amqp_pool_t pool2;
            init_amqp_pool(&pool2, 4096);
            amqp_basic_properties_t q;
            if (rp_amqp_restore_props(&pool2, pj, hj, &q, err, sizeof err) != RP_OK) abort();
            if (q._flags != p._flags) abort();
            if ((q._flags & AMQP_BASIC_HEADERS_FLAG) &&
                q.headers.num_entries != p.headers.num_entries)
                abort();
            empty_amqp_pool(&pool2);
        } else if (st != RP_ERR_INVALID && st != RP_ERR_NOMEM) {
            abort();
        }
        free(pj);
        free(hj);
    }
    empty_amqp_pool(&pool);
    free(text);
    return 0;
}
