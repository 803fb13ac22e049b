/*
 * duration.h - reaperctl's durations on the command line (`--older-than`):
 * a whole number followed by s, m, h or d (seconds when no unit), e.g. 90,
 * 90s, 15m, 2h, 7d. Pure; the string is borrowed.
 */
#ifndef RP_CTL_DURATION_H
#define RP_CTL_DURATION_H

#include <stdbool.h>
#include <stdint.h>

/* The largest duration taken: ten years (the protocol's bound). */
#define RP_CTL_DURATION_MAX_S 315360000

/* *seconds on success; false for anything else (empty, a sign, a space, an
 * unknown unit, zero, or more than RP_CTL_DURATION_MAX_S). */
bool rp_ctl_duration_parse(const char *s, int64_t *seconds);

#endif
