/* Loading the configuration: the YAML file (fixtures in unit/config/), the
 * environment over it, the file errors, and the whole path of
 * rp_config_load() as reaperd --check-config uses it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "config_problems_assert.h"

#include "rp_config.h"
#include "rp_config_load.h"

#ifndef RP_CONFIG_FIXTURES
#error "RP_CONFIG_FIXTURES must name tests/unit/config"
#endif

static const char *fixture(const char *name) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", RP_CONFIG_FIXTURES, name);
    return path;
}


#define assert_count(p, want)                                                            \
    do {                                                                                 \
        if (rp_config_problems_count(p) != (size_t)(want)) print_problems(p);            \
        assert_int_equal(rp_config_problems_count(p), (want));                           \
    } while (0)

/* Loads a YAML text (and envp) through the whole path of rp_config_load,
 * by writing it to a temporary file. */
static rp_status load_text(const char *yaml, char *const *envp, rp_config *c,
                           rp_config_problems *p) {
    char path[] = "/tmp/test_config_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = strlen(yaml);
    assert_int_equal(write(fd, yaml, len), (ssize_t)len);
    close(fd);
    rp_status st = rp_config_load(path, envp, c, p);
    unlink(path);
    return st;
}

/* One load and what it must say. From the fixture unit/config/<fixture>,
 * else from the file at path, else from the text yaml (written to a
 * temporary file), else from the environment alone; envp may be NULL. want is the status; count, when not
 * 0, the number of problems; every (key, needle) pair in problems (key NULL:
 * any problem) must be found among them. */
typedef struct load_case {
    const char *fixture;
    const char *path;
    const char *yaml;
    char *const *envp;
    rp_status want;
    size_t count;
    struct {
        const char *key, *needle;
    } problems[8];
} load_case;

/* Loads k into c and p (initialised here) and checks it; the caller may
 * look further, then calls load_case_done. */
static void load_case_run(const load_case *k, rp_config *c, rp_config_problems *p) {
    rp_config_problems_init(p);
    const char *path = k->fixture ? fixture(k->fixture) : k->path;
    rp_status st = path || !k->yaml ? rp_config_load(path, k->envp, c, p)
                                    : load_text(k->yaml, k->envp, c, p);
    if (st != k->want) print_problems(p);
    assert_int_equal(st, k->want);
    if (k->count) assert_count(p, k->count);
    for (size_t i = 0; i < 8 && (k->problems[i].key || k->problems[i].needle); i++)
        assert_problem(p, k->problems[i].key, k->problems[i].needle);
}

static void load_case_done(rp_config *c, rp_config_problems *p) {
    rp_config_problems_cleanup(p);
    rp_config_cleanup(c);
}

static void load_cases(const load_case *k, size_t n) {
    for (size_t i = 0; i < n; i++) {
        rp_config c;
        rp_config_problems p;
        load_case_run(&k[i], &c, &p);
        load_case_done(&c, &p);
    }
}

#define LOAD_CASES(cases) load_cases((cases), sizeof(cases) / sizeof *(cases))

/* Drops the "  # origin" comments of rp_config_format's text, in place. */
static void strip_comments(char *text) {
    for (char *s = text; (s = strstr(s, "  # ")) != NULL;) {
        char *e = strchr(s, '\n');
        memmove(s, e, strlen(e) + 1);
    }
}

/* c and d hold the same values: --check-config's texts without the
 * origins are equal. */
static void assert_same_values(const rp_config *c, const rp_config *d) {
    char *a = NULL, *b = NULL;
    assert_int_equal(rp_config_format(c, &a, NULL), RP_OK);
    assert_int_equal(rp_config_format(d, &b, NULL), RP_OK);
    strip_comments(a);
    strip_comments(b);
    assert_string_equal(a, b);
    free(a);
    free(b);
}

static void test_contract_example_is_the_defaults(void **state) {
    (void)state;
    rp_config c, d;
    rp_config_problems p;
    load_case_run(&(load_case){.fixture = "valid.yaml", .want = RP_OK}, &c, &p);
    assert_count(&p, 0);
    assert_int_equal(rp_config_init(&d), RP_OK);
    /* Same values as the defaults; only the origins differ. */
    assert_same_values(&c, &d);
    /* Origins: file, line and column of the value (1-based). */
    assert_int_equal(c.origin[RP_CFG_REAP_INTERVAL_SECONDS].source, RP_CONFIG_FILE);
    assert_int_equal(c.origin[RP_CFG_REAP_INTERVAL_SECONDS].line, 15);
    assert_int_equal(c.origin[RP_CFG_REAP_INTERVAL_SECONDS].column, 21);
    assert_int_equal(c.origin[RP_CFG_BROKER_TLS_VERIFY_PEER].line, 9);
    assert_int_equal(c.origin[RP_CFG_BROKER_PASSWORD].source, RP_CONFIG_DEFAULT);
    assert_string_equal(c.path, fixture("valid.yaml"));
    assert_non_null(c.reap.owned_queue_pattern.code);
    load_case_done(&c, &p);
    rp_config_cleanup(&d);
}

static void test_custom_file(void **state) {
    (void)state;
    rp_config c;
    rp_config_problems p;
    load_case_run(&(load_case){.fixture = "custom.yaml", .want = RP_OK}, &c, &p);
    assert_string_equal(c.broker.url, "amqps://reaper@rabbit.internal:5671/prod");
    assert_string_equal(c.broker.tls.ca_file, "/etc/reaper/ca.pem");
    assert_string_equal(c.broker.tls.key_file, "/etc/reaper/client.key");
    assert_false(c.broker.tls.verify_peer);
    assert_string_equal(c.store.dsn,
                        "postgresql://reaper@db.internal:5432/vibey?sslmode=verify-full");
    assert_string_equal(c.store.schema, "reaper_prod");
    assert_false(c.reap.enabled);
    assert_int_equal(c.reap.interval_seconds, 30);
    assert_string_equal(c.reap.owned_queue_pattern.text, "^orders\\.");
    assert_int_equal(c.control.allowed_users.n, 3);
    assert_string_equal(c.control.allowed_users.items[0], "alice");
    assert_string_equal(c.control.allowed_users.items[1], "bob");
    assert_string_equal(c.control.allowed_users.items[2], "42");
    assert_int_equal(c.log.level, RP_LOG_DEBUG);
    assert_int_equal(c.log.format, RP_LOG_FORMAT_TEXT);
    assert_int_equal(c.reap.stale_ready_seconds, 900); /* untouched: default */
    assert_int_equal(c.origin[RP_CFG_REAP_STALE_READY_SECONDS].source, RP_CONFIG_DEFAULT);
    load_case_done(&c, &p);
}

static void test_malformed_yaml_has_line_and_column(void **state) {
    (void)state;
    rp_config c;
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_load(fixture("malformed.yaml"), NULL, &c, &p), RP_ERR_CONFIG);
    assert_count(&p, 1);
    assert_null(p.items[0].key);
    char want[1100];
    snprintf(want, sizeof want,
             "%s:4:18: malformed YAML: mapping values are not allowed in this context",
             fixture("malformed.yaml"));
    if (strncmp(p.items[0].message, want, strlen(want)) != 0) print_problems(&p);
    assert_int_equal(strncmp(p.items[0].message, want, strlen(want)), 0);
    load_case_done(&c, &p);

    static const load_case cases[] = {
        /* An unclosed quote: where the stream ended, and where the quote began. */
        {.yaml = "reap:\n  interval_seconds: 60\n  x: \"open\n", .want = RP_ERR_CONFIG,
         .problems = {{NULL, ":4:1: malformed YAML: found unexpected end of stream (while "
                             "scanning a quoted scalar at line 3 column 6)"}}},
        /* Invalid UTF-8 is a reader error: still a line and a column. */
        {.yaml = "log:\n  level: \xff\xfe\n", .want = RP_ERR_CONFIG,
         .problems = {{NULL, ":2:10: malformed YAML: invalid leading UTF-8 octet (byte 0xff)"}}},
    };
    LOAD_CASES(cases);
}

static void test_document_shape(void **state) {
    (void)state;
    static const load_case cases[] = {
        {.fixture = "not_mapping.yaml", .want = RP_ERR_CONFIG, .count = 1,
         .problems = {{NULL, ":1:1: the document is not a mapping (got a list)"}}},
        {.yaml = "just a string\n", .want = RP_ERR_CONFIG,
         .problems = {{NULL, "not a mapping (got a single value)"}}},
        {.yaml = "log: {level: info}\n---\nlog: {level: debug}\n", .want = RP_ERR_CONFIG,
         .problems = {{NULL, ":2:1: a second YAML document"}}},
        /* Empty, comments only, an explicit empty document: the defaults. */
        {.yaml = "", .want = RP_OK},
        {.yaml = "# nothing\n", .want = RP_OK},
        {.yaml = "---\n", .want = RP_OK},
        {.yaml = "--- ~\n...\n", .want = RP_OK},
        {.fixture = "empty.yaml", .want = RP_OK},
        /* A section that is not a mapping; an empty section is fine. */
        {.yaml = "reap: 5\ncontrol:\n", .want = RP_ERR_CONFIG, .count = 1,
         .problems = {{"reap", ":1:7: reap: is a section: expects a mapping, got a single value"}}},
        /* A non-scalar key, a tag. */
        {.yaml = "log:\n  ? [a]\n  : b\n  level: !!str info\n", .want = RP_ERR_CONFIG,
         .count = 2,
         .problems = {{"log", "a key must be a plain string, got a list"},
                      {"log.level", "tags are not supported"}}},
    };
    LOAD_CASES(cases);
}

static void test_wrong_types_from_yaml(void **state) {
    (void)state;
    static const load_case types = {
        .fixture = "types.yaml", .want = RP_ERR_CONFIG, .count = 7,
        .problems = {{"reap.interval_seconds",
                      "types.yaml:2:21: reap.interval_seconds: expects an integer, got a quoted "
                      "string \"60\" (write the number without quotes)"},
                     {"reap.stale_ready_seconds", "expects an integer, got a bool \"true\""},
                     {"reap.delivery_limit", "expects an integer, got a float \"1.5\""},
                     {"reap.dead_letter_min_depth", "expects an integer, got a string \"lots\""},
                     {"reap.enabled", "expects true or false, got \"yes\""},
                     {"reap.lease_grace_seconds", "expects an integer, got a mapping"},
                     {"reap.policy_priority", "expects an integer, got a list"}}};
    rp_config c;
    rp_config_problems p;
    load_case_run(&types, &c, &p);
    /* Refused values are not stored. */
    assert_int_equal(c.reap.interval_seconds, 60);
    assert_int_equal(c.origin[RP_CFG_REAP_INTERVAL_SECONDS].source, RP_CONFIG_DEFAULT);
    load_case_done(&c, &p);

    static const load_case cases[] = {
        /* A list item that is a mapping. */
        {.yaml = "control:\n  allowed_users: [alice, {b: c}]\n", .want = RP_ERR_CONFIG,
         .problems = {{"control.allowed_users", "a list holding a mapping or a list"}}},
    };
    LOAD_CASES(cases);
}

static void test_unknown_keys_did_you_mean(void **state) {
    (void)state;
    static const load_case cases[] = {
        {.fixture = "unknown.yaml", .want = RP_ERR_CONFIG, .count = 3,
         .problems = {{"broker.tsl", "unknown.yaml:2:3: broker.tsl: unknown key; did you mean "
                                     "broker.tls?"},
                      {"reap.intervall_seconds", "did you mean reap.interval_seconds?"},
                      {"colour", "colour: unknown key"}}},
        /* A dotted key is refused with how to write it. */
        {.yaml = "reap.interval_seconds: 30\n", .want = RP_ERR_CONFIG,
         .problems = {{"reap.interval_seconds", "write it nested"}}},
    };
    LOAD_CASES(cases);
}

static void test_duplicates_refused(void **state) {
    (void)state;
    static const load_case dup = {
        .fixture = "duplicate.yaml", .want = RP_ERR_CONFIG, .count = 2,
        .problems = {{"reap.interval_seconds", ":3:3: reap.interval_seconds: duplicate key "
                                               "(first at line 2)"},
                     {"log", ":6:1: log: duplicate section (first at line 4)"}}};
    rp_config c;
    rp_config_problems p;
    load_case_run(&dup, &c, &p);
    assert_int_equal(c.reap.interval_seconds, 30); /* the first one */
    load_case_done(&c, &p);
}

static void test_aliases_refused_billion_laughs(void **state) {
    (void)state;
    static const load_case laughs = {
        .fixture = "billion_laughs.yaml", .want = RP_ERR_CONFIG,
        .count = 10, /* a..i unknown, and the alias */
        .problems = {{"control.allowed_users", "expects a list of strings, got an alias"},
                     {"a", "unknown key"}}};
    rp_config c;
    rp_config_problems p;
    clock_t t0 = clock();
    load_case_run(&laughs, &c, &p);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_true(secs < 1.0);
    assert_int_equal(c.control.allowed_users.n, 0);
    load_case_done(&c, &p);

    static const load_case cases[] = {
        /* An alias inside a list of users. */
        {.yaml = "control:\n  allowed_users: [&u alice, *u]\n", .want = RP_ERR_CONFIG,
         .problems = {{"control.allowed_users", "an alias in the list"}}},
    };
    LOAD_CASES(cases);
}

static void test_file_missing_or_unreadable(void **state) {
    (void)state;
    rp_config c;
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_load(fixture("no-such-file.yaml"), NULL, &c, &p), RP_ERR_IO);
    assert_count(&p, 1);
    char want[1200];
    snprintf(want, sizeof want, "%s: cannot open the configuration file: No such file or "
                                "directory", fixture("no-such-file.yaml"));
    assert_string_equal(p.items[0].message, want);
    assert_null(p.items[0].key);
    assert_string_equal(p.items[0].where, fixture("no-such-file.yaml"));
    load_case_done(&c, &p);

    static const load_case cases[] = {
        /* A directory opens but cannot be read (chmod 000 would not stop root). */
        {.path = RP_CONFIG_FIXTURES, .want = RP_ERR_IO, .count = 1,
         .problems = {{NULL, RP_CONFIG_FIXTURES ": cannot read the configuration file: Is a "
                             "directory"}}},
        /* Not a regular file. */
        {.path = "/dev/null", .want = RP_ERR_IO, .count = 1,
         .problems = {{NULL, "/dev/null: cannot read the configuration file: not a regular "
                             "file"}}},
    };
    LOAD_CASES(cases);

    /* Over the size limit, as a file and as a buffer. */
    size_t big = RP_CONFIG_FILE_MAX + 1;
    char *text = malloc(big + 1);
    assert_non_null(text);
    memset(text, '#', big);
    text[big] = '\0';
    load_case too_large = {.yaml = text, .want = RP_ERR_TOO_LARGE,
                           .problems = {{NULL, "the limit is 1048576 bytes"}}};
    load_cases(&too_large, 1);
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_init(&c), RP_OK);
    assert_int_equal(rp_config_load_yaml_buffer(text, big, "big.yaml", &c, &p, NULL),
                     RP_ERR_TOO_LARGE);
    load_case_done(&c, &p);
    /* Exactly at the limit is fine (all comment). */
    text[big - 1] = '\0';
    load_case at_limit = {.yaml = text, .want = RP_OK};
    load_cases(&at_limit, 1);
    free(text);
}

static void test_environment_wins(void **state) {
    (void)state;
    char *envp[] = {
        "PATH=/usr/bin",
        "REAPER_REAP_INTERVAL_SECONDS=15",
        "REAPER_REAP_INTERVAL_SECONDS=99", /* the first one counts */
        "REAPER_LOG_FORMAT=text",
        "REAPER_BROKER_TLS_CA_FILE=/env/ca.pem",
        "REAPER_CONTROL_ALLOWED_USERS=carol, dave",
        "REAPER_BROKER_PASSWORD=Env-Secret-9",
        "REAPER_SOURCE_DIR=/work/main", /* the test tools', not a key */
        "reaper_log_level=debug",       /* not upper case: not ours */
        NULL,
    };
    rp_config c;
    rp_config_problems p;
    load_case_run(&(load_case){.fixture = "custom.yaml", .envp = envp, .want = RP_OK}, &c, &p);
    assert_int_equal(c.reap.interval_seconds, 15);
    assert_int_equal(c.origin[RP_CFG_REAP_INTERVAL_SECONDS].source, RP_CONFIG_ENV);
    assert_int_equal(c.log.format, RP_LOG_FORMAT_TEXT);
    assert_int_equal(c.log.level, RP_LOG_DEBUG); /* from the file */
    assert_string_equal(c.broker.tls.ca_file, "/env/ca.pem");
    assert_int_equal(c.control.allowed_users.n, 2);
    assert_string_equal(c.control.allowed_users.items[1], "dave");
    assert_string_equal(c.broker.password, "Env-Secret-9");
    char *text = NULL;
    assert_int_equal(rp_config_format(&c, &text, NULL), RP_OK);
    assert_null(strstr(text, "Env-Secret-9"));
    assert_non_null(strstr(text, "password: '********'  # env REAPER_BROKER_PASSWORD"));
    assert_non_null(strstr(text, "interval_seconds: 15  # env REAPER_REAP_INTERVAL_SECONDS"));
    assert_non_null(strstr(text, "level: debug  # file "));
    free(text);
    load_case_done(&c, &p);
}

static void test_environment_alone(void **state) {
    (void)state;
    char *envp[] = {
        "REAPER_BROKER_URL=amqp://reaper@rabbit:5672/%2f",
        "REAPER_STORE_DSN=host=db dbname=vibey user=reaper",
        "REAPER_REAP_ENABLED=false",
        "REAPER_REAP_LONGEST_LEASE_SECONDS=600",
        "REAPER_REAP_CONSUMER_TIMEOUT_SECONDS=900",
        "REAPER_CONTROL_ALLOWED_USERS=",
        NULL,
    };
    rp_config c;
    rp_config_problems p;
    load_case_run(&(load_case){.envp = envp, .want = RP_OK}, &c, &p);
    assert_null(c.path);
    assert_string_equal(c.broker.url, "amqp://reaper@rabbit:5672/%2f");
    assert_string_equal(c.store.dsn, "host=db dbname=vibey user=reaper");
    assert_false(c.reap.enabled);
    assert_int_equal(c.reap.consumer_timeout_seconds, 900);
    assert_int_equal(c.control.allowed_users.n, 0);
    assert_int_equal(c.reap.interval_seconds, 60);
    load_case_done(&c, &p);

    /* Nothing at all: the defaults, valid. */
    load_cases(&(load_case){.want = RP_OK}, 1);
}

static void test_environment_problems(void **state) {
    (void)state;
    static char *envp[] = {
        "REAPER_REAP_INTERVAL_SECOND=30",
        "REAPER_BROKER_PASWORD=Typo-Secret-1",
        "REAPER_REAP_DELIVERY_LIMIT=1.5",
        "REAPER_REAP_ENABLED=yes",
        "REAPER_LOG_LEVEL=loud",
        "REAPER_REAP_POLICY_PRIORITY=-1",
        "REAPER_BROKER_TAP_QUEUE=tap\xff\xfe",
        NULL,
    };
    static const load_case env = {
        .envp = envp, .want = RP_ERR_CONFIG, .count = 7,
        .problems = {{"broker.tap_queue", "the value is not valid UTF-8"},
                     {"REAPER_REAP_INTERVAL_SECOND",
                      "environment: REAPER_REAP_INTERVAL_SECOND: unknown variable; did you mean "
                      "REAPER_REAP_INTERVAL_SECONDS?"},
                     {"REAPER_BROKER_PASWORD", "did you mean REAPER_BROKER_PASSWORD?"},
                     {"reap.delivery_limit",
                      "environment REAPER_REAP_DELIVERY_LIMIT: reap.delivery_limit: expects an "
                      "integer, got a float \"1.5\""},
                     {"reap.enabled", "expects true or false"},
                     {"log.level", "expects one of debug|info|warn|error, got \"loud\""},
                     {"reap.policy_priority",
                      "environment REAPER_REAP_POLICY_PRIORITY: reap.policy_priority: must be at "
                      "least 0, got -1"}}};
    rp_config c;
    rp_config_problems p;
    load_case_run(&env, &c, &p);
    for (size_t i = 0; i < p.n; i++) assert_null(strstr(p.items[i].message, "Typo-Secret-1"));
    load_case_done(&c, &p);
}

/* Issue #16: the variables a kubelet injects into every container of a
 * namespace for each Service (service links). For Services named "reaper"
 * and "reaper-metrics" they all start with REAPER_: reaperd must pass over
 * them, every shape, while still refusing a misspelt key, and a name of a
 * service link's shape whose value is not (REAPER_PORT=9100). */
static void test_environment_service_links(void **state) {
    (void)state;
    char *envp[] = {
        "REAPER_SERVICE_HOST=10.96.12.34",
        "REAPER_SERVICE_PORT=9464",
        "REAPER_SERVICE_PORT_HTTP=9464",
        "REAPER_PORT=tcp://10.96.12.34:9464",
        "REAPER_PORT_9464_TCP=tcp://10.96.12.34:9464",
        "REAPER_PORT_9464_TCP_PROTO=tcp",
        "REAPER_PORT_9464_TCP_PORT=9464",
        "REAPER_PORT_9464_TCP_ADDR=10.96.12.34",
        "REAPER_METRICS_SERVICE_HOST=fd00:10:96::a",
        "REAPER_METRICS_SERVICE_PORT=9100",
        "REAPER_METRICS_SERVICE_PORT_METRICS_HTTP=9100",
        "REAPER_METRICS_PORT=udp://[fd00:10:96::a]:9100",
        "REAPER_METRICS_PORT_9100_UDP=udp://[fd00:10:96::a]:9100",
        "REAPER_METRICS_PORT_9100_UDP_PROTO=udp",
        "REAPER_METRICS_PORT_9100_UDP_PORT=9100",
        "REAPER_METRICS_PORT_9100_UDP_ADDR=fd00:10:96::a",
        "REAPER_2_PORT_36412_SCTP=sctp://10.0.0.7:36412",
        "REAPER_REAP_INTERVAL_SECONDS=15",
        NULL,
    };
    rp_config c;
    rp_config_problems p;
    load_case_run(&(load_case){.envp = envp, .want = RP_OK}, &c, &p);
    assert_int_equal(c.reap.interval_seconds, 15);
    load_case_done(&c, &p);

    /* The list for reaperd's debug line: the names, never the values. */
    char names[512];
    assert_int_equal(rp_config_env_service_links(envp, names, sizeof names), 17);
    assert_non_null(strstr(names, "REAPER_SERVICE_HOST,REAPER_SERVICE_PORT,"));
    assert_null(strstr(names, "10.96"));
    assert_null(strstr(names, "REAPER_REAP_INTERVAL_SECONDS"));
    /* Cut to whole names. */
    assert_int_equal(rp_config_env_service_links(envp, names, 30), 17);
    assert_string_equal(names, "REAPER_SERVICE_HOST");

    /* Misspelt keys, and service-link names with values of another shape,
     * are still refused, each naming the variable. */
    char *bad[] = {
        "REAPER_SERVICE_HOST=10.96.12.34",
        "REAPER_REAP_INTERVAL_SECOND=30",
        "REAPER_PORT=9100",                         /* not <proto>://<ip>:<port> */
        "REAPER_HTTP_SERVICE_HOST=reaper.local",    /* not an IP */
        "REAPER_SERVICE_PORT=http",                 /* not a port number */
        "REAPER_PORT_9464_TCP=tcp://10.0.0.1:9100", /* the port differs */
        "REAPER_PORT_9464_TCP_PROTO=udp",           /* the protocol differs */
        "REAPER_PORT_9464_TCP_PORT=9100",
        "REAPER_PORT_9464_TCP_ADDR=999.1.1.1",
        "REAPER_PORT_9464_HTTP=tcp://10.0.0.1:9464", /* no such protocol */
        "REAPER_PORT_99999_TCP_PORT=99999",
        "REAPER_HTTP_LISTEN_PORT=9100",
        NULL,
    };
    const load_case refused = {
        .envp = bad, .want = RP_ERR_CONFIG, .count = 11,
        .problems = {{"REAPER_REAP_INTERVAL_SECOND", "did you mean REAPER_REAP_INTERVAL_SECONDS?"},
                     {"REAPER_PORT", "unknown variable"},
                     {"REAPER_HTTP_SERVICE_HOST", "unknown variable"},
                     {"REAPER_HTTP_LISTEN_PORT", "unknown variable"},
                     {"REAPER_PORT_9464_TCP_ADDR", "unknown variable"}}};
    load_cases(&refused, 1);
}

/* broker.events_format (issue #4: the feed's body, msgpack or JSON): from
 * the file and from the environment, shown by --check-config with where it
 * came from, and a bad value refused naming the key (reaperd then exits 2). */
static void test_events_format(void **state) {
    (void)state;
    static char *env_json[] = {"REAPER_BROKER_EVENTS_FORMAT=json", NULL};
    static const struct {
        load_case k;
        rp_events_format format;
        rp_config_source source;
        const char *shown; /* in --check-config's text */
    } cases[] = {
        {{.yaml = "broker:\n  events_format: json\n", .want = RP_OK}, RP_EVENTS_FORMAT_JSON,
         RP_CONFIG_FILE, "  events_format: json  # file "},
        /* The environment wins. */
        {{.yaml = "broker:\n  events_format: msgpack\n", .envp = env_json, .want = RP_OK},
         RP_EVENTS_FORMAT_JSON, RP_CONFIG_ENV,
         "  events_format: json  # env REAPER_BROKER_EVENTS_FORMAT"},
        /* The default. */
        {{.want = RP_OK}, RP_EVENTS_FORMAT_MSGPACK, RP_CONFIG_DEFAULT,
         "  events_format: msgpack  # default"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rp_config c;
        rp_config_problems p;
        load_case_run(&cases[i].k, &c, &p);
        assert_count(&p, 0);
        assert_int_equal(c.broker.events_format, cases[i].format);
        assert_int_equal(c.origin[RP_CFG_BROKER_EVENTS_FORMAT].source, cases[i].source);
        char *text = NULL;
        assert_int_equal(rp_config_format(&c, &text, NULL), RP_OK);
        if (strstr(text, cases[i].shown) == NULL) fprintf(stderr, "%s", text);
        assert_non_null(strstr(text, cases[i].shown));
        free(text);
        load_case_done(&c, &p);
    }

    static char *env_bad[] = {"REAPER_BROKER_EVENTS_FORMAT=protobuf", NULL};
    static const load_case refused[] = {
        {.envp = env_bad, .want = RP_ERR_CONFIG, .count = 1,
         .problems = {{"broker.events_format",
                       "environment REAPER_BROKER_EVENTS_FORMAT: broker.events_format: expects "
                       "one of msgpack|json, got \"protobuf\""}}},
        {.yaml = "broker:\n  events_format: [json]\n", .want = RP_ERR_CONFIG, .count = 1,
         .problems = {{"broker.events_format", ":2:"}}},
        {.yaml = "broker:\n  events_format: Json\n", .want = RP_ERR_CONFIG, .count = 1,
         .problems = {{"broker.events_format", "expects one of msgpack|json, got \"Json\""}}},
    };
    LOAD_CASES(refused);
}

static void check_no_secret(const rp_config_problems *p, const rp_config *c, const char *pw) {
    for (size_t i = 0; i < p->n; i++) {
        assert_null(strstr(p->items[i].message, pw));
        if (p->items[i].key) assert_null(strstr(p->items[i].key, pw));
        if (p->items[i].where) assert_null(strstr(p->items[i].where, pw));
    }
    char *text = NULL;
    assert_int_equal(rp_config_format(c, &text, NULL), RP_OK);
    assert_null(strstr(text, pw));
    free(text);
}

static void test_passwords_in_file_refused_never_shown(void **state) {
    (void)state;
    static char *envp[] = {"REAPER_BROKER_MANAGEMENT_URL=https://u:Env-pw-77@mgmt:15671", NULL};
    static const struct {
        load_case k;
        const char *secret;
    } cases[] = {
        {{.fixture = "secrets.yaml", .want = RP_ERR_CONFIG, .count = 4,
          .problems = {{"broker.url", "secrets.yaml:2:8: broker.url: the URL carries a password"},
                       {"broker.password",
                        "a secret may not be written in the file: put the password in the file "
                        "named by broker.password_file, or in the environment variable "
                        "REAPER_BROKER_PASSWORD"},
                       {"broker.management_url", "the URL carries a password"},
                       {"store.dsn", "the DSN carries a password (password=...)"}}},
         "Hunter2-pw"},
        {{.fixture = "secrets_uri.yaml", .want = RP_ERR_CONFIG, .count = 1,
          .problems = {{"store.dsn", "the DSN URI carries a password (user:password@)"}}},
         "Hunter2-pw"},
        /* From the environment too, in a URL. */
        {{.envp = envp, .want = RP_ERR_CONFIG,
          .problems = {{"broker.management_url",
                        "environment REAPER_BROKER_MANAGEMENT_URL: broker.management_url: the URL "
                        "carries a password"}}},
         "Env-pw-77"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rp_config c;
        rp_config_problems p;
        load_case_run(&cases[i].k, &c, &p);
        check_no_secret(&p, &c, cases[i].secret);
        load_case_done(&c, &p);
    }
}

static void test_many_problems_collected(void **state) {
    (void)state;
    static const load_case many = {
        .fixture = "many_wrong.yaml", .want = RP_ERR_CONFIG, .count = 6,
        .problems = {{"reap.interval_seconds", "many_wrong.yaml:3:21: "},
                     {"reap.lease_grace_seconds", "between 0 and 86400, got 90000"},
                     {"reap.dead_letter_peek_limit", "between 1 and 1000, got 0"},
                     {"reap.owned_queue_pattern", "matches the empty string"},
                     {"reap.dead_letter_queue_pattern",
                      "does not compile: missing closing parenthesis at offset 9"},
                     {"reap.policy_priority", "at least 0, got -1"}}};
    load_cases(&many, 1);

    /* Past the bound, problems are counted but not kept. */
    char *text = malloc(200 * 16 + 1);
    assert_non_null(text);
    text[0] = '\0';
    for (int i = 0; i < 200; i++) sprintf(text + strlen(text), "unknown_%03d: 1\n", i);
    rp_config c;
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(load_text(text, NULL, &c, &p), RP_ERR_CONFIG);
    assert_int_equal(p.n, RP_CONFIG_PROBLEMS_MAX);
    assert_int_equal(rp_config_problems_count(&p), 200);
    free(text);
    load_case_done(&c, &p);
}

/* What --check-config prints loads back to the same configuration (once
 * the password line, which a file may not hold, is dropped). */
static void test_format_round_trips(void **state) {
    (void)state;
    /* Quotes, a tab, NEL and LINE SEPARATOR (line breaks to YAML), a C1
     * control, a BOM: all must be escaped to survive. */
    char *envp[] = {"REAPER_CONTROL_ALLOWED_USERS=o'brien,\"quoted\"",
                    "REAPER_BROKER_TLS_CA_FILE=tab\there",
                    "REAPER_BROKER_PASSWORD_FILE=/p\xc2\x85q\xe2\x80\xa8r\xc2\x80s\xef\xbb\xbft\xc3\xa9",
                    "REAPER_BROKER_PASSWORD=x", NULL};
    rp_config c, d;
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_load(fixture("custom.yaml"), envp, &c, &p), RP_OK);
    char *a = NULL;
    assert_int_equal(rp_config_format(&c, &a, NULL), RP_OK);
    char *pw = strstr(a, "  password: ");
    assert_non_null(pw);
    char *eol = strchr(pw, '\n');
    memmove(pw, eol + 1, strlen(eol + 1) + 1);
    assert_int_equal(rp_config_init(&d), RP_OK);
    rp_status st = rp_config_load_yaml_buffer(a, strlen(a), "formatted.yaml", &d, &p, NULL);
    if (st != RP_OK) print_problems(&p);
    assert_int_equal(st, RP_OK);
    assert_int_equal(rp_config_validate(&d, &p), RP_OK);
    assert_string_equal(d.control.allowed_users.items[0], "o'brien");
    assert_string_equal(d.control.allowed_users.items[1], "\"quoted\"");
    assert_string_equal(d.broker.tls.ca_file, "tab\there");
    assert_string_equal(d.broker.password_file,
                        "/p\xc2\x85q\xe2\x80\xa8r\xc2\x80s\xef\xbb\xbft\xc3\xa9");
    assert_string_equal(d.reap.owned_queue_pattern.text, c.reap.owned_queue_pattern.text);
    /* Everything but the password and the origins is equal. */
    free(c.broker.password);
    c.broker.password = strdup("");
    free(a);
    assert_same_values(&c, &d);
    load_case_done(&c, &p);
    rp_config_cleanup(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contract_example_is_the_defaults),
        cmocka_unit_test(test_custom_file),
        cmocka_unit_test(test_malformed_yaml_has_line_and_column),
        cmocka_unit_test(test_document_shape),
        cmocka_unit_test(test_wrong_types_from_yaml),
        cmocka_unit_test(test_unknown_keys_did_you_mean),
        cmocka_unit_test(test_duplicates_refused),
        cmocka_unit_test(test_aliases_refused_billion_laughs),
        cmocka_unit_test(test_file_missing_or_unreadable),
        cmocka_unit_test(test_environment_wins),
        cmocka_unit_test(test_environment_alone),
        cmocka_unit_test(test_events_format),
        cmocka_unit_test(test_environment_problems),
        cmocka_unit_test(test_environment_service_links),
        cmocka_unit_test(test_passwords_in_file_refused_never_shown),
        cmocka_unit_test(test_many_problems_collected),
        cmocka_unit_test(test_format_round_trips),
    };
    return cmocka_run_group_tests_name("config_load", tests, NULL, NULL);
}
