/* reaperd's answers to its broker session's ups and downs (rp_broker_state.h). */
#include "rp_broker_state.h"

#include "rp_common.h"

bool rp_broker_state_accepting(void *state) {
    return !__atomic_load_n(((rp_broker_state *)state)->stopping, __ATOMIC_ACQUIRE);
}

void rp_broker_state_on_up(void *state, unsigned generation) {
    rp_broker_state *b = state;
    *b->up = true;
    *b->generation = generation;
    rp_metrics_connected(b->metrics, RP_METRICS_BROKER);
}

void rp_broker_state_on_ready(void *state) {
    rp_broker_state *b = state;
    if (*b->events) rp_events_on_up(*b->events); /* events are not replayed: list again */
    if (b->ready) b->ready(b->ready_arg);
}

void rp_broker_state_on_down(void *state, bool was_up, const char *why) {
    rp_broker_state *b = state;
    RP_UNUSED(why);
    if (was_up && *b->events) rp_events_on_down(*b->events);
    *b->up = false;
}
