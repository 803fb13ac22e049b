/*
 * rp_config.h - the configuration of reaper (CONTRACT section 3).
 *
 * One static table (core/rp_config.c) lists every key once: its dotted name,
 * type, default, place in struct rp_config, range or choices, validator and
 * flags. The table drives everything here: the defaults (rp_config_init), the
 * typed setting of a key from the text of a YAML scalar or an environment
 * variable (rp_config_set_scalar, rp_config_set_list), the names in the
 * environment (REAPER_<SECTION>_<KEY>), "did you mean" for an unknown key,
 * the whole-config validation (rp_config_validate) and the effective-config
 * listing of --check-config (rp_config_format). Reading a file and parsing
 * YAML live in adapters/config (rp_config_load.h); nothing here does I/O.
 *
 * Typing rules (the same for a file and for the environment; an environment
 * value is read as an unquoted YAML scalar would be):
 *   - int: a plain decimal integer ("60", "-1"). Refused, naming the key:
 *     a bool ("true"), a float ("1.5", "1e3"), any other text, and a QUOTED
 *     scalar ("60" in quotes): YAML says a quoted scalar is a string, and a
 *     number that is a string is a typo an operator wants to hear about.
 *   - bool: plain true or false (also True/TRUE/False/FALSE, YAML 1.2).
 *     yes/no/on/off and quoted "true" are refused.
 *   - enum: one of the listed lower-case names, quoted or not.
 *   - string and pattern: the scalar's text as written, quoted or not; an
 *     empty or null scalar (~, null) is the empty string.
 *   - list of strings: a YAML sequence of scalars; an empty or null value is
 *     the empty list; from the environment, comma-separated items (spaces
 *     around each item are trimmed).
 *
 * Secrets: broker.password may come only from the environment
 * (REAPER_BROKER_PASSWORD); in a file it is refused. A value that carries a
 * password (user:pw@ in broker.url / broker.management_url / a
 * postgresql:// store.dsn, password= or sslpassword= in store.dsn) is refused
 * when it is set and is never stored, so it cannot reach a message or the
 * formatted output. Messages never quote the value of a URL, a DSN, a secret
 * or an unknown key.
 *
 * Ownership: an rp_config owns all it holds (strings, lists, compiled
 * patterns, the file path). rp_config_init() fills the defaults;
 * rp_config_cleanup() frees everything (the password is wiped first) and may
 * be called on any config that rp_config_init() touched, even when it
 * failed. An rp_config_problems owns its messages; rp_config_problems_init()
 * and rp_config_problems_cleanup(). Nothing here keeps a pointer to a caller's
 * argument after the call.
 */
#ifndef RP_CONFIG_H
#define RP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pcre2.h>

#include "rp_common.h"
#include "rp_status.h"

/* Every key, in table order. The numbering is internal: use the names. */
typedef enum rp_config_key_id {
    RP_CFG_BROKER_URL = 0,
    RP_CFG_BROKER_PASSWORD,
    RP_CFG_BROKER_PASSWORD_FILE,
    RP_CFG_BROKER_MANAGEMENT_URL,
    RP_CFG_BROKER_CONTROL_QUEUE,
    RP_CFG_BROKER_EVENTS_EXCHANGE,
    RP_CFG_BROKER_EVENTS_FORMAT,
    RP_CFG_BROKER_TAP_QUEUE,
    RP_CFG_BROKER_TAP_HEADER_CAP_BYTES,
    RP_CFG_BROKER_VHOSTS,
    RP_CFG_BROKER_TLS_CA_FILE,
    RP_CFG_BROKER_TLS_CERT_FILE,
    RP_CFG_BROKER_TLS_KEY_FILE,
    RP_CFG_BROKER_TLS_VERIFY_PEER,
    RP_CFG_STORE_DSN,
    RP_CFG_STORE_SCHEMA,
    RP_CFG_STORE_STATEMENT_TIMEOUT_MS,
    RP_CFG_STORE_LOCK_TIMEOUT_MS,
    RP_CFG_STORE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    RP_CFG_STORE_TCP_USER_TIMEOUT_MS,
    RP_CFG_STORE_LEASE_BATCH_SIZE,
    RP_CFG_REAP_ENABLED,
    RP_CFG_REAP_INTERVAL_SECONDS,
    RP_CFG_REAP_LEASE_GRACE_SECONDS,
    RP_CFG_REAP_STALE_READY_SECONDS,
    RP_CFG_REAP_CONSUMER_TIMEOUT_SECONDS,
    RP_CFG_REAP_LONGEST_LEASE_SECONDS,
    RP_CFG_REAP_DELIVERY_LIMIT,
    RP_CFG_REAP_DEAD_LETTER_QUEUE_PATTERN,
    RP_CFG_REAP_DEAD_LETTER_MIN_DEPTH,
    RP_CFG_REAP_DEAD_LETTER_PEEK_LIMIT,
    RP_CFG_REAP_OWNED_QUEUE_PATTERN,
    RP_CFG_REAP_POLICY_PRIORITY,
    RP_CFG_REAP_HELD_CEILING_SECONDS,
    RP_CFG_REAP_HELD_EVICT_FACTOR,
    RP_CFG_REAP_WAITING_DEPTH_THRESHOLD,
    RP_CFG_REAP_QUEUE_DEPTH_THRESHOLD,
    RP_CFG_REAP_WEDGED_SECONDS,
    RP_CFG_REAP_WEDGED_CHECKS,
    RP_CFG_REAP_WEDGE_RESTART,
    RP_CFG_REAP_WEDGE_RESTART_MAX,
    RP_CFG_REAP_WEDGE_RESTART_WINDOW_SECONDS,
    RP_CFG_REAP_DIVERGENCE_WINDOW_SECONDS,
    RP_CFG_REAP_DIVERGENCE_RATIO,
    RP_CFG_REAP_DIVERGENCE_MIN_WAITING,
    RP_CFG_CONTROL_ALLOWED_USERS,
    RP_CFG_CONTROL_REAP_RATE_SECONDS,
    RP_CFG_CONTROL_REPLAY_CLAIM_SECONDS,
    RP_CFG_CONTROL_REPLY_QUEUE_PATTERN,
    RP_CFG_HTTP_LISTEN,
    RP_CFG_HTTP_CONSOLE,
    RP_CFG_HTTP_CONSOLE_READ_ANONYMOUS,
    RP_CFG_LOG_LEVEL,
    RP_CFG_LOG_FORMAT,
    RP_CFG_KEY_COUNT_
} rp_config_key_id;

typedef enum rp_config_type {
    RP_CFG_TYPE_STRING = 0,
    RP_CFG_TYPE_INT,     /* int64_t field */
    RP_CFG_TYPE_BOOL,    /* bool field */
    RP_CFG_TYPE_ENUM,    /* int-sized enum field; the value is the choice's index */
    RP_CFG_TYPE_STRLIST, /* rp_config_strlist field */
    RP_CFG_TYPE_PATTERN  /* rp_config_pattern field */
} rp_config_type;

typedef enum rp_log_level {
    RP_LOG_DEBUG = 0,
    RP_LOG_INFO,
    RP_LOG_WARN,
    RP_LOG_ERROR
} rp_log_level;

/* broker.events_format: the body of the events feed's messages (SCHEMA.md
 * section 7). */
typedef enum rp_events_format {
    RP_EVENTS_FORMAT_MSGPACK = 0,
    RP_EVENTS_FORMAT_JSON
} rp_events_format;

typedef enum rp_log_format {
    RP_LOG_FORMAT_JSON = 0,
    RP_LOG_FORMAT_TEXT
} rp_log_format;

/* Where a key's effective value came from. */
typedef enum rp_config_source {
    RP_CONFIG_DEFAULT = 0,
    RP_CONFIG_FILE, /* line and column (1-based) in rp_config.path */
    RP_CONFIG_ENV   /* the key's variable, rp_config_env_name() */
} rp_config_source;

typedef struct rp_config_origin {
    rp_config_source source;
    unsigned line, column; /* FILE only, 1-based; 0 when unknown */
} rp_config_origin;

/* A list of heap strings owned by the config. */
typedef struct rp_config_strlist {
    char **items;
    size_t n;
} rp_config_strlist;

/* A PCRE2 pattern: its text and, after a successful rp_config_validate(),
 * its compiled code (NULL before, or when it did not compile). Match with
 * rp_config_pattern_match(). */
typedef struct rp_config_pattern {
    char *text;
    pcre2_code *code;
} rp_config_pattern;

typedef struct rp_config_tls {
    char *ca_file;   /* "" when unset */
    char *cert_file; /* "" when unset */
    char *key_file;  /* "" when unset */
    bool verify_peer;
} rp_config_tls;

typedef struct rp_config {
    struct {
        char *url;            /* amqp:// or amqps://, never with a password */
        char *password;       /* secret, env only; "" when unset */
        char *password_file;  /* "" when unset */
        char *management_url; /* http:// or https://, never with a password */
        char *control_queue;
        char *events_exchange;
        rp_events_format events_format; /* restart-only */
        char *tap_queue;
        /* A dead letter whose header table weighs more than this, decoded,
         * is parked without it (only its death headers) and not
         * replayable. Restart-only. */
        int64_t tap_header_cap_bytes;
        /* The vhosts watched besides broker.url's (which is always
         * watched: the control queue and the events are there): each gets
         * a tap of its own (its own connection and tap queue). Empty: the
         * URL's vhost only. Restart-only. */
        rp_config_strlist vhosts;
        rp_config_tls tls;
    } broker;
    struct {
        char *dsn;    /* libpq keyword=value or postgresql:// URI, no password */
        char *schema; /* a plain lower-case SQL identifier */
        /* Set on every session reaperd opens (0: none). */
        int64_t statement_timeout_ms;
        int64_t lock_timeout_ms;
        int64_t idle_in_transaction_timeout_ms;
        int64_t tcp_user_timeout_ms; /* libpq's tcp_user_timeout */
        /* Expired leases moved per transaction (rp_pass.h lease_batch_size). */
        int64_t lease_batch_size;
    } store;
    struct {
        bool enabled;
        int64_t interval_seconds;
        int64_t lease_grace_seconds;
        int64_t stale_ready_seconds;
        int64_t consumer_timeout_seconds;
        int64_t longest_lease_seconds;
        int64_t delivery_limit;
        rp_config_pattern dead_letter_queue_pattern;
        int64_t dead_letter_min_depth;
        int64_t dead_letter_peek_limit;
        rp_config_pattern owned_queue_pattern;
        int64_t policy_priority;
        /* Issue 18: STALLED and WAITING_DEPTH (rp_judge.h). */
        int64_t held_ceiling_seconds;
        int64_t held_evict_factor;
        int64_t waiting_depth_threshold;
        int64_t queue_depth_threshold;
        /* Issue 18 item 4: WEDGED and the restart-loop breaker (rp_wedged.h). */
        int64_t wedged_seconds;
        int64_t wedged_checks;
        bool wedge_restart;
        int64_t wedge_restart_max;
        int64_t wedge_restart_window_seconds;
        /* Issue 18 item 3: DIVERGENT (rp_judge_divergent.h). */
        int64_t divergence_window_seconds;
        int64_t divergence_ratio;
        int64_t divergence_min_waiting;
    } reap;
    struct {
        /* Empty: reaperd's own broker user (the user of broker.url) only;
         * "*" among them: any authenticated user. */
        rp_config_strlist allowed_users;
        int64_t reap_rate_seconds; /* one reap request per this per user; 0: no limit */
        /* A replay's claim on a gate older than this is stale (rp_gate.h). */
        int64_t replay_claim_seconds;
        /* Queues replies may go to besides direct reply-to; empty (no
         * code): none. */
        rp_config_pattern reply_queue_pattern;
    } control;
    struct {
        char *listen; /* host:port, [v6]:port or :port */
        /* The browser console under /console (adapters/http/rp_console.h);
         * read on every request, so a reload turns it on or off. */
        bool console;
        /* Whether the console's reads need no sign-in (answers always do). */
        bool console_read_anonymous;
    } http;
    struct {
        rp_log_level level;
        rp_log_format format;
    } log;

    char *path; /* the file the FILE origins refer to, or NULL */
    rp_config_origin origin[RP_CFG_KEY_COUNT_];
} rp_config;

/* ---- the store library's DSN parser ---------------------------------- */

/* Inspects a store.dsn value with the store library's own parser (core has
 * no libpq; reaperd installs rp_pg_dsn_leak from adapters/postgres), so that
 * every spelling of a password that library would decode is refused, not
 * only the ones core's scan knows. Returns NULL when the value carries no
 * password and parses, else a message that does not quote the value (the
 * value is then refused and never stored, like any other leak). */
typedef const char *(*rp_config_dsn_inspector)(const char *dsn);

/* Installs inspect (NULL: none, core's scan alone decides) for every later
 * setting of store.dsn in this process. Call it once at start-up, before
 * any configuration is loaded and before threads start. */
void rp_config_set_dsn_inspector(rp_config_dsn_inspector inspect);

/* ---- problems ---------------------------------------------------------- */

/* At most this many problems are kept; later ones are only counted. */
#define RP_CONFIG_PROBLEMS_MAX 64

typedef struct rp_config_problem {
    char *key;     /* the dotted key (or the unknown key or variable as
                      written); NULL for a problem with the file as a whole */
    char *where;   /* "reaper.yaml:12:3", "environment REAPER_X", a path, or
                      NULL (a default value) */
    char *message; /* one printable line: "<where>: <key>: <text>" */
} rp_config_problem;

typedef struct rp_config_problems {
    rp_config_problem *items;
    size_t n, cap;
    size_t omitted; /* problems past RP_CONFIG_PROBLEMS_MAX, not stored */
    bool nomem;     /* an allocation failed: some problem may be missing */
} rp_config_problems;

void rp_config_problems_init(rp_config_problems *p);
void rp_config_problems_cleanup(rp_config_problems *p);
/* Total number of problems seen, stored or omitted. */
size_t rp_config_problems_count(const rp_config_problems *p);
/* Moves every problem of *from to the end of *to (the bound and the
 * omitted count carry over) and leaves *from empty. */
void rp_config_problems_move(rp_config_problems *to, rp_config_problems *from);
/* Adds a problem. key and where may be NULL; both are copied. Never fails:
 * when memory runs out it sets p->nomem and drops the problem. */
void rp_config_problems_add(rp_config_problems *p, const char *key, const char *where,
                            const char *fmt, ...) RP_PRINTF(4, 5);

/* ---- the config --------------------------------------------------------- */

/* Fills *cfg with the defaults of CONTRACT section 3 (origin DEFAULT).
 * Returns RP_OK or RP_ERR_NOMEM; either way rp_config_cleanup() is safe. */
rp_status rp_config_init(rp_config *cfg) RP_MUSTCHECK;
/* Frees everything *cfg holds, wipes the password, and zeroes *cfg. */
void rp_config_cleanup(rp_config *cfg);

/* Records the file that FILE origins refer to (copied). RP_ERR_NOMEM. */
rp_status rp_config_set_path(rp_config *cfg, const char *path) RP_MUSTCHECK;

/* The table, read-only. */
const char *rp_config_key_name(rp_config_key_id id);    /* "reap.interval_seconds" */
rp_config_type rp_config_key_type(rp_config_key_id id);
bool rp_config_key_is_secret(rp_config_key_id id);
/* Writes the key's environment name ("REAPER_REAP_INTERVAL_SECONDS") into
 * buf (NUL-terminated, cut to cap). Returns the full length. */
size_t rp_config_env_name(rp_config_key_id id, char *buf, size_t cap);
/* The id of a dotted key or of an environment name; -1 when unknown. */
int rp_config_key_lookup(const char *key, size_t len);
int rp_config_env_lookup(const char *name, size_t len);
/* Whether NAME=value (name of nlen bytes, value of vlen) is a variable a
 * kubelet injects for a Service of the namespace (a "service link") rather
 * than a configuration key gone wrong. For a Service "reaper-metrics" with
 * port 9464/TCP the kubelet sets REAPER_METRICS_SERVICE_HOST (an IP),
 * REAPER_METRICS_SERVICE_PORT and REAPER_METRICS_SERVICE_PORT_<PORTNAME> (a
 * port number), REAPER_METRICS_PORT and REAPER_METRICS_PORT_9464_TCP
 * ("tcp://<ip>:9464"), REAPER_METRICS_PORT_9464_TCP_PROTO ("tcp"), _PORT
 * ("9464") and _ADDR (an IP). Both the name's shape and the value's must
 * match, so a misspelt key (REAPER_HTTP_PORT=9100) is not taken for one.
 * Call it only for a name that is not a configuration key. */
bool rp_config_env_is_service_link(const char *name, size_t nlen, const char *value,
                                   size_t vlen);
/* Whether a dotted name is a section (a mapping): "broker", "broker.tls"... */
bool rp_config_is_section(const char *key, size_t len);

/* Sets one key from the text of a scalar (not NUL-terminated; a NUL inside
 * is refused). quoted: the scalar was quoted or a block scalar in YAML (an
 * environment value is never quoted). The value is type-checked; a refused
 * value is reported in *p (naming the key and origin), leaves the key
 * unchanged and returns RP_ERR_CONFIG. A file origin for an env-only key is
 * refused. Returns RP_OK, RP_ERR_CONFIG or RP_ERR_NOMEM. */
rp_status rp_config_set_scalar(rp_config *cfg, rp_config_key_id id, const char *text,
                               size_t len, bool quoted, rp_config_origin origin,
                               rp_config_problems *p) RP_MUSTCHECK;
/* Sets a list key from n items (texts and lengths, copied). A non-list key
 * refuses a list. Returns as rp_config_set_scalar(). */
rp_status rp_config_set_list(rp_config *cfg, rp_config_key_id id,
                             const char *const *items, const size_t *lens, size_t n,
                             rp_config_origin origin,
                             rp_config_problems *p) RP_MUSTCHECK;
/* Reports that key id was given a value of the wrong shape; got is what it
 * was, e.g. "a mapping", "a list", "an alias". */
void rp_config_refuse_shape(const rp_config *cfg, rp_config_key_id id, const char *got,
                            rp_config_origin origin, rp_config_problems *p);
/* Reports an unknown dotted key (or environment variable, env true) with
 * "did you mean" when a known key is close. The name is not echoed in full
 * when long, and its value never is. */
void rp_config_refuse_unknown(const rp_config *cfg, const char *name, size_t len, bool env,
                              rp_config_origin origin, rp_config_problems *p);
/* Formats the location of origin ("reaper.yaml:3:5", "environment
 * REAPER_X", "" for a default) into buf. Returns buf. */
const char *rp_config_where(const rp_config *cfg, rp_config_key_id id,
                            rp_config_origin origin, char *buf, size_t cap);

/* Validates the whole config: every key's own rule and the rules between
 * keys. Compiles the patterns (replacing any earlier compilation). Adds one
 * problem per refusal, all of them, and returns RP_OK, RP_ERR_CONFIG or
 * RP_ERR_NOMEM. */
rp_status rp_config_validate(rp_config *cfg, rp_config_problems *p) RP_MUSTCHECK;

/* 1 when the compiled pattern matches name (a search, as the broker does),
 * 0 when not, -1 when the pattern is not compiled or the match failed (a
 * caller treats -1 as "not matched": never owned, never a dead-letter
 * queue). */
int rp_config_pattern_match(const rp_config_pattern *pat, const char *name, size_t len);

/* Formats the effective config as YAML, every key, each with a comment
 * saying where it came from ("# default", "# file reaper.yaml:3:5",
 * "# env REAPER_X"); broker.password is "********" when set. The output
 * loads back to the same config. *out is a heap string the caller frees
 * (NUL-terminated; *out_len its length, out_len may be NULL). Returns RP_OK
 * or RP_ERR_NOMEM (then *out is NULL). */
rp_status rp_config_format(const rp_config *cfg, char **out, size_t *out_len) RP_MUSTCHECK;

/* ---- reload (SIGHUP) ---------------------------------------------------- */

/* Whether a running reaperd applies a new value of key id only at its next
 * start: broker.*, store.* and http.listen (connections and the listening
 * socket are made once). Every other key applies on reload. */
bool rp_config_key_needs_restart(rp_config_key_id id);

/* What the key does, one or two sentences (static; NULL for an id out of
 * range). */
const char *rp_config_key_doc(rp_config_key_id id);
/* The configuration reference as Markdown (docs/CONFIGURATION.md), from the
 * table: key, environment variable, type, default, reload or restart, what
 * it does. *out is a heap string the caller frees. RP_ERR_NOMEM. */
rp_status rp_config_reference(char **out) RP_MUSTCHECK;
/* Whether key id has the same value in a and b (patterns by their text,
 * lists item by item; origins are not compared). */
bool rp_config_key_equal(const rp_config *a, const rp_config *b, rp_config_key_id id);
/* Replaces dst's value of key id (and its origin) with a copy of src's; a
 * compiled pattern is copied compiled. RP_ERR_NOMEM leaves dst unchanged;
 * RP_ERR_INVALID for an unknown id. */
rp_status rp_config_copy_key(rp_config *dst, const rp_config *src,
                             rp_config_key_id id) RP_MUSTCHECK;

#endif
