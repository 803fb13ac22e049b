/*
 * print.h - reaperctl's output for people: aligned tables and short lines
 * from a reply's result (a jansson tree, borrowed).
 */
#ifndef RP_CTL_PRINT_H
#define RP_CTL_PRINT_H

#include <jansson.h>
#include <stdio.h>

void rp_ctl_print_status(FILE *f, const json_t *result);
void rp_ctl_print_report(FILE *f, const json_t *report);
void rp_ctl_print_gates(FILE *f, const json_t *result, long long now_ms);
void rp_ctl_print_answer(FILE *f, const json_t *result);
/* Job triage: a page of jobs (with the total and how to get the next), one
 * job with its payload, a cancel's outcome. */
void rp_ctl_print_jobs(FILE *f, const json_t *result, long long now_ms);
void rp_ctl_print_job(FILE *f, const json_t *result);
void rp_ctl_print_cancel(FILE *f, const json_t *result);
/* doctor's checks, one line each ("ok", "WARN", "FAIL"), then the counts. */
void rp_ctl_print_doctor(FILE *f, const json_t *result);
/* stats' two tables (print_stats.c): the owned queues, then the job
 * table's (project, kind)s, each cell escaped; "-" for what is unknown. */
void rp_ctl_print_stats(FILE *f, const json_t *result);

#endif
