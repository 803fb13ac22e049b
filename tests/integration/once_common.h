/*
 * once_common.h - one `reaperd --once --json` pass of a test, its report
 * parsed (test_reaperd_backfill_remainder, test_reaperd_replay_backfill).
 *
 * Ownership: the report is heap JSON the caller json_decref's.
 */
#ifndef RP_ONCE_COMMON_H
#define RP_ONCE_COMMON_H

#include <stdbool.h>

#include <jansson.h>

/* Runs reaperd --once --json [--dry-run] on schema with env (NULL-ended,
 * may be NULL; no pass interval of the tests' own: reaperd's default) and
 * returns its report; fails the test (printing the exit code and output)
 * when the output is not JSON, or, must_be_ok, the report is not ok. */
json_t *itest_once_report(const char *schema, char *const *env, bool dry_run, bool must_be_ok);

#endif
