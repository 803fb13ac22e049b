#include "once_common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "test_daemon.h"

json_t *itest_once_report(const char *schema, char *const *env, bool dry_run, bool must_be_ok) {
    char *args[] = {"--once", "--json", dry_run ? "--dry-run" : NULL, NULL};
    itest_daemon_opts o = {.schema = schema, .env = env, .args = args, .no_interval = true};
    char *out = NULL, *err = NULL;
    int rc = itest_daemon_run(&o, &out, &err);
    json_error_t je;
    json_t *rep = json_loads(out ? out : "", 0, &je);
    if (rep == NULL || rc != 0) fprintf(stderr, "reaperd --once exit %d\n%s\n%s\n", rc, out, err);
    assert_non_null(rep);
    if (must_be_ok) assert_true(json_is_true(json_object_get(rep, "ok")));
    free(out);
    free(err);
    return rep;
}
