/*
 * rp_login_limit.h - how many refused sign-ins the browser console takes
 * from one client before it stops asking the broker (a password guesser
 * gets RP_LOGIN_LIMIT_FAILURES tries a window, not as many as it can send).
 *
 * A client is a key the caller chooses (the console: the peer's address as
 * text). Each key has a fixed window of RP_LOGIN_LIMIT_WINDOW_MS from its
 * first refused sign-in; after RP_LOGIN_LIMIT_FAILURES refusals in it,
 * every signed-in request from that key is refused, right or wrong
 * password, until the window ends (the broker would otherwise tell the
 * guesser which one was right). A sign-in that succeeds does not reset the
 * count. The table holds RP_LOGIN_LIMIT_KEYS keys; when it is full the key
 * with the oldest window is reused (one that is over, if any; a
 * client with many addresses can make the table forget one: the limit is
 * per address, a brake, not an account lock-out).
 *
 * Pure: no I/O, no logging, the time passed in (milliseconds, any origin
 * that does not go back). Ownership: the caller's struct; keys are copied
 * (cut to RP_LOGIN_LIMIT_KEY_MAX - 1 bytes). Threads: the caller's.
 */
#ifndef RP_LOGIN_LIMIT_H
#define RP_LOGIN_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define RP_LOGIN_LIMIT_FAILURES 5
#define RP_LOGIN_LIMIT_WINDOW_MS 60000
#define RP_LOGIN_LIMIT_KEYS 256
#define RP_LOGIN_LIMIT_KEY_MAX 64

typedef struct rp_login_limit_slot {
    char key[RP_LOGIN_LIMIT_KEY_MAX]; /* "" when free */
    int64_t window_start_ms;
    unsigned failures;
} rp_login_limit_slot;

typedef struct rp_login_limit {
    rp_login_limit_slot slots[RP_LOGIN_LIMIT_KEYS];
} rp_login_limit;

void rp_login_limit_init(rp_login_limit *l);

/* 0 when key may try to sign in now; else how many milliseconds until it
 * may (>= 1). */
int64_t rp_login_limit_wait_ms(const rp_login_limit *l, const char *key, int64_t now_ms);

/* Counts one refused sign-in of key at now_ms. */
void rp_login_limit_refused(rp_login_limit *l, const char *key, int64_t now_ms);

#endif
