/* libFuzzer: the replay destination (core/rp_replay.h). Any stored text is
 * parsed without crashing into either a refusal or a name of 1..255 bytes
 * without NUL; and any value up to the rendering's bound, rendered by
 * rp_untrusted_render, parses back to exactly its bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rp_replay.h"
#include "rp_untrusted.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (text == NULL) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *name = NULL;
    const char *why = NULL;
    rp_status st = rp_replay_origin_parse(text, &name, &why);
    if (st == RP_OK) {
        size_t n = strlen(name);
        if (n == 0 || n > 255) abort();
    } else if (st != RP_ERR_NOMEM && (why == NULL || name != NULL)) {
        abort();
    }
    free(name);
    /* The round trip, for values the rendering keeps whole. */
    char *shown = NULL;
    if (memchr(data, 0, size) == NULL && size <= 200 &&
        rp_untrusted_render((rp_bytes){data, size}, &shown) == RP_OK) {
        if (size > 0 && rp_replay_origin_parse(shown, &name, &why) == RP_OK) {
            if (strlen(name) != size || memcmp(name, data, size) != 0) abort();
            free(name);
        }
        free(shown);
    }
    free(text);
    return 0;
}
