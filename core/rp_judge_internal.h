/*
 * rp_judge_internal.h - helpers shared by the files of the judge
 * (rp_judge.c, rp_judge_broker.c). Not for use outside them.
 *
 * Ownership: rp__judge_fill() takes ownership of object and detail (heap
 * strings, freed by it on failure) and copies queue, project and unit.
 */
#ifndef RP_JUDGE_INTERNAL_H
#define RP_JUDGE_INTERNAL_H

#include "rp_judge.h"

typedef struct rp__judged {
    rp_condition condition;
    rp_action action;
    rp_source source;
    double measured;
    int64_t threshold;
    const char *unit;
    bool trusted;
} rp__judged;

/* Sets every field of *v (initialised first). */
rp_status rp__judge_fill(rp_verdict *v, const rp__judged *j, char *object, const char *queue,
                         const char *project, char *detail) RP_MUSTCHECK;

/* Milliseconds as seconds, for measured and detail sentences. */
double rp__judge_seconds(int64_t ms);

#endif
