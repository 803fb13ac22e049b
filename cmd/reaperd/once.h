/*
 * once.h - the one-shot run modes: `reaperd --once [--project P]
 * [--dry-run] [--json]` (one whole pass in-process, a report on standard
 * output, and an exit code) and `reaperd --doctor [--json]`.
 *
 * With json, standard output is exactly one JSON object (the pass report of
 * CONTRACT section 5) and nothing else; logs go to standard error. Borrows
 * cfg and password.
 *
 * Every ledger event the pass commits is also published to
 * broker.events_exchange (rp_amqp_feed.h over a publish-only
 * rp_amqp_session; none in a dry run).
 * Events the broker did not take are a note in the report and a warning,
 * and do not make the exit code 1: the ledger has them.
 */
#ifndef RP_ONCE_H
#define RP_ONCE_H

#include <stdbool.h>

#include "rp_config.h"

/* Returns 0 when the pass was ok (whatever became of its events feed), 1
 * when anything was unreadable or the pass could not run. */
int rp_once_run(const rp_config *cfg, const char *password, const char *project, bool dry_run,
                bool json);

/* reaperd --doctor [--json] (issue #18 item 6): every probe (ports.h)
 * against cfg on a worker thread while the loop carries the management
 * API's bridge, judged by core (rp_doctor_judge) and printed (text, or one
 * JSON object with json). Returns the exit code: 0 when no check failed, 1
 * otherwise. */
int rp_doctor_cli(const rp_config *cfg, const char *password, bool json);

#endif
