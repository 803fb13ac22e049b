/* reaperd's command line (core/rp_reaperd_args.h): one row per line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rp_reaperd_args.h"

#define RP_ARGS_MAX 8

typedef struct args_case {
    const char *argv[RP_ARGS_MAX]; /* after "reaperd"; NULL-terminated */
    bool ok;
    const char *line;  /* ok false: the line after "reaperd: " */
    bool usage;        /* ok false: the help follows */
    const char *want;  /* ok true: the fields, as args_render writes them */
} args_case;

static void args_render(const rp_reaperd_args *a, char *out, size_t n) {
    snprintf(out, n, "config=%s project=%s check=%d migrate=%d once=%d dry_run=%d json=%d "
                     "health=%d doctor=%d version=%d help=%d",
             a->config ? a->config : "-", a->project ? a->project : "-", a->check, a->migrate,
             a->once, a->dry_run, a->json, a->health, a->doctor, a->version, a->help);
}

#define F(c, p, chk, mig, once, dry, json, health, doc, ver, help)                                \
    "config=" c " project=" p " check=" #chk " migrate=" #mig " once=" #once " dry_run=" #dry       \
    " json=" #json " health=" #health " doctor=" #doc " version=" #ver " help=" #help

static const args_case cases[] = {
    {{NULL}, true, NULL, false, F("-", "-", 0, 0, 0, 0, 0, 0, 0, 0, 0)},
    {{"--config", "/etc/r.yaml", NULL}, true, NULL, false,
     F("/etc/r.yaml", "-", 0, 0, 0, 0, 0, 0, 0, 0, 0)},
    {{"-c", "r.yaml", "--check-config", NULL}, true, NULL, false,
     F("r.yaml", "-", 1, 0, 0, 0, 0, 0, 0, 0, 0)},
    {{"--once", "--project", "p1", "--dry-run", "--json", NULL}, true, NULL, false,
     F("-", "p1", 0, 0, 1, 1, 1, 0, 0, 0, 0)},
    {{"--doctor", "--json", NULL}, true, NULL, false, F("-", "-", 0, 0, 0, 0, 1, 0, 1, 0, 0)},
    {{"--migrate", NULL}, true, NULL, false, F("-", "-", 0, 1, 0, 0, 0, 0, 0, 0, 0)},
    {{"--healthcheck", NULL}, true, NULL, false, F("-", "-", 0, 0, 0, 0, 0, 1, 0, 0, 0)},
    /* -V and -h end the reading where they stand. */
    {{"-V", "--bogus", NULL}, true, NULL, false, F("-", "-", 0, 0, 0, 0, 0, 0, 0, 1, 0)},
    {{"--once", "--migrate", "--help", NULL}, true, NULL, false,
     F("-", "-", 0, 1, 1, 0, 0, 0, 0, 0, 1)},
    {{"--bogus", "-V", NULL}, false, "unknown option --bogus", true, NULL},
    {{"--config", NULL}, false, "option --config needs a value", true, NULL},
    {{"--once", "--project", NULL}, false, "option --project needs a value", true, NULL},
    {{"--project", "p", NULL}, false,
     "--project and --dry-run go with --once, --json with --once or --doctor", true, NULL},
    {{"--dry-run", NULL}, false,
     "--project and --dry-run go with --once, --json with --once or --doctor", true, NULL},
    {{"--json", NULL}, false,
     "--project and --dry-run go with --once, --json with --once or --doctor", true, NULL},
    {{"--once", "--doctor", NULL}, false,
     "choose one of --check-config, --migrate, --once, --healthcheck and --doctor", true, NULL},
    {{"--check-config", "--migrate", NULL}, false,
     "choose one of --check-config, --migrate, --once, --healthcheck and --doctor", true, NULL},
    {{"--once", "--project", "", NULL}, false, "--project takes a project id of 1 to 256 bytes",
     false, NULL},
    {{"--once", "stray", NULL}, false, "unexpected argument 'stray'", true, NULL},
};

static void run_case(const args_case *c) {
    char *argv[RP_ARGS_MAX + 2] = {"reaperd"};
    int argc = 1;
    for (size_t i = 0; i < RP_ARGS_MAX && c->argv[i] != NULL; i++) argv[argc++] = (char *)c->argv[i];
    rp_reaperd_args a;
    rp_reaperd_args_error e = {0};
    bool ok = rp_reaperd_args_parse(argc, argv, &a, &e);
    char got[512];
    if (ok) args_render(&a, got, sizeof got);
    else snprintf(got, sizeof got, "%s%s%s", e.pre, e.arg ? e.arg : "", e.post);
    if (ok != c->ok) fail_msg("case %s: ok %d, want %d (%s)", c->argv[0], ok, c->ok, got);
    assert_string_equal(got, c->ok ? c->want : c->line);
    if (!ok) assert_int_equal(e.usage, c->usage);
}

static void test_cases(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

static void test_project_length(void **state) {
    (void)state;
    char p256[257], p257[258];
    memset(p256, 'p', 256);
    p256[256] = '\0';
    memset(p257, 'p', 257);
    p257[257] = '\0';
    char *ok[] = {"reaperd", "--once", "--project", p256};
    char *bad[] = {"reaperd", "--once", "--project", p257};
    rp_reaperd_args a;
    rp_reaperd_args_error e;
    assert_true(rp_reaperd_args_parse(4, ok, &a, &e));
    assert_string_equal(a.project, p256);
    assert_false(rp_reaperd_args_parse(4, bad, &a, &e));
    assert_false(e.usage);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_project_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
