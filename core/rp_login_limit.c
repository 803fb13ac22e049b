/* Refused sign-ins per client (rp_login_limit.h). */
#include "rp_login_limit.h"

#include <stdio.h>
#include <string.h>

void rp_login_limit_init(rp_login_limit *l) { memset(l, 0, sizeof *l); }

static bool rp_slot_over(const rp_login_limit_slot *s, int64_t now_ms) {
    return now_ms - s->window_start_ms >= RP_LOGIN_LIMIT_WINDOW_MS;
}

/* The slot of key (cut as it is stored), or NULL. */
static const rp_login_limit_slot *rp_slot_find(const rp_login_limit *l, const char *key) {
    char k[RP_LOGIN_LIMIT_KEY_MAX];
    snprintf(k, sizeof k, "%s", key);
    if (k[0] == '\0') return NULL;
    for (size_t i = 0; i < RP_LOGIN_LIMIT_KEYS; i++)
        if (strcmp(l->slots[i].key, k) == 0) return &l->slots[i];
    return NULL;
}

int64_t rp_login_limit_wait_ms(const rp_login_limit *l, const char *key, int64_t now_ms) {
    const rp_login_limit_slot *s = rp_slot_find(l, key);
    if (s == NULL || rp_slot_over(s, now_ms) || s->failures < RP_LOGIN_LIMIT_FAILURES) return 0;
    int64_t wait = s->window_start_ms + RP_LOGIN_LIMIT_WINDOW_MS - now_ms;
    return wait > 0 ? wait : 1;
}

void rp_login_limit_refused(rp_login_limit *l, const char *key, int64_t now_ms) {
    if (key == NULL || key[0] == '\0') return;
    rp_login_limit_slot *s = (rp_login_limit_slot *)rp_slot_find(l, key);
    if (s == NULL) {
        /* A free slot, else the oldest window (one that is over, if any:
         * a live window is always newer). */
        rp_login_limit_slot *oldest = NULL;
        for (size_t i = 0; i < RP_LOGIN_LIMIT_KEYS && s == NULL; i++) {
            rp_login_limit_slot *c = &l->slots[i];
            if (c->key[0] == '\0') s = c;
            else if (oldest == NULL || c->window_start_ms < oldest->window_start_ms) oldest = c;
        }
        if (s == NULL) s = oldest;
        snprintf(s->key, sizeof s->key, "%s", key);
        s->window_start_ms = now_ms;
        s->failures = 0;
    } else if (rp_slot_over(s, now_ms)) {
        s->window_start_ms = now_ms;
        s->failures = 0;
    }
    if (s->failures < RP_LOGIN_LIMIT_FAILURES) s->failures++;
}
