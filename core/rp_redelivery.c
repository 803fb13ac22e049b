#include "rp_redelivery.h"

#include <string.h>

void rp_redelivery_init(rp_redelivery *t) { memset(t, 0, sizeof *t); }

static uint64_t rp_fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

uint64_t rp_redelivery_key(const rp_bytes *parts, size_t n) {
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++) {
        /* Absent and empty differ: absent is written as length ~0. */
        uint64_t len = parts[i].ptr ? (uint64_t)parts[i].len : ~UINT64_C(0);
        h = rp_fnv(h, &len, sizeof len);
        if (parts[i].ptr) h = rp_fnv(h, parts[i].ptr, parts[i].len);
    }
    return h;
}

unsigned rp_redelivery_note(rp_redelivery *t, uint64_t key) {
    t->tick++;
    size_t victim = 0;
    for (size_t i = 0; i < RP_REDELIVERY_SLOTS; i++) {
        if (t->slot[i].seen != 0 && t->slot[i].key == key) {
            t->slot[i].seen = t->tick;
            return ++t->slot[i].count;
        }
        /* A free slot (seen 0) is the oldest of all. */
        if (t->slot[i].seen < t->slot[victim].seen) victim = i;
    }
    t->slot[victim].key = key;
    t->slot[victim].seen = t->tick;
    t->slot[victim].count = 1;
    return 1;
}

void rp_redelivery_forget(rp_redelivery *t, uint64_t key) {
    for (size_t i = 0; i < RP_REDELIVERY_SLOTS; i++)
        if (t->slot[i].seen != 0 && t->slot[i].key == key) {
            t->slot[i].seen = 0;
            t->slot[i].count = 0;
            return;
        }
}
