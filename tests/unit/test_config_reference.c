/* The configuration reference (rp_config_reference, docs/CONFIGURATION.md):
 * every key of the table has a description and a row with its environment
 * variable, default and reload/restart; and the file in the repository is
 * exactly what the table gives today (run scripts/gen-config-reference
 * after changing a key). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_config.h"

/* Not inlined: GCC 12 takes the string it returns for its local (-Wdangling-pointer). */
__attribute__((noinline)) static char *reference(void) {
    char *text = NULL;
    assert_int_equal(rp_config_reference(&text), RP_OK);
    assert_non_null(text);
    return text;
}

static void test_every_key_has_a_row(void **state) {
    (void)state;
    char *t = reference();
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) {
        const char *doc = rp_config_key_doc((rp_config_key_id)i);
        assert_non_null(doc);
        assert_true(strlen(doc) > 10);
        char env[128], row[256];
        rp_config_env_name((rp_config_key_id)i, env, sizeof env);
        snprintf(row, sizeof row, "\n| `%s` | `%s` | ", rp_config_key_name((rp_config_key_id)i),
                 env);
        const char *at = strstr(t, row);
        if (at == NULL) fail_msg("no row starting %s", row + 1);
        const char *eol = strchr(at + 1, '\n');
        char line[2048];
        snprintf(line, sizeof line, "%.*s", (int)(eol - at - 1), at + 1);
        const char *applies = rp_config_key_needs_restart((rp_config_key_id)i) ? " | restart | "
                                                                              : " | reload | ";
        if (strstr(line, applies) == NULL) fail_msg("%s: not%s", line, applies);
    }
    /* Spot checks against the table: a default, a range, the choices, an
     * environment-only secret. */
    assert_non_null(strstr(t, "| `reap.interval_seconds` | `REAPER_REAP_INTERVAL_SECONDS` | "
                              "integer, at least 1 | `60` | reload |"));
    assert_non_null(strstr(t, "| `reap.dead_letter_peek_limit` | `REAPER_REAP_DEAD_LETTER_PEEK_LIMIT` | "
                              "integer, 1..1000 | `100` | reload |"));
    assert_non_null(strstr(t, "| `log.level` | `REAPER_LOG_LEVEL` | one of `debug`, `info`, "
                              "`warn`, `error` | `info` | reload |"));
    assert_non_null(strstr(t, "| `reap.dead_letter_queue_pattern` | "
                              "`REAPER_REAP_DEAD_LETTER_QUEUE_PATTERN` | PCRE pattern | "
                              "`(\\.dlq\\|\\.dead)$` |"));
    assert_non_null(strstr(t, "Environment only. |\n"));
    assert_null(rp_config_key_doc(RP_CFG_KEY_COUNT_));
    free(t);
}

static void test_the_file_is_current(void **state) {
    (void)state;
    const char *src = getenv("REAPER_SOURCE_DIR");
    assert_non_null(src);
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/CONFIGURATION.md", src);
    FILE *f = fopen(path, "rb");
    if (f == NULL) fail_msg("cannot open %s: run scripts/gen-config-reference", path);
    static char file[65536];
    size_t n = fread(file, 1, sizeof file - 1, f);
    fclose(f);
    file[n] = '\0';
    char *t = reference();
    if (strcmp(t, file) != 0)
        fail_msg("docs/CONFIGURATION.md is not what the configuration table gives: run "
                 "scripts/gen-config-reference");
    free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_key_has_a_row),
        cmocka_unit_test(test_the_file_is_current),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
