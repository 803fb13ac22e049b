#include "rp_clock.h"

#include <time.h>

static int64_t rp_clock_ms(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rp_clock_mono_ms(void) {
    return rp_clock_ms(CLOCK_MONOTONIC);
}

int64_t rp_clock_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

rp_time_ms rp_clock_wall_ms(void) {
    return (rp_time_ms)rp_clock_ms(CLOCK_REALTIME);
}

rp_time_ms rp_clock_wall_self(void *self) {
    (void)self;
    return rp_clock_wall_ms();
}

int64_t rp_clock_mono_self(void *self) {
    (void)self;
    return rp_clock_mono_ms();
}

void rp_clock_port_system(rp_clock_port *out) {
    out->self = NULL;
    out->now_ms = rp_clock_wall_self;
}
