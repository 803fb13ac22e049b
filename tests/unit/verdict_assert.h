/*
 * verdict_assert.h - the fields of a judged verdict, as the judge tests
 * (test_judge_divergent, test_judge_runbook) check them: what it says
 * (condition, action, source, object, queue, project, unit, threshold,
 * measured), and the CLEARED verdict its sighting row gives back. Include
 * after cmocka.h. Static functions; nothing is kept.
 */
#ifndef RP_VERDICT_ASSERT_H
#define RP_VERDICT_ASSERT_H

#include <stdint.h>
#include <stdlib.h>

#include "rp_judge.h"
#include "rp_sighting.h"
#include "rp_verdict.h"

typedef struct verdict_want {
    rp_condition condition;
    rp_action action;
    rp_source source;
    const char *object, *queue;
    const char *project; /* NULL: the verdict has none */
    const char *unit;
    int64_t threshold;
    double measured;
    double measured_within; /* 0: exactly measured; else +- this much */
} verdict_want;

/* v says what w says. */
static inline void assert_verdict(const rp_verdict *v, const verdict_want *w) {
    assert_int_equal(v->condition, w->condition);
    assert_int_equal(v->action, w->action);
    assert_int_equal(v->source, w->source);
    assert_string_equal(v->object, w->object);
    assert_string_equal(v->queue, w->queue);
    if (w->project) assert_string_equal(v->project, w->project);
    else assert_null(v->project);
    assert_string_equal(v->unit, w->unit);
    assert_int_equal(v->threshold, w->threshold);
    if (w->measured_within == 0) assert_true(v->measured == w->measured);
    else assert_true(v->measured > w->measured - w->measured_within &&
                     v->measured < w->measured + w->measured_within);
}

/* The sighting key of v is key (NULL: not compared), and the CLEARED
 * verdict its row (opened at event 7, at now) gives back keeps v's
 * condition, queue, project and unit, with threshold cleared_threshold
 * (< 0: not compared). */
static inline void assert_cleared_back(const rp_verdict *v, const rp_thresholds *t,
                                       rp_time_ms now, const char *key,
                                       int64_t cleared_threshold) {
    char *k = NULL;
    assert_int_equal(rp_sighting_key_for(v, &k), RP_OK);
    if (key) assert_string_equal(k, key);
    rp_sighting_row row = {k, v->condition, 7, now};
    rp_verdict c;
    assert_int_equal(rp_judge_cleared(&row, t, &c), RP_OK);
    assert_int_equal(c.condition, v->condition);
    assert_int_equal(c.action, RP_ACTION_CLEARED);
    assert_string_equal(c.queue, v->queue);
    if (v->project) assert_string_equal(c.project, v->project);
    else assert_null(c.project);
    assert_string_equal(c.unit, v->unit);
    if (cleared_threshold >= 0) assert_int_equal(c.threshold, cleared_threshold);
    rp_verdict_cleanup(&c);
    free(k);
}

#endif
