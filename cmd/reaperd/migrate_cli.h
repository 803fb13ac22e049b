/* migrate_cli.h - `reaperd --migrate`: connect, apply, report, exit code.
 * Blocking: runs before (instead of) the loop. Borrows cfg. */
#ifndef RP_MIGRATE_CLI_H
#define RP_MIGRATE_CLI_H

#include "rp_config.h"

/* Returns 0 when the schema is current (applied now or before), 1 when the
 * store could not be reached or refused (logged). */
int rp_cli_migrate(const rp_config *cfg);

#endif
