/*
 * answer_set_view.h - reaperctl's output for answer sets (`answer --all`,
 * `answer ID ID ...`, `answer --status JOB`, `answer --cancel JOB`): short
 * lines from a reply's result (a jansson tree, borrowed). Every value that
 * came from a dead letter (a queue name) is escaped (escape.h).
 */
#ifndef RP_CTL_ANSWER_SET_VIEW_H
#define RP_CTL_ANSWER_SET_VIEW_H

#include <jansson.h>
#include <stdio.h>

/* answer_many's result: the set made (or, dry run, what it would be). */
void rp_ctl_print_answer_many(FILE *f, const json_t *result);
/* answer_set's result: one set's progress. */
void rp_ctl_print_answer_set(FILE *f, const json_t *result);

#endif
