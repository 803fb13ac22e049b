/* The configuration table of core: defaults, typing, every refusal of
 * CONTRACT section 3, problems collected, secrets kept out of messages, and
 * the effective-config formatter. No YAML here (test_config_load has it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config_problems_assert.h"

#include "rp_config.h"

static const rp_config_origin ENV = {RP_CONFIG_ENV, 0, 0};
static const rp_config_origin AT_FILE = {RP_CONFIG_FILE, 7, 3};

/* The problem about key (NULL: any) whose message contains needle. */

static void set(rp_config *c, rp_config_key_id id, const char *v) {
    rp_config_problems p;
    rp_config_problems_init(&p);
    rp_status st = rp_config_set_scalar(c, id, v, strlen(v), false, ENV, &p);
    if (st != RP_OK) print_problems(&p);
    assert_int_equal(st, RP_OK);
    rp_config_problems_cleanup(&p);
}

/* Sets one value on a fresh default config, validates, and expects exactly
 * one problem, about key, containing needle. */
static void expect_refused_about(rp_config_key_id id, const char *value,
                                 rp_config_key_id about, const char *needle) {
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    set(&c, id, value);
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_validate(&c, &p), RP_ERR_CONFIG);
    assert_problem(&p, rp_config_key_name(about), needle);
    if (rp_config_problems_count(&p) != 1) print_problems(&p);
    assert_int_equal(rp_config_problems_count(&p), 1);
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&c);
}

static void expect_refused(rp_config_key_id id, const char *value, const char *needle) {
    expect_refused_about(id, value, id, needle);
}

static void expect_accepted(rp_config_key_id id, const char *value) {
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    set(&c, id, value);
    rp_config_problems p;
    rp_config_problems_init(&p);
    rp_status st = rp_config_validate(&c, &p);
    if (st != RP_OK) print_problems(&p);
    assert_int_equal(st, RP_OK);
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&c);
}

/* One value of a key: refused by validation with one problem about the
 * key containing needle, or accepted (needle NULL). */
typedef struct key_case {
    rp_config_key_id id;
    const char *value;
    const char *needle;
} key_case;

static void key_cases(const key_case *k, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (k[i].needle) expect_refused(k[i].id, k[i].value, k[i].needle);
        else expect_accepted(k[i].id, k[i].value);
    }
}

#define KEY_CASES(cases) key_cases((cases), sizeof(cases) / sizeof *(cases))

/* Sets a value and expects the set itself refused, naming the key. */
static void expect_set_refused(rp_config_key_id id, const char *value, bool quoted,
                               const char *needle) {
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_set_scalar(&c, id, value, strlen(value), quoted, AT_FILE, &p),
                     RP_ERR_CONFIG);
    assert_int_equal(rp_config_problems_count(&p), 1);
    assert_problem(&p, rp_config_key_name(id), needle);
    /* The location is named: "config:7:3" (no path set) */
    assert_non_null(strstr(p.items[0].message, ":7:3: "));
    assert_int_equal(c.origin[id].source, RP_CONFIG_DEFAULT); /* unchanged */
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&c);
}

static void test_defaults_are_the_contract(void **state) {
    (void)state;
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    assert_string_equal(c.broker.url, "amqp://reaper@127.0.0.1:5672/%2f");
    assert_string_equal(c.broker.password, "");
    assert_string_equal(c.broker.password_file, "/run/secrets/broker");
    assert_string_equal(c.broker.management_url, "http://127.0.0.1:15672");
    assert_string_equal(c.broker.control_queue, "vibey.reap.control");
    assert_string_equal(c.broker.events_exchange, "vibey.reap.events");
    assert_int_equal(c.broker.events_format, RP_EVENTS_FORMAT_MSGPACK);
    assert_string_equal(c.broker.tap_queue, "vibey.reap.tap");
    assert_string_equal(c.broker.tls.ca_file, "");
    assert_string_equal(c.broker.tls.cert_file, "");
    assert_string_equal(c.broker.tls.key_file, "");
    assert_true(c.broker.tls.verify_peer);
    assert_string_equal(c.store.dsn, "host=127.0.0.1 port=5432 dbname=vibey user=reaper");
    assert_string_equal(c.store.schema, "reaper");
    assert_true(c.reap.enabled);
    assert_int_equal(c.reap.interval_seconds, 60);
    assert_int_equal(c.reap.lease_grace_seconds, 0);
    assert_int_equal(c.reap.stale_ready_seconds, 900);
    assert_int_equal(c.reap.consumer_timeout_seconds, 21600);
    assert_int_equal(c.reap.longest_lease_seconds, 7200);
    assert_int_equal(c.reap.delivery_limit, 20);
    assert_string_equal(c.reap.dead_letter_queue_pattern.text, "(\\.dlq|\\.dead)$");
    assert_int_equal(c.reap.dead_letter_min_depth, 1);
    assert_int_equal(c.reap.dead_letter_peek_limit, 100);
    assert_string_equal(c.reap.owned_queue_pattern.text, "^vibey\\.");
    assert_int_equal(c.reap.policy_priority, 0);
    assert_int_equal(c.control.allowed_users.n, 0);
    assert_string_equal(c.http.listen, "127.0.0.1:9464");
    assert_int_equal(c.log.level, RP_LOG_INFO);
    assert_int_equal(c.log.format, RP_LOG_FORMAT_JSON);
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++)
        assert_int_equal(c.origin[i].source, RP_CONFIG_DEFAULT);

    /* The defaults pass validation, and validation compiles the patterns. */
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_validate(&c, &p), RP_OK);
    assert_int_equal(rp_config_problems_count(&p), 0);
    assert_non_null(c.reap.owned_queue_pattern.code);
    assert_int_equal(rp_config_pattern_match(&c.reap.owned_queue_pattern, "vibey.jobs", 10), 1);
    assert_int_equal(rp_config_pattern_match(&c.reap.owned_queue_pattern, "celery", 6), 0);
    assert_int_equal(
        rp_config_pattern_match(&c.reap.dead_letter_queue_pattern, "vibey.jobs.dlq", 14), 1);
    assert_int_equal(
        rp_config_pattern_match(&c.reap.dead_letter_queue_pattern, "vibey.dlq.x", 11), 0);
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&c);
    /* A pattern not compiled does not match. */
    rp_config_pattern none = {NULL, NULL};
    assert_int_equal(rp_config_pattern_match(&none, "x", 1), -1);
}

static void test_table_names(void **state) {
    (void)state;
    char a[96], b[96];
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) {
        const char *k = rp_config_key_name((rp_config_key_id)i);
        assert_int_equal(rp_config_key_lookup(k, strlen(k)), i);
        size_t n = rp_config_env_name((rp_config_key_id)i, a, sizeof a);
        assert_int_equal(n, strlen(a));
        assert_int_equal(rp_config_env_lookup(a, n), i);
        for (int j = 0; j < i; j++) {
            rp_config_env_name((rp_config_key_id)j, b, sizeof b);
            assert_string_not_equal(a, b);
        }
    }
    rp_config_env_name(RP_CFG_BROKER_TLS_CA_FILE, a, sizeof a);
    assert_string_equal(a, "REAPER_BROKER_TLS_CA_FILE");
    rp_config_env_name(RP_CFG_REAP_INTERVAL_SECONDS, a, sizeof a);
    assert_string_equal(a, "REAPER_REAP_INTERVAL_SECONDS");
    /* Cut to the buffer, still terminated, full length returned. */
    assert_int_equal(rp_config_env_name(RP_CFG_REAP_INTERVAL_SECONDS, a, 8), 28);
    assert_string_equal(a, "REAPER_");
    assert_int_equal(rp_config_key_lookup("reap", 4), -1);
    assert_true(rp_config_is_section("broker.tls", 10));
    assert_false(rp_config_is_section("broker.url", 10));
    assert_true(rp_config_key_is_secret(RP_CFG_BROKER_PASSWORD));
    assert_false(rp_config_key_is_secret(RP_CFG_BROKER_URL));
    assert_int_equal(rp_config_key_type(RP_CFG_CONTROL_ALLOWED_USERS), RP_CFG_TYPE_STRLIST);
}

static void test_integer_typing(void **state) {
    (void)state;
    expect_set_refused(RP_CFG_REAP_INTERVAL_SECONDS, "true", false, "got a bool");
    expect_set_refused(RP_CFG_REAP_INTERVAL_SECONDS, "yes", false, "got a bool");
    expect_set_refused(RP_CFG_REAP_INTERVAL_SECONDS, "1.5", false, "got a float");
    expect_set_refused(RP_CFG_REAP_INTERVAL_SECONDS, "1e3", false, "got a float");
    expect_set_refused(RP_CFG_REAP_INTERVAL_SECONDS, ".inf", false, "got a float");
    expect_set_refused(RP_CFG_REAP_INTERVAL_SECONDS, "sixty", false, "got a string");
    expect_set_refused(RP_CFG_REAP_INTERVAL_SECONDS, "60s", false, "got a string");
    expect_set_refused(RP_CFG_REAP_INTERVAL_SECONDS, "0x10", false, "expects an integer");
    expect_set_refused(RP_CFG_REAP_INTERVAL_SECONDS, "", false, "got no value");
    expect_set_refused(RP_CFG_REAP_INTERVAL_SECONDS, "60", true, "quoted string \"60\"");
    expect_set_refused(RP_CFG_REAP_INTERVAL_SECONDS, "99999999999999999999", false,
                       "out of range");
    expect_set_refused(RP_CFG_REAP_ENABLED, "yes", false, "expects true or false");
    expect_set_refused(RP_CFG_REAP_ENABLED, "1", false, "expects true or false");
    expect_set_refused(RP_CFG_REAP_ENABLED, "true", true, "quoted string");
    expect_set_refused(RP_CFG_LOG_LEVEL, "verbose", false, "debug|info|warn|error");
    expect_set_refused(RP_CFG_LOG_LEVEL, "INFO", false, "debug|info|warn|error");
    expect_set_refused(RP_CFG_LOG_FORMAT, "xml", false, "json|text");
    expect_set_refused(RP_CFG_BROKER_EVENTS_FORMAT, "xml", false, "msgpack|json");
    expect_set_refused(RP_CFG_BROKER_EVENTS_FORMAT, "JSON", false, "msgpack|json");
    expect_set_refused(RP_CFG_BROKER_EVENTS_FORMAT, "application/json", false, "msgpack|json");
    expect_set_refused(RP_CFG_BROKER_EVENTS_FORMAT, "", false, "msgpack|json");
    expect_set_refused(RP_CFG_CONTROL_ALLOWED_USERS, "alice", false, "list of strings");
}

static void test_nul_and_accepted_forms(void **state) {
    (void)state;
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_set_scalar(&c, RP_CFG_STORE_SCHEMA, "re\0x", 4, true, ENV, &p),
                     RP_ERR_CONFIG);
    assert_problem(&p, "store.schema", "NUL");
    assert_int_equal(rp_config_set_scalar(&c, RP_CFG_REAP_INTERVAL_SECONDS, "+30", 3, false,
                                          ENV, &p),
                     RP_OK);
    assert_int_equal(c.reap.interval_seconds, 30);
    assert_int_equal(c.origin[RP_CFG_REAP_INTERVAL_SECONDS].source, RP_CONFIG_ENV);
    assert_int_equal(rp_config_set_scalar(&c, RP_CFG_REAP_ENABLED, "False", 5, false, ENV, &p),
                     RP_OK);
    assert_false(c.reap.enabled);
    assert_int_equal(rp_config_set_scalar(&c, RP_CFG_LOG_LEVEL, "warn", 4, true, ENV, &p), RP_OK);
    assert_int_equal(c.log.level, RP_LOG_WARN);
    /* A string key takes a plain number as text; null is empty. */
    assert_int_equal(rp_config_set_scalar(&c, RP_CFG_BROKER_TLS_CA_FILE, "~", 1, false,
                                          AT_FILE, &p),
                     RP_OK);
    assert_string_equal(c.broker.tls.ca_file, "");
    assert_int_equal(rp_config_set_scalar(&c, RP_CFG_BROKER_TLS_CA_FILE, "~", 1, true, AT_FILE,
                                          &p),
                     RP_OK);
    assert_string_equal(c.broker.tls.ca_file, "~");
    /* A list from the environment: comma-separated, trimmed. */
    const char *users = " alice, bob ,carol";
    assert_int_equal(rp_config_set_scalar(&c, RP_CFG_CONTROL_ALLOWED_USERS, users,
                                          strlen(users), false, ENV, &p),
                     RP_OK);
    assert_int_equal(c.control.allowed_users.n, 3);
    assert_string_equal(c.control.allowed_users.items[0], "alice");
    assert_string_equal(c.control.allowed_users.items[1], "bob");
    assert_string_equal(c.control.allowed_users.items[2], "carol");
    /* A list given to a scalar key is refused. */
    const char *items[] = {"a"};
    size_t lens[] = {1};
    assert_int_equal(rp_config_set_list(&c, RP_CFG_HTTP_LISTEN, items, lens, 1, AT_FILE, &p),
                     RP_ERR_CONFIG);
    assert_problem(&p, "http.listen", "expects a string, got a list");
    assert_int_equal(rp_config_problems_count(&p), 2);
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&c);
}

/* broker.vhosts (issue 19 item 1): a list of vhost names, none repeated,
 * none longer than AMQP allows; empty by default (the URL's vhost only). */
static void test_broker_vhosts(void **state) {
    (void)state;
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    assert_int_equal(c.broker.vhosts.n, 0);
    rp_config_cleanup(&c);
    char longname[300];
    memset(longname, 'v', 256);
    longname[256] = '\0';
    const key_case cases[] = {
        {RP_CFG_BROKER_VHOSTS, "tenant-a, tenant-b", NULL},
        {RP_CFG_BROKER_VHOSTS, "/", NULL},
        {RP_CFG_BROKER_VHOSTS, "tenant-a,tenant-b,tenant-a", "item 3 repeats item 1"},
        {RP_CFG_BROKER_VHOSTS, longname, "at most 255"},
    };
    KEY_CASES(cases);
    assert_int_equal(rp_config_init(&c), RP_OK);
    set(&c, RP_CFG_BROKER_VHOSTS, "tenant-a, tenant-b");
    assert_int_equal(c.broker.vhosts.n, 2);
    assert_string_equal(c.broker.vhosts.items[1], "tenant-b");
    rp_config_cleanup(&c);
}

static void test_password_only_from_environment(void **state) {
    (void)state;
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    rp_config_problems p;
    rp_config_problems_init(&p);
    const char *pw = "hunter2-s3cret";
    assert_int_equal(rp_config_set_scalar(&c, RP_CFG_BROKER_PASSWORD, pw, strlen(pw), false,
                                          AT_FILE, &p),
                     RP_ERR_CONFIG);
    assert_problem(&p, "broker.password", "broker.password_file");
    assert_problem(&p, "broker.password", "REAPER_BROKER_PASSWORD");
    assert_null(strstr(p.items[0].message, pw));
    assert_string_equal(c.broker.password, "");
    assert_int_equal(rp_config_set_scalar(&c, RP_CFG_BROKER_PASSWORD, pw, strlen(pw), false,
                                          ENV, &p),
                     RP_OK);
    assert_string_equal(c.broker.password, pw);
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&c);
}

static void test_ranges(void **state) {
    (void)state;
    static const key_case cases[] = {
        {RP_CFG_REAP_POLICY_PRIORITY, "-1", "at least 0, got -1"},
        {RP_CFG_REAP_POLICY_PRIORITY, "0", NULL},
        {RP_CFG_REAP_LEASE_GRACE_SECONDS, "-1", "between 0 and 86400"},
        {RP_CFG_REAP_LEASE_GRACE_SECONDS, "86401", "between 0 and 86400, got 86401"},
        {RP_CFG_REAP_LEASE_GRACE_SECONDS, "86400", NULL},
        {RP_CFG_REAP_DEAD_LETTER_PEEK_LIMIT, "0", "between 1 and 1000"},
        {RP_CFG_REAP_DEAD_LETTER_PEEK_LIMIT, "1001", "between 1 and 1000"},
        {RP_CFG_REAP_DEAD_LETTER_PEEK_LIMIT, "1", NULL},
        {RP_CFG_REAP_DEAD_LETTER_PEEK_LIMIT, "1000", NULL},
        {RP_CFG_REAP_INTERVAL_SECONDS, "0", "at least 1, got 0"},
        {RP_CFG_REAP_STALE_READY_SECONDS, "0", "at least 1"},
        {RP_CFG_REAP_DEAD_LETTER_MIN_DEPTH, "0", "at least 1"},
        {RP_CFG_REAP_DELIVERY_LIMIT, "-5", "at least 1"},
        {RP_CFG_REAP_INTERVAL_SECONDS, "2147483648", "at least 1, got 2147483648"},
        {RP_CFG_REAP_LONGEST_LEASE_SECONDS, "-1", "at least 0"},
    };
    KEY_CASES(cases);
    /* consumer_timeout_seconds 0 is under 1 (and under the longest lease:
     * only the first is said, the second would be noise). */
    expect_refused(RP_CFG_REAP_CONSUMER_TIMEOUT_SECONDS, "0", "at least 1");
}

static void test_consumer_timeout_under_longest_lease(void **state) {
    (void)state;
    expect_refused(RP_CFG_REAP_CONSUMER_TIMEOUT_SECONDS, "7199",
                   "under reap.longest_lease_seconds (7200");
    expect_accepted(RP_CFG_REAP_CONSUMER_TIMEOUT_SECONDS, "7200");
    /* Raising the lease over the default timeout names the timeout. */
    expect_refused_about(RP_CFG_REAP_LONGEST_LEASE_SECONDS, "30000",
                         RP_CFG_REAP_CONSUMER_TIMEOUT_SECONDS,
                         "21600 (the default) is under reap.longest_lease_seconds (30000, "
                         "environment REAPER_REAP_LONGEST_LEASE_SECONDS)");
}

static void test_pattern_refusals(void **state) {
    (void)state;
    const rp_config_key_id dl = RP_CFG_REAP_DEAD_LETTER_QUEUE_PATTERN;
    const rp_config_key_id own = RP_CFG_REAP_OWNED_QUEUE_PATTERN;
    const key_case cases[] = {
        {dl, "", "must not be empty"},
        {own, "", "must not be empty"},
        {own, ".*", "matches the empty string"},
        {own, "^", "matches the empty string"},
        {dl, "x?", "matches the empty string"},
        {own, ".", "matches every name"},
        {dl, "(?s).", "matches every name"},
        {own, "(", "does not compile: missing closing parenthesis at offset 1"},
        {dl, "a{2,1}", "does not compile"},
        {own, "cel", "matches \"celery\""},
        {own, "^amq\\.gen", "matches \"amq.gen-x\""},
        {own, "reply-to$", "matches \"amq.rabbitmq.reply-to\""},
        {own, "^orders\\.", NULL},
        /* Only the owned pattern is held to foreign names. */
        {dl, "^celery$", NULL},
    };
    KEY_CASES(cases);

    /* Two foreign names: two problems. */
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    set(&c, own, "^(celery|amq\\.gen)");
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_validate(&c, &p), RP_ERR_CONFIG);
    assert_int_equal(rp_config_problems_count(&p), 2);
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&c);
}

static void test_other_key_rules(void **state) {
    (void)state;
    static const key_case cases[] = {
        {RP_CFG_BROKER_URL, "http://127.0.0.1:5672/", "amqp:// or amqps://"},
        {RP_CFG_BROKER_URL, "", "must not be empty"},
        {RP_CFG_BROKER_URL, "amqp:///vhost", "names no host"},
        {RP_CFG_BROKER_URL, "amqps://reaper@broker.example:5671/prod", NULL},
        /* Several broker hosts (a cluster): a comma-separated host list. */
        {RP_CFG_BROKER_URL, "amqp://reaper@rmq-0:5672,rmq-1:5672,rmq-2:5672/prod", NULL},
        {RP_CFG_BROKER_URL, "amqp://reaper@rmq-0:5672,,rmq-2:5672/prod", "empty host"},
        {RP_CFG_BROKER_URL, "amqp://reaper@rmq-0:5672,/prod", "empty host"},
        {RP_CFG_BROKER_MANAGEMENT_URL, "http://rmq-0:15672,rmq-1:15672,rmq-2:15672", NULL},
        {RP_CFG_BROKER_MANAGEMENT_URL, "http://rmq-0:15672,", "empty host"},
        {RP_CFG_BROKER_MANAGEMENT_URL, "amqp://x", "http:// or https://"},
        {RP_CFG_BROKER_CONTROL_QUEUE, "", "must not be empty"},
        {RP_CFG_BROKER_TAP_QUEUE, "amq.tap", "reserves"},
        {RP_CFG_STORE_SCHEMA, "Reaper; drop", "plain SQL identifier"},
        {RP_CFG_STORE_SCHEMA, "", "plain SQL identifier"},
        {RP_CFG_STORE_SCHEMA, "reaper_2", NULL},
        {RP_CFG_STORE_DSN, "host=x dbname", "expected keyword=value"},
        {RP_CFG_STORE_DSN, "", "must not be empty"},
        {RP_CFG_STORE_DSN, "postgresql://reaper@db:5432/vibey?sslmode=require", NULL},
        {RP_CFG_STORE_DSN, "host = db application_name='a b\\'c' passfile=/p", NULL},
        {RP_CFG_HTTP_LISTEN, "9464", "not host:port"},
        {RP_CFG_HTTP_LISTEN, "127.0.0.1:99999", "not host:port"},
        {RP_CFG_HTTP_LISTEN, "::1:9464", "not host:port"},
        {RP_CFG_HTTP_LISTEN, "[::1]:9464", NULL},
        {RP_CFG_HTTP_LISTEN, ":9464", NULL},
        {RP_CFG_HTTP_LISTEN, "127.0.0.1:0", NULL},
        {RP_CFG_HTTP_LISTEN, "127.0.0.1:", "not host:port"},
        {RP_CFG_HTTP_LISTEN, "127.0.0.1:-1", "not host:port"},
        {RP_CFG_CONTROL_ALLOWED_USERS, "alice,,bob", "item 2 is empty"},
        {RP_CFG_BROKER_TLS_CERT_FILE, "/etc/c.pem", "broker.tls.key_file is not"},
        {RP_CFG_BROKER_TLS_KEY_FILE, "/etc/k.pem", "broker.tls.cert_file is not"},
    };
    KEY_CASES(cases);
}

/* Each value carries the password; the set is refused, the password is
 * never stored, and it is in no message and not in the formatted output. */
static void expect_secret_refused(rp_config_key_id id, const char *value, const char *pw,
                                  const char *needle) {
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_set_scalar(&c, id, value, strlen(value), true, AT_FILE, &p),
                     RP_ERR_CONFIG);
    assert_int_equal(rp_config_validate(&c, &p), RP_OK); /* nothing else is wrong */
    assert_int_equal(rp_config_problems_count(&p), 1);
    assert_problem(&p, rp_config_key_name(id), needle);
    for (size_t i = 0; i < p.n; i++) assert_null(strstr(p.items[i].message, pw));
    char *text = NULL;
    assert_int_equal(rp_config_format(&c, &text, NULL), RP_OK);
    assert_null(strstr(text, pw));
    free(text);
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&c);
}

static void test_passwords_in_urls_and_dsns(void **state) {
    (void)state;
    expect_secret_refused(RP_CFG_BROKER_URL, "amqp://reaper:Zq9pw@127.0.0.1:5672/%2f", "Zq9pw",
                          "password_file");
    expect_secret_refused(RP_CFG_BROKER_URL, "amqps://reaper:Zq9pw@host", "Zq9pw",
                          "carries a password");
    expect_secret_refused(RP_CFG_BROKER_URL, "reaper:Zq9pw@host", "Zq9pw", "carries a password");
    expect_secret_refused(RP_CFG_BROKER_MANAGEMENT_URL, "http://guest:Zq9pw@127.0.0.1:15672",
                          "Zq9pw", "carries a password");
    expect_secret_refused(RP_CFG_STORE_DSN, "host=db user=reaper password=Zq9pw dbname=v",
                          "Zq9pw", "PGPASSWORD");
    expect_secret_refused(RP_CFG_STORE_DSN, "host=db password = 'Zq 9pw'", "Zq 9pw",
                          "carries a password");
    expect_secret_refused(RP_CFG_STORE_DSN, "host=db sslpassword=Zq9pw", "Zq9pw",
                          "carries a password");
    expect_secret_refused(RP_CFG_STORE_DSN, "host=db junk PASSWORD=Zq9pw", "Zq9pw",
                          "carries a password");
    expect_secret_refused(RP_CFG_STORE_DSN, "postgresql://reaper:Zq9pw@db:5432/vibey", "Zq9pw",
                          "carries a password");
    expect_secret_refused(RP_CFG_STORE_DSN, "postgres://reaper@db/vibey?password=Zq9pw",
                          "Zq9pw", "password= in the query");
    /* A user without a password is fine; so is a value that mentions the
     * word elsewhere. */
    static const key_case cases[] = {
        {RP_CFG_BROKER_URL, "amqp://reaper@127.0.0.1:5672/%2f", NULL},
        {RP_CFG_STORE_DSN, "host=db application_name=password=no", NULL},
        {RP_CFG_BROKER_PASSWORD_FILE, "/run/secrets/password:x@y", NULL},
    };
    KEY_CASES(cases);

    /* A value poked into the struct directly is still refused by validate,
     * without quoting it. */
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    free(c.store.dsn);
    c.store.dsn = strdup("host=db password=Zq9pw");
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_validate(&c, &p), RP_ERR_CONFIG);
    assert_int_equal(rp_config_problems_count(&p), 1);
    assert_null(strstr(p.items[0].message, "Zq9pw"));
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&c);
}

static void test_every_problem_is_collected(void **state) {
    (void)state;
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    set(&c, RP_CFG_REAP_INTERVAL_SECONDS, "0");
    set(&c, RP_CFG_REAP_POLICY_PRIORITY, "-3");
    set(&c, RP_CFG_REAP_DEAD_LETTER_PEEK_LIMIT, "5000");
    set(&c, RP_CFG_REAP_OWNED_QUEUE_PATTERN, ".*");
    set(&c, RP_CFG_REAP_DEAD_LETTER_QUEUE_PATTERN, "[");
    set(&c, RP_CFG_REAP_CONSUMER_TIMEOUT_SECONDS, "100");
    set(&c, RP_CFG_HTTP_LISTEN, "nowhere");
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_validate(&c, &p), RP_ERR_CONFIG);
    assert_int_equal(rp_config_problems_count(&p), 7);
    assert_problem(&p, "reap.interval_seconds", "environment REAPER_REAP_INTERVAL_SECONDS: ");
    assert_problem(&p, "reap.policy_priority", NULL);
    assert_problem(&p, "reap.dead_letter_peek_limit", NULL);
    assert_problem(&p, "reap.owned_queue_pattern", NULL);
    assert_problem(&p, "reap.dead_letter_queue_pattern", NULL);
    assert_problem(&p, "reap.consumer_timeout_seconds", NULL);
    assert_problem(&p, "http.listen", NULL);
    for (size_t i = 0; i < p.n; i++) {
        assert_non_null(p.items[i].key);
        assert_non_null(strstr(p.items[i].message, p.items[i].key));
        assert_non_null(p.items[i].where);
        assert_int_equal(strncmp(p.items[i].where, "environment REAPER_", 19), 0);
    }
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&c);
}

static void test_problem_list_is_bounded(void **state) {
    (void)state;
    rp_config_problems p;
    rp_config_problems_init(&p);
    for (int i = 0; i < RP_CONFIG_PROBLEMS_MAX + 10; i++)
        rp_config_problems_add(&p, "k", NULL, "problem %d", i);
    assert_int_equal(p.n, RP_CONFIG_PROBLEMS_MAX);
    assert_int_equal(p.omitted, 10);
    assert_int_equal(rp_config_problems_count(&p), RP_CONFIG_PROBLEMS_MAX + 10);
    assert_string_equal(p.items[0].message, "k: problem 0");
    assert_null(p.items[0].where);
    rp_config_problems_cleanup(&p);
    assert_int_equal(rp_config_problems_count(&p), 0);
}

static const char *unknown_message(const char *name, bool env) {
    static char msg[512];
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    assert_int_equal(rp_config_set_path(&c, "reaper.yaml"), RP_OK);
    rp_config_problems p;
    rp_config_problems_init(&p);
    rp_config_refuse_unknown(&c, name, strlen(name), env, env ? ENV : AT_FILE, &p);
    assert_int_equal(p.n, 1);
    snprintf(msg, sizeof msg, "%s", p.items[0].message);
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&c);
    return msg;
}

static void test_did_you_mean(void **state) {
    (void)state;
    assert_string_equal(unknown_message("reap.intervall_seconds", false),
                        "reaper.yaml:7:3: reap.intervall_seconds: unknown key; did you mean "
                        "reap.interval_seconds?");
    assert_non_null(strstr(unknown_message("reap.lease_garce_seconds", false),
                           "did you mean reap.lease_grace_seconds?"));
    assert_non_null(strstr(unknown_message("brokr", false), "did you mean broker?"));
    assert_non_null(strstr(unknown_message("broker.tsl", false), "did you mean broker.tls?"));
    /* The right key in the wrong section. */
    assert_non_null(strstr(unknown_message("broker.level", false), "did you mean log.level?"));
    assert_string_equal(unknown_message("colour", false),
                        "reaper.yaml:7:3: colour: unknown key");
    assert_non_null(strstr(unknown_message("reap.interval_seconds", false),
                           "may not contain a dot: write it nested (reap: {interval_seconds"));
    assert_string_equal(unknown_message("REAPER_REAP_INTERVAL_SECOND", true),
                        "environment: REAPER_REAP_INTERVAL_SECOND: unknown variable; did you "
                        "mean REAPER_REAP_INTERVAL_SECONDS? (no such configuration key)");
    assert_non_null(strstr(unknown_message("REAPER_BROKER_PASWORD", true),
                           "did you mean REAPER_BROKER_PASSWORD?"));
    assert_null(strstr(unknown_message("REAPER_NOTHING_LIKE_IT", true), "did you mean"));
    /* A long or odd name is cut and escaped, not echoed whole. */
    char longname[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_true(strlen(unknown_message(longname, false)) < 150);
    assert_non_null(strstr(unknown_message("a\nb", false), "a\\x0ab"));
}

static void test_format(void **state) {
    (void)state;
    rp_config c;
    assert_int_equal(rp_config_init(&c), RP_OK);
    assert_int_equal(rp_config_set_path(&c, "/etc/reaper.yaml"), RP_OK);
    set(&c, RP_CFG_BROKER_PASSWORD, "Zq9-secret");
    set(&c, RP_CFG_CONTROL_ALLOWED_USERS, "alice,o'brien");
    rp_config_problems p;
    rp_config_problems_init(&p);
    rp_config_origin at = {RP_CONFIG_FILE, 12, 5};
    assert_int_equal(rp_config_set_scalar(&c, RP_CFG_REAP_INTERVAL_SECONDS, "30", 2, false, at,
                                          &p),
                     RP_OK);
    assert_int_equal(rp_config_set_scalar(&c, RP_CFG_BROKER_TLS_CA_FILE, "a\tb", 3, true, at,
                                          &p),
                     RP_OK);
    rp_config_problems_cleanup(&p);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(rp_config_format(&c, &text, &len), RP_OK);
    assert_int_equal(len, strlen(text));
    assert_null(strstr(text, "Zq9-secret"));
    assert_non_null(strstr(text, "\n  password: '********'  # env REAPER_BROKER_PASSWORD\n"));
    assert_non_null(strstr(text, "\n  interval_seconds: 30  # file /etc/reaper.yaml:12:5\n"));
    assert_non_null(strstr(text, "\n  url: 'amqp://reaper@127.0.0.1:5672/%2f'  # default\n"));
    assert_non_null(strstr(text, "\nbroker:\n  url:"));
    assert_non_null(strstr(text, "\n  tls:\n    ca_file: \"a\\x09b\"  # file"));
    assert_non_null(strstr(text, "\n    verify_peer: true  # default\nstore:\n"));
    assert_non_null(strstr(text, "\n  dead_letter_queue_pattern: '(\\.dlq|\\.dead)$'  # default\n"));
    assert_non_null(strstr(text, "\n  allowed_users: ['alice', 'o''brien']  # env"));
    assert_non_null(strstr(text, "\nlog:\n  level: info  # default\n  format: json  # default\n"));
    /* Every key is there. */
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) {
        const char *k = rp_config_key_name((rp_config_key_id)i);
        const char *last = strrchr(k, '.') + 1;
        char line[96];
        snprintf(line, sizeof line, " %s: ", last);
        assert_non_null(strstr(text, line));
    }
    free(text);

    /* An unset password is shown empty, not masked. */
    rp_config d;
    assert_int_equal(rp_config_init(&d), RP_OK);
    assert_int_equal(rp_config_format(&d, &text, NULL), RP_OK);
    assert_non_null(strstr(text, "\n  password: ''  # default\n"));
    free(text);
    rp_config_cleanup(&d);
    rp_config_cleanup(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_the_contract),
        cmocka_unit_test(test_table_names),
        cmocka_unit_test(test_integer_typing),
        cmocka_unit_test(test_nul_and_accepted_forms),
        cmocka_unit_test(test_password_only_from_environment),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_consumer_timeout_under_longest_lease),
        cmocka_unit_test(test_pattern_refusals),
        cmocka_unit_test(test_other_key_rules),
        cmocka_unit_test(test_passwords_in_urls_and_dsns),
        cmocka_unit_test(test_every_problem_is_collected),
        cmocka_unit_test(test_broker_vhosts),
        cmocka_unit_test(test_problem_list_is_bounded),
        cmocka_unit_test(test_did_you_mean),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
