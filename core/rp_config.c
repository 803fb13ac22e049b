/*
 * rp_config.c - the key table of CONTRACT section 3 and the typed setting of
 * a key. The table is the one place a key is declared: adding a key is one
 * row here, one field in struct rp_config and one id in rp_config.h.
 */
#include "rp_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_config_internal.h"
#include "rp_pass.h"

/* Integers are int64_t fields but kept within int32 so that every consumer
 * (milliseconds = seconds * 1000, an AMQP policy integer) has room. */
#define RP_INT32_MAX INT64_C(2147483647)

static const char *const rp_log_levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const rp_log_formats[] = {"json", "text", NULL};
static const char *const rp_events_formats[] = {"msgpack", "json", NULL};

_Static_assert(sizeof(rp_log_level) == sizeof(int), "enum fields are int-sized");
_Static_assert(sizeof(rp_log_format) == sizeof(int), "enum fields are int-sized");
_Static_assert(sizeof(rp_events_format) == sizeof(int), "enum fields are int-sized");

#define ROW(ID, KEY, TYPE, DEF, MEMBER, MIN, MAX, CHOICES, CHECK, LEAK, FLAGS)        \
    [ID] = {.id = (ID), .key = (KEY), .type = RP_CFG_TYPE_##TYPE, .def = (DEF),       \
            .offset = offsetof(rp_config, MEMBER), .min = (MIN), .max = (MAX),        \
            .choices = (CHOICES), .check = (CHECK), .leak = (LEAK), .flags = (FLAGS)}

/* THE table. Order: as in CONTRACT section 3; a section's keys are
 * contiguous (rp_config_format relies on it). Defaults are written as an
 * environment value would be. */
static const rp__config_row rp_config_rows[RP_CFG_KEY_COUNT_] = {
    ROW(RP_CFG_BROKER_URL, "broker.url", STRING, "amqp://reaper@127.0.0.1:5672/%2f",
        broker.url, 0, 0, NULL, rp__cfg_check_amqp_url, rp__cfg_leak_url, RP__CFG_NO_ECHO | RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_PASSWORD, "broker.password", STRING, "", broker.password, 0, 0,
        NULL, NULL, NULL, RP__CFG_SECRET | RP__CFG_ENV_ONLY | RP__CFG_NO_ECHO | RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_PASSWORD_FILE, "broker.password_file", STRING, "/run/secrets/broker",
        broker.password_file, 0, 0, NULL, NULL, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_MANAGEMENT_URL, "broker.management_url", STRING,
        "http://127.0.0.1:15672", broker.management_url, 0, 0, NULL,
        rp__cfg_check_http_url, rp__cfg_leak_url, RP__CFG_NO_ECHO | RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_CONTROL_QUEUE, "broker.control_queue", STRING, "vibey.reap.control",
        broker.control_queue, 0, 0, NULL, rp__cfg_check_amqp_name, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_EVENTS_EXCHANGE, "broker.events_exchange", STRING,
        "vibey.reap.events", broker.events_exchange, 0, 0, NULL, rp__cfg_check_amqp_name,
        NULL, RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_EVENTS_FORMAT, "broker.events_format", ENUM, "msgpack",
        broker.events_format, 0, 0, rp_events_formats, NULL, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_TAP_QUEUE, "broker.tap_queue", STRING, "vibey.reap.tap",
        broker.tap_queue, 0, 0, NULL, rp__cfg_check_amqp_name, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_TAP_HEADER_CAP_BYTES, "broker.tap_header_cap_bytes", INT, "65536",
        broker.tap_header_cap_bytes, 4096, RP_INT32_MAX, NULL, NULL, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_VHOSTS, "broker.vhosts", STRLIST, "", broker.vhosts, 0, 0, NULL,
        rp__cfg_check_vhosts, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_TLS_CA_FILE, "broker.tls.ca_file", STRING, "", broker.tls.ca_file, 0,
        0, NULL, NULL, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_TLS_CERT_FILE, "broker.tls.cert_file", STRING, "",
        broker.tls.cert_file, 0, 0, NULL, NULL, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_TLS_KEY_FILE, "broker.tls.key_file", STRING, "", broker.tls.key_file,
        0, 0, NULL, NULL, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_BROKER_TLS_VERIFY_PEER, "broker.tls.verify_peer", BOOL, "true",
        broker.tls.verify_peer, 0, 0, NULL, NULL, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_STORE_DSN, "store.dsn", STRING,
        "host=127.0.0.1 port=5432 dbname=vibey user=reaper", store.dsn, 0, 0, NULL,
        rp__cfg_check_dsn, rp__cfg_leak_dsn, RP__CFG_NO_ECHO | RP__CFG_RESTART),
    ROW(RP_CFG_STORE_SCHEMA, "store.schema", STRING, "reaper", store.schema, 0, 0, NULL,
        rp__cfg_check_sql_identifier, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_STORE_STATEMENT_TIMEOUT_MS, "store.statement_timeout_ms", INT, "60000",
        store.statement_timeout_ms, 0, RP_INT32_MAX, NULL, NULL, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_STORE_LOCK_TIMEOUT_MS, "store.lock_timeout_ms", INT, "10000",
        store.lock_timeout_ms, 0, RP_INT32_MAX, NULL, NULL, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_STORE_IDLE_IN_TRANSACTION_TIMEOUT_MS, "store.idle_in_transaction_timeout_ms",
        INT, "60000", store.idle_in_transaction_timeout_ms, 0, RP_INT32_MAX, NULL, NULL, NULL,
        RP__CFG_RESTART),
    ROW(RP_CFG_STORE_TCP_USER_TIMEOUT_MS, "store.tcp_user_timeout_ms", INT, "30000",
        store.tcp_user_timeout_ms, 0, RP_INT32_MAX, NULL, NULL, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_STORE_LEASE_BATCH_SIZE, "store.lease_batch_size", INT, "100",
        store.lease_batch_size, RP_PASS_LEASE_BATCH_MIN, RP_PASS_LEASE_BATCH_MAX, NULL, NULL, NULL,
        RP__CFG_RESTART),
    ROW(RP_CFG_REAP_ENABLED, "reap.enabled", BOOL, "true", reap.enabled, 0, 0, NULL, NULL,
        NULL, 0),
    ROW(RP_CFG_REAP_INTERVAL_SECONDS, "reap.interval_seconds", INT, "60",
        reap.interval_seconds, 1, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_LEASE_GRACE_SECONDS, "reap.lease_grace_seconds", INT, "0",
        reap.lease_grace_seconds, 0, 86400, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_STALE_READY_SECONDS, "reap.stale_ready_seconds", INT, "900",
        reap.stale_ready_seconds, 1, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_CONSUMER_TIMEOUT_SECONDS, "reap.consumer_timeout_seconds", INT, "21600",
        reap.consumer_timeout_seconds, 1, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_LONGEST_LEASE_SECONDS, "reap.longest_lease_seconds", INT, "7200",
        reap.longest_lease_seconds, 0, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_DELIVERY_LIMIT, "reap.delivery_limit", INT, "20", reap.delivery_limit,
        1, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_DEAD_LETTER_QUEUE_PATTERN, "reap.dead_letter_queue_pattern", PATTERN,
        "(\\.dlq|\\.dead)$", reap.dead_letter_queue_pattern, 0, 0, NULL,
        rp__cfg_check_pattern, NULL, 0),
    ROW(RP_CFG_REAP_DEAD_LETTER_MIN_DEPTH, "reap.dead_letter_min_depth", INT, "1",
        reap.dead_letter_min_depth, 1, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_DEAD_LETTER_PEEK_LIMIT, "reap.dead_letter_peek_limit", INT, "100",
        reap.dead_letter_peek_limit, 1, 1000, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_OWNED_QUEUE_PATTERN, "reap.owned_queue_pattern", PATTERN, "^vibey\\.",
        reap.owned_queue_pattern, 0, 0, NULL, rp__cfg_check_owned_pattern, NULL, 0),
    ROW(RP_CFG_REAP_POLICY_PRIORITY, "reap.policy_priority", INT, "0",
        reap.policy_priority, 0, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_HELD_CEILING_SECONDS, "reap.held_ceiling_seconds", INT, "3600",
        reap.held_ceiling_seconds, 1, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_HELD_EVICT_FACTOR, "reap.held_evict_factor", INT, "0",
        reap.held_evict_factor, 0, 1000, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_WAITING_DEPTH_THRESHOLD, "reap.waiting_depth_threshold", INT, "10",
        reap.waiting_depth_threshold, 0, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_QUEUE_DEPTH_THRESHOLD, "reap.queue_depth_threshold", INT, "10000",
        reap.queue_depth_threshold, 0, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_WEDGED_SECONDS, "reap.wedged_seconds", INT, "900",
        reap.wedged_seconds, 1, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_WEDGED_CHECKS, "reap.wedged_checks", INT, "3",
        reap.wedged_checks, 1, 1000, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_WEDGE_RESTART, "reap.wedge_restart", BOOL, "false",
        reap.wedge_restart, 0, 0, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_WEDGE_RESTART_MAX, "reap.wedge_restart_max", INT, "3",
        reap.wedge_restart_max, 1, 1000, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_WEDGE_RESTART_WINDOW_SECONDS, "reap.wedge_restart_window_seconds", INT,
        "1800", reap.wedge_restart_window_seconds, 1, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_DIVERGENCE_WINDOW_SECONDS, "reap.divergence_window_seconds", INT, "86400",
        reap.divergence_window_seconds, 60, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_DIVERGENCE_RATIO, "reap.divergence_ratio", INT, "2",
        reap.divergence_ratio, 1, 1000000, NULL, NULL, NULL, 0),
    ROW(RP_CFG_REAP_DIVERGENCE_MIN_WAITING, "reap.divergence_min_waiting", INT, "50",
        reap.divergence_min_waiting, 0, RP_INT32_MAX, NULL, NULL, NULL, 0),
    ROW(RP_CFG_CONTROL_ALLOWED_USERS, "control.allowed_users", STRLIST, "",
        control.allowed_users, 0, 0, NULL, rp__cfg_check_users, NULL, 0),
    ROW(RP_CFG_CONTROL_REAP_RATE_SECONDS, "control.reap_rate_seconds", INT, "10",
        control.reap_rate_seconds, 0, 86400, NULL, NULL, NULL, 0),
    ROW(RP_CFG_CONTROL_REPLAY_CLAIM_SECONDS, "control.replay_claim_seconds", INT, "60",
        control.replay_claim_seconds, 1, 86400, NULL, NULL, NULL, 0),
    ROW(RP_CFG_CONTROL_REPLY_QUEUE_PATTERN, "control.reply_queue_pattern", PATTERN, "",
        control.reply_queue_pattern, 0, 0, NULL, rp__cfg_check_reply_pattern, NULL, 0),
    ROW(RP_CFG_HTTP_LISTEN, "http.listen", STRING, "127.0.0.1:9464", http.listen, 0, 0,
        NULL, rp__cfg_check_listen, NULL, RP__CFG_RESTART),
    ROW(RP_CFG_HTTP_CONSOLE, "http.console", BOOL, "false", http.console, 0, 0, NULL, NULL,
        NULL, 0),
    ROW(RP_CFG_HTTP_CONSOLE_READ_ANONYMOUS, "http.console_read_anonymous", BOOL, "false",
        http.console_read_anonymous, 0, 0, NULL, NULL, NULL, 0),
    ROW(RP_CFG_LOG_LEVEL, "log.level", ENUM, "info", log.level, 0, 0, rp_log_levels, NULL,
        NULL, 0),
    ROW(RP_CFG_LOG_FORMAT, "log.format", ENUM, "json", log.format, 0, 0, rp_log_formats,
        NULL, NULL, 0),
};

/* The sections, for "is this a mapping" and for "did you mean". */
static const char *const rp_config_sections[] = {
    "broker", "broker.tls", "store", "reap", "control", "http", "log",
};

const rp__config_row *rp__config_row_get(rp_config_key_id id) {
    if ((int)id < 0 || id >= RP_CFG_KEY_COUNT_) return NULL;
    return &rp_config_rows[id];
}

void *rp__config_field(rp_config *cfg, const rp__config_row *row) {
    return (char *)cfg + row->offset;
}

const void *rp__config_cfield(const rp_config *cfg, const rp__config_row *row) {
    return (const char *)cfg + row->offset;
}

const char *rp_config_key_name(rp_config_key_id id) {
    const rp__config_row *row = rp__config_row_get(id);
    return row ? row->key : "unknown";
}

rp_config_type rp_config_key_type(rp_config_key_id id) {
    const rp__config_row *row = rp__config_row_get(id);
    return row ? row->type : RP_CFG_TYPE_STRING;
}

bool rp_config_key_is_secret(rp_config_key_id id) {
    const rp__config_row *row = rp__config_row_get(id);
    return row != NULL && (row->flags & RP__CFG_SECRET) != 0;
}

size_t rp_config_env_name(rp_config_key_id id, char *buf, size_t cap) {
    const rp__config_row *row = rp__config_row_get(id);
    const char *key = row ? row->key : "";
    static const char prefix[] = "REAPER_";
    size_t n = 0, total = sizeof prefix - 1 + strlen(key);
    for (const char *s = prefix; *s; s++, n++)
        if (n + 1 < cap) buf[n] = *s;
    for (const char *s = key; *s; s++, n++) {
        char c = *s == '.' ? '_' : *s;
        if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
        if (n + 1 < cap) buf[n] = c;
    }
    if (cap > 0) buf[n < cap ? n : cap - 1] = '\0';
    return total;
}

int rp_config_key_lookup(const char *key, size_t len) {
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) {
        const char *k = rp_config_rows[i].key;
        if (strlen(k) == len && memcmp(k, key, len) == 0) return i;
    }
    return -1;
}

int rp_config_env_lookup(const char *name, size_t len) {
    char buf[96];
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) {
        size_t n = rp_config_env_name((rp_config_key_id)i, buf, sizeof buf);
        if (n == len && memcmp(buf, name, len) == 0) return i;
    }
    return -1;
}

/* ---- service links ------------------------------------------------------ */

/* The shapes of a service link's value, each over exactly [s, s+len). */

/* A port number, 1-65535, no sign, no leading zero. */
static bool rp_sl_port(const char *s, size_t len) {
    if (len == 0 || len > 5 || s[0] == '0') return false;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    return v <= 65535;
}

/* An IPv4 dotted quad or an IPv6 literal (hex digits, colons, dots for an
 * embedded IPv4 tail; at least two colons), as a ClusterIP is written. */
static bool rp_sl_ip(const char *s, size_t len) {
    if (len == 0 || len > 45) return false;
    size_t colons = 0, dots = 0, digits = 0;
    bool hex = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == ':') colons++;
        else if (c == '.') dots++;
        else if (c >= '0' && c <= '9') digits++;
        else if ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) hex = true;
        else return false;
    }
    if (colons >= 2) return true;
    if (colons != 0 || hex || dots != 3) return false;
    unsigned part = 0;
    size_t nd = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '.') {
            if (nd == 0 || nd > 3 || part > 255) return false;
            part = 0;
            nd = 0;
        } else {
            part = part * 10 + (unsigned)(s[i] - '0');
            nd++;
        }
    }
    return digits > 0;
}

/* The protocol as a name part ("TCP") and as a value part ("tcp"). */
static const char *const rp_sl_protos[][2] = {{"TCP", "tcp"}, {"UDP", "udp"}, {"SCTP", "sctp"}};

static bool rp_sl_ends(const char *s, size_t len, const char *tail, size_t *head) {
    size_t t = strlen(tail);
    if (len < t || memcmp(s + len - t, tail, t) != 0) return false;
    *head = len - t;
    return true;
}

/* "<proto>://<ip>:<port>", the proto in lower case; when want_port is not
 * NULL the port must be that text. */
static bool rp_sl_url(const char *v, size_t vlen, const char *proto, const char *want_port,
                      size_t want_len) {
    size_t pl = strlen(proto);
    if (vlen < pl + 3 || memcmp(v, proto, pl) != 0 || memcmp(v + pl, "://", 3) != 0)
        return false;
    const char *hp = v + pl + 3;
    size_t hl = vlen - pl - 3;
    const char *colon = NULL;
    for (size_t i = hl; i > 0; i--)
        if (hp[i - 1] == ':') {
            colon = hp + i - 1;
            break;
        }
    if (colon == NULL) return false;
    const char *host = hp, *port = colon + 1;
    size_t hostl = (size_t)(colon - hp), portl = hl - hostl - 1;
    /* An IPv6 ClusterIP is bracketed in the URL form. */
    if (hostl >= 2 && host[0] == '[' && host[hostl - 1] == ']') {
        host++;
        hostl -= 2;
    }
    if (!rp_sl_ip(host, hostl) || !rp_sl_port(port, portl)) return false;
    return want_port == NULL || (portl == want_len && memcmp(port, want_port, portl) == 0);
}

/* A Service name as the kubelet writes it in a variable: upper case,
 * digits and underscores (the dashes of the DNS label), not empty. */
static bool rp_sl_service(const char *s, size_t len) {
    if (len == 0) return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return s[0] != '_' && s[len - 1] != '_';
}

bool rp_config_env_is_service_link(const char *name, size_t nlen, const char *v, size_t vlen) {
    size_t h;
    /* <SVC>_SERVICE_HOST=<ip> */
    if (rp_sl_ends(name, nlen, "_SERVICE_HOST", &h))
        return rp_sl_service(name, h) && rp_sl_ip(v, vlen);
    /* <SVC>_SERVICE_PORT=<port> */
    if (rp_sl_ends(name, nlen, "_SERVICE_PORT", &h))
        return rp_sl_service(name, h) && rp_sl_port(v, vlen);
    /* <SVC>_SERVICE_PORT_<PORTNAME>=<port>: the service part ends at the
     * last "_SERVICE_PORT_" (a port name has no "SERVICE_PORT" in it that
     * matters: either split gives a service-shaped name). */
    for (size_t i = nlen; i-- > 0;) {
        static const char mid[] = "_SERVICE_PORT_";
        size_t ml = sizeof mid - 1;
        if (i + ml < nlen && memcmp(name + i, mid, ml) == 0)
            return rp_sl_service(name, i) && rp_sl_service(name + i + ml, nlen - i - ml) &&
                   rp_sl_port(v, vlen);
    }
    /* <SVC>_PORT=<proto>://<ip>:<port> */
    if (rp_sl_ends(name, nlen, "_PORT", &h) && rp_sl_service(name, h)) {
        for (size_t p = 0; p < RP_ARRAY_LEN(rp_sl_protos); p++)
            if (rp_sl_url(v, vlen, rp_sl_protos[p][1], NULL, 0)) return true;
    }
    /* <SVC>_PORT_<n>_<PROTO>[_PROTO|_PORT|_ADDR]: find "_PORT_<n>_<PROTO>"
     * followed by the end or one of the three suffixes. */
    for (size_t i = 0; i + 6 < nlen; i++) {
        if (memcmp(name + i, "_PORT_", 6) != 0 || !rp_sl_service(name, i)) continue;
        const char *num = name + i + 6;
        size_t nl = 0;
        while (i + 6 + nl < nlen && num[nl] >= '0' && num[nl] <= '9') nl++;
        if (!rp_sl_port(num, nl) || i + 6 + nl >= nlen || num[nl] != '_') continue;
        const char *pr = num + nl + 1;
        size_t rest = nlen - (size_t)(pr - name);
        for (size_t p = 0; p < RP_ARRAY_LEN(rp_sl_protos); p++) {
            const char *up = rp_sl_protos[p][0], *low = rp_sl_protos[p][1];
            size_t ul = strlen(up);
            if (rest < ul || memcmp(pr, up, ul) != 0) continue;
            const char *sfx = pr + ul;
            size_t sl = rest - ul;
            if (sl == 0) return rp_sl_url(v, vlen, low, num, nl);
            if (sl == 6 && memcmp(sfx, "_PROTO", 6) == 0)
                return vlen == strlen(low) && memcmp(v, low, vlen) == 0;
            if (sl == 5 && memcmp(sfx, "_PORT", 5) == 0)
                return vlen == nl && memcmp(v, num, nl) == 0;
            if (sl == 5 && memcmp(sfx, "_ADDR", 5) == 0) return rp_sl_ip(v, vlen);
        }
    }
    return false;
}

bool rp_config_is_section(const char *key, size_t len) {
    for (size_t i = 0; i < RP_ARRAY_LEN(rp_config_sections); i++) {
        const char *s = rp_config_sections[i];
        if (strlen(s) == len && memcmp(s, key, len) == 0) return true;
    }
    return false;
}

const char *rp_config_where(const rp_config *cfg, rp_config_key_id id,
                            rp_config_origin origin, char *buf, size_t cap) {
    if (cap == 0) return buf;
    switch (origin.source) {
    case RP_CONFIG_FILE: {
        const char *path = cfg && cfg->path ? cfg->path : "config";
        if (origin.line > 0)
            snprintf(buf, cap, "%s:%u:%u", path, origin.line, origin.column);
        else
            snprintf(buf, cap, "%s", path);
        break;
    }
    case RP_CONFIG_ENV: {
        char env[96];
        rp_config_env_name(id, env, sizeof env);
        snprintf(buf, cap, "environment %s", env);
        break;
    }
    case RP_CONFIG_DEFAULT:
    default:
        buf[0] = '\0';
        break;
    }
    return buf;
}

/* ---- init and cleanup --------------------------------------------------- */

static void rp_free_secret(char *s) {
    if (s == NULL) return;
    explicit_bzero(s, strlen(s));
    free(s);
}

static void rp_strlist_free(rp_config_strlist *l) {
    for (size_t i = 0; i < l->n; i++) free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

static void rp_field_free(rp_config *cfg, const rp__config_row *row) {
    void *f = rp__config_field(cfg, row);
    switch (row->type) {
    case RP_CFG_TYPE_STRING: {
        char **s = f;
        if (row->flags & RP__CFG_SECRET)
            rp_free_secret(*s);
        else
            free(*s);
        *s = NULL;
        break;
    }
    case RP_CFG_TYPE_PATTERN: {
        rp_config_pattern *pat = f;
        free(pat->text);
        pcre2_code_free(pat->code);
        pat->text = NULL;
        pat->code = NULL;
        break;
    }
    case RP_CFG_TYPE_STRLIST:
        rp_strlist_free(f);
        break;
    case RP_CFG_TYPE_INT:
    case RP_CFG_TYPE_BOOL:
    case RP_CFG_TYPE_ENUM:
        break;
    }
}

rp_status rp_config_init(rp_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    rp_config_problems p;
    rp_config_problems_init(&p);
    rp_status result = RP_OK;
    rp_config_origin def = {RP_CONFIG_DEFAULT, 0, 0};
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) {
        const rp__config_row *row = &rp_config_rows[i];
        rp_status st = rp_config_set_scalar(cfg, row->id, row->def, strlen(row->def), false,
                                            def, &p);
        if (st != RP_OK) {
            /* A default that does not parse is a bug in the table, caught by
             * test_config; at run time it can only be memory. */
            result = st == RP_ERR_NOMEM ? st : RP_ERR_INTERNAL;
            break;
        }
    }
    if (p.nomem) result = RP_ERR_NOMEM;
    rp_config_problems_cleanup(&p);
    return result;
}

void rp_config_cleanup(rp_config *cfg) {
    if (cfg == NULL) return;
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) rp_field_free(cfg, &rp_config_rows[i]);
    free(cfg->path);
    memset(cfg, 0, sizeof *cfg);
}

rp_status rp_config_set_path(rp_config *cfg, const char *path) {
    char *copy = strdup(path ? path : "");
    if (copy == NULL) return RP_ERR_NOMEM;
    free(cfg->path);
    cfg->path = copy;
    return RP_OK;
}

/* ---- setting a key ------------------------------------------------------ */

/* A plain scalar that YAML reads as null. */
static bool rp_is_null(const char *s, size_t len) {
    if (len == 0) return true;
    static const char *const nulls[] = {"~", "null", "Null", "NULL"};
    for (size_t i = 0; i < RP_ARRAY_LEN(nulls); i++)
        if (strlen(nulls[i]) == len && memcmp(nulls[i], s, len) == 0) return true;
    return false;
}

static bool rp_eq(const char *s, size_t len, const char *lit) {
    return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

static bool rp_eq_nocase(const char *s, size_t len, const char *lit) {
    if (strlen(lit) != len) return false;
    for (size_t i = 0; i < len; i++) {
        char a = s[i], b = lit[i];
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (a != b) return false;
    }
    return true;
}

static int rp_parse_bool(const char *s, size_t len) {
    if (rp_eq(s, len, "true") || rp_eq(s, len, "True") || rp_eq(s, len, "TRUE")) return 1;
    if (rp_eq(s, len, "false") || rp_eq(s, len, "False") || rp_eq(s, len, "FALSE")) return 0;
    return -1;
}

static bool rp_bool_like(const char *s, size_t len) {
    static const char *const words[] = {"true", "false", "yes", "no", "on", "off", "y", "n"};
    for (size_t i = 0; i < RP_ARRAY_LEN(words); i++)
        if (rp_eq_nocase(s, len, words[i])) return true;
    return false;
}

/* YAML's float forms: 1.5, .5, 1., 1e3, -2.5E-3, .inf, .nan. */
static bool rp_float_like(const char *s, size_t len) {
    size_t i = 0;
    if (i < len && (s[i] == '+' || s[i] == '-')) i++;
    if (rp_eq_nocase(s + i, len - i, ".inf") || rp_eq_nocase(s + i, len - i, ".nan"))
        return true;
    size_t digits = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') i++, digits++;
    bool dot = false;
    if (i < len && s[i] == '.') {
        dot = true;
        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9') i++, digits++;
    }
    if (digits == 0) return false;
    bool exp = false;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-')) i++;
        size_t ed = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') i++, ed++;
        if (ed == 0) return false;
        exp = true;
    }
    return i == len && (dot || exp);
}

/* Parses a plain decimal integer. Returns 1 and *out, 0 when the text is not
 * an integer, -1 when it is one but does not fit in int64_t. */
static int rp_parse_int(const char *s, size_t len, int64_t *out) {
    size_t i = 0;
    bool neg = false;
    if (i < len && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    if (i == len) return 0;
    uint64_t v = 0;
    bool overflow = false;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            overflow = true;
        else
            v = v * 10 + d;
    }
    if (overflow || v > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) return -1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 1;
}

/* Describes a plain scalar that is not an integer, for a message. */
static const char *rp_kind_of_plain(const char *s, size_t len) {
    if (rp_is_null(s, len)) return "no value";
    if (rp_bool_like(s, len)) return "a bool";
    if (rp_float_like(s, len)) return "a float";
    return "a string";
}

static char *rp_dup(const char *s, size_t len) {
    char *d = malloc(len + 1);
    if (d == NULL) return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

static rp_status rp_store_string(rp_config *cfg, const rp__config_row *row, const char *text,
                                 size_t len, rp_config_origin origin, rp_config_problems *p) {
    char *copy = rp_dup(text, len);
    if (copy == NULL) return RP_ERR_NOMEM;
    if (row->leak != NULL) {
        const char *why = row->leak(copy);
        if (why != NULL) {
            explicit_bzero(copy, len);
            free(copy);
            rp__cfg_problem_at(p, cfg, row->id, origin, "%s", why);
            return RP_ERR_CONFIG;
        }
    }
    void *f = rp__config_field(cfg, row);
    if (row->type == RP_CFG_TYPE_PATTERN) {
        rp_config_pattern *pat = f;
        free(pat->text);
        pcre2_code_free(pat->code);
        pat->text = copy;
        pat->code = NULL;
    } else {
        char **s = f;
        if (row->flags & RP__CFG_SECRET)
            rp_free_secret(*s);
        else
            free(*s);
        *s = copy;
    }
    cfg->origin[row->id] = origin;
    return RP_OK;
}

static rp_status rp_store_list(rp_config *cfg, const rp__config_row *row,
                               const char *const *items, const size_t *lens, size_t n,
                               rp_config_origin origin) {
    rp_config_strlist fresh = {NULL, 0};
    if (n > 0) {
        fresh.items = calloc(n, sizeof *fresh.items);
        if (fresh.items == NULL) return RP_ERR_NOMEM;
        for (size_t i = 0; i < n; i++) {
            fresh.items[i] = rp_dup(items[i], lens[i]);
            if (fresh.items[i] == NULL) {
                fresh.n = i;
                rp_strlist_free(&fresh);
                return RP_ERR_NOMEM;
            }
        }
        fresh.n = n;
    }
    rp_config_strlist *l = rp__config_field(cfg, row);
    rp_strlist_free(l);
    *l = fresh;
    cfg->origin[row->id] = origin;
    return RP_OK;
}

/* Splits an environment (or default) value at commas, trimming spaces. */
static rp_status rp_set_list_from_text(rp_config *cfg, const rp__config_row *row,
                                       const char *text, size_t len, rp_config_origin origin,
                                       rp_config_problems *p) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += text[i] == ',';
    n = len == 0 ? 0 : n + 1;
    const char **items = n ? calloc(n, sizeof *items) : NULL;
    size_t *lens = n ? calloc(n, sizeof *lens) : NULL;
    if (n && (items == NULL || lens == NULL)) {
        free(items);
        free(lens);
        return RP_ERR_NOMEM;
    }
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= len && n > 0; i++) {
        if (i < len && text[i] != ',') continue;
        size_t a = start, b = i;
        while (a < b && (text[a] == ' ' || text[a] == '\t')) a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t')) b--;
        items[k] = text + a;
        lens[k] = b - a;
        k++;
        start = i + 1;
    }
    rp_status st = rp_config_set_list(cfg, row->id, items, lens, n, origin, p);
    free(items);
    free(lens);
    return st;
}

rp_status rp_config_set_scalar(rp_config *cfg, rp_config_key_id id, const char *text,
                               size_t len, bool quoted, rp_config_origin origin,
                               rp_config_problems *p) {
    const rp__config_row *row = rp__config_row_get(id);
    if (row == NULL || (text == NULL && len > 0)) return RP_ERR_INVALID;
    if (text == NULL) text = "";
    bool echo = !(row->flags & (RP__CFG_NO_ECHO | RP__CFG_SECRET));
    char shown[128];

    if ((row->flags & RP__CFG_ENV_ONLY) && origin.source == RP_CONFIG_FILE) {
        char env[96];
        rp_config_env_name(id, env, sizeof env);
        rp__cfg_problem_at(p, cfg, id, origin,
                           "a secret may not be written in the file: put the password "
                           "in the file named by broker.password_file, or in the "
                           "environment variable %s",
                           env);
        return RP_ERR_CONFIG;
    }
    if (memchr(text, '\0', len) != NULL) {
        rp__cfg_problem_at(p, cfg, id, origin, "the value contains a NUL character");
        return RP_ERR_CONFIG;
    }
    /* A file is UTF-8 (libyaml checks); the environment is held to the
     * same, so that every value can be printed and loaded back. */
    if (!rp__cfg_utf8_valid(text, len)) {
        rp__cfg_problem_at(p, cfg, id, origin, "the value is not valid UTF-8");
        return RP_ERR_CONFIG;
    }

    switch (row->type) {
    case RP_CFG_TYPE_STRING:
    case RP_CFG_TYPE_PATTERN:
        if (!quoted && rp_is_null(text, len)) len = 0;
        return rp_store_string(cfg, row, text, len, origin, p);

    case RP_CFG_TYPE_INT: {
        int64_t v = 0;
        if (quoted) {
            rp__cfg_problem_at(p, cfg, id, origin,
                               "expects an integer, got a quoted string %s (write the "
                               "number without quotes)",
                               rp__cfg_quote(text, len, shown, sizeof shown));
            return RP_ERR_CONFIG;
        }
        int r = rp_parse_int(text, len, &v);
        if (r == 0) {
            rp__cfg_problem_at(p, cfg, id, origin, "expects an integer, got %s %s",
                               rp_kind_of_plain(text, len),
                               rp__cfg_quote(text, len, shown, sizeof shown));
            return RP_ERR_CONFIG;
        }
        if (r < 0) {
            rp__cfg_problem_at(p, cfg, id, origin,
                               "%s is out of range (at most %lld)",
                               rp__cfg_quote(text, len, shown, sizeof shown),
                               (long long)row->max);
            return RP_ERR_CONFIG;
        }
        *(int64_t *)rp__config_field(cfg, row) = v;
        cfg->origin[id] = origin;
        return RP_OK;
    }

    case RP_CFG_TYPE_BOOL: {
        int b = quoted ? -1 : rp_parse_bool(text, len);
        if (b < 0) {
            rp__cfg_problem_at(p, cfg, id, origin, "expects true or false, got %s%s",
                               quoted ? "a quoted string " : "",
                               rp__cfg_quote(text, len, shown, sizeof shown));
            return RP_ERR_CONFIG;
        }
        *(bool *)rp__config_field(cfg, row) = b == 1;
        cfg->origin[id] = origin;
        return RP_OK;
    }

    case RP_CFG_TYPE_ENUM: {
        for (int i = 0; row->choices[i] != NULL; i++) {
            if (rp_eq(text, len, row->choices[i])) {
                *(int *)rp__config_field(cfg, row) = i;
                cfg->origin[id] = origin;
                return RP_OK;
            }
        }
        char choices[128] = "";
        for (int i = 0; row->choices[i] != NULL; i++) {
            size_t used = strlen(choices);
            snprintf(choices + used, sizeof choices - used, "%s%s", i ? "|" : "",
                     row->choices[i]);
        }
        rp__cfg_problem_at(p, cfg, id, origin, "expects one of %s, got %s", choices,
                           echo ? rp__cfg_quote(text, len, shown, sizeof shown) : "another");
        return RP_ERR_CONFIG;
    }

    case RP_CFG_TYPE_STRLIST:
        if (origin.source != RP_CONFIG_FILE)
            return rp_set_list_from_text(cfg, row, text, len, origin, p);
        if (!quoted && rp_is_null(text, len))
            return rp_store_list(cfg, row, NULL, NULL, 0, origin);
        rp__cfg_problem_at(p, cfg, id, origin,
                           "expects a list of strings (e.g. [alice, bob]), got a single "
                           "value %s",
                           rp__cfg_quote(text, len, shown, sizeof shown));
        return RP_ERR_CONFIG;
    }
    return RP_ERR_INTERNAL;
}

rp_status rp_config_set_list(rp_config *cfg, rp_config_key_id id,
                             const char *const *items, const size_t *lens, size_t n,
                             rp_config_origin origin, rp_config_problems *p) {
    const rp__config_row *row = rp__config_row_get(id);
    if (row == NULL || (n > 0 && (items == NULL || lens == NULL))) return RP_ERR_INVALID;
    if (row->type != RP_CFG_TYPE_STRLIST) {
        rp_config_refuse_shape(cfg, id, "a list", origin, p);
        return RP_ERR_CONFIG;
    }
    rp_status result = RP_OK;
    for (size_t i = 0; i < n; i++) {
        if (memchr(items[i], '\0', lens[i]) != NULL) {
            rp__cfg_problem_at(p, cfg, id, origin, "item %zu contains a NUL character",
                               i + 1);
            result = RP_ERR_CONFIG;
        } else if (!rp__cfg_utf8_valid(items[i], lens[i])) {
            rp__cfg_problem_at(p, cfg, id, origin, "item %zu is not valid UTF-8", i + 1);
            result = RP_ERR_CONFIG;
        }
    }
    if (result != RP_OK) return result;
    return rp_store_list(cfg, row, items, lens, n, origin);
}

static const char *rp_type_phrase(const rp__config_row *row) {
    switch (row->type) {
    case RP_CFG_TYPE_STRING: return "a string";
    case RP_CFG_TYPE_INT: return "an integer";
    case RP_CFG_TYPE_BOOL: return "true or false";
    case RP_CFG_TYPE_ENUM: return "one name";
    case RP_CFG_TYPE_STRLIST: return "a list of strings";
    case RP_CFG_TYPE_PATTERN: return "a pattern (a string)";
    }
    return "a value";
}

void rp_config_refuse_shape(const rp_config *cfg, rp_config_key_id id, const char *got,
                            rp_config_origin origin, rp_config_problems *p) {
    const rp__config_row *row = rp__config_row_get(id);
    if (row == NULL) return;
    rp__cfg_problem_at(p, cfg, id, origin, "expects %s, got %s", rp_type_phrase(row),
                       got ? got : "another kind of value");
}

/* The index of the last '.' or '_' separated component of a name. */
static size_t rp_last_component(const char *s, size_t len, char sep) {
    size_t i = len;
    while (i > 0 && s[i - 1] != sep) i--;
    return i;
}

/* Finds the known name closest to name; NULL when none is close enough. */
static const char *rp_suggest(const char *name, size_t len, bool env, char *buf,
                              size_t cap) {
    if (len == 0 || len > 64) return NULL;
    size_t limit = len <= 4 ? 1 : len <= 12 ? 2 : 3;
    size_t best = limit + 1;
    const char *found = NULL;
    if (env) {
        for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) {
            char cand[96];
            size_t cl = rp_config_env_name((rp_config_key_id)i, cand, sizeof cand);
            size_t d = rp__cfg_distance(name, len, cand, cl, limit);
            if (d < best) {
                best = d;
                snprintf(buf, cap, "%s", cand);
                found = buf;
            }
        }
        return found;
    }
    size_t nl = rp_last_component(name, len, '.');
    for (size_t i = 0; i < RP_CFG_KEY_COUNT_ + RP_ARRAY_LEN(rp_config_sections); i++) {
        const char *cand = i < RP_CFG_KEY_COUNT_ ? rp_config_rows[i].key
                                                  : rp_config_sections[i - RP_CFG_KEY_COUNT_];
        size_t cl = strlen(cand);
        size_t d = rp__cfg_distance(name, len, cand, cl, limit);
        /* The right key under the wrong section: compare the last parts,
         * at a cost of one for the move. */
        if (i < RP_CFG_KEY_COUNT_ && nl > 0) {
            size_t ck = rp_last_component(cand, cl, '.');
            size_t d2 = 1 + rp__cfg_distance(name + nl, len - nl, cand + ck, cl - ck, limit);
            if (d2 < d) d = d2;
        }
        if (d < best) {
            best = d;
            found = cand;
        }
    }
    return found;
}

void rp_config_refuse_unknown(const rp_config *cfg, const char *name, size_t len, bool env,
                              rp_config_origin origin, rp_config_problems *p) {
    if (p == NULL) return;
    /* Counting is cheap; the suggestion search is not: skip it once the
     * problem would not be stored anyway. */
    if (p->n >= RP_CONFIG_PROBLEMS_MAX) {
        rp_config_problems_add(p, NULL, NULL, "unknown key");
        return;
    }
    char shown[128], sugg[96], where[512];
    rp__cfg_quote(name, len, shown, sizeof shown);
    /* Strip the quotes the helper added: a key reads better bare. */
    char key[128];
    size_t sl = strlen(shown);
    snprintf(key, sizeof key, "%.*s", (int)(sl >= 2 ? sl - 2 : 0), shown + 1);
    const char *s = rp_suggest(name, len, env, sugg, sizeof sugg);

    if (env) {
        rp_config_problems_add(p, key, "environment",
                               "unknown variable%s%s%s (no such configuration key)",
                               s ? "; did you mean " : "", s ? s : "", s ? "?" : "");
        return;
    }
    rp_config_where(cfg, RP_CFG_KEY_COUNT_, origin, where, sizeof where);
    const char *w = where[0] ? where : NULL;
    if (rp_config_key_lookup(name, len) >= 0 || rp_config_is_section(name, len)) {
        size_t lc = rp_last_component(name, len, '.');
        rp_config_problems_add(p, key, w,
                               "a key may not contain a dot: write it nested (%.*s: "
                               "{%.*s: ...})",
                               (int)(lc - 1), name, (int)(len - lc), name + lc);
        return;
    }
    rp_config_problems_add(p, key, w, "unknown key%s%s%s", s ? "; did you mean " : "",
                           s ? s : "", s ? "?" : "");
}

/* ---- reload ------------------------------------------------------------- */

bool rp_config_key_needs_restart(rp_config_key_id id) {
    const rp__config_row *row = rp__config_row_get(id);
    return row != NULL && (row->flags & RP__CFG_RESTART) != 0;
}

static bool rp_str_same(const char *a, const char *b) {
    return strcmp(a ? a : "", b ? b : "") == 0;
}

bool rp_config_key_equal(const rp_config *a, const rp_config *b, rp_config_key_id id) {
    const rp__config_row *row = rp__config_row_get(id);
    if (row == NULL) return true;
    const void *fa = rp__config_cfield(a, row), *fb = rp__config_cfield(b, row);
    switch (row->type) {
    case RP_CFG_TYPE_STRING:
        return rp_str_same(*(char *const *)fa, *(char *const *)fb);
    case RP_CFG_TYPE_INT:
        return *(const int64_t *)fa == *(const int64_t *)fb;
    case RP_CFG_TYPE_BOOL:
        return *(const bool *)fa == *(const bool *)fb;
    case RP_CFG_TYPE_ENUM:
        return *(const int *)fa == *(const int *)fb;
    case RP_CFG_TYPE_PATTERN:
        return rp_str_same(((const rp_config_pattern *)fa)->text,
                           ((const rp_config_pattern *)fb)->text);
    case RP_CFG_TYPE_STRLIST: {
        const rp_config_strlist *la = fa, *lb = fb;
        if (la->n != lb->n) return false;
        for (size_t i = 0; i < la->n; i++)
            if (!rp_str_same(la->items[i], lb->items[i])) return false;
        return true;
    }
    }
    return true;
}

rp_status rp_config_copy_key(rp_config *dst, const rp_config *src, rp_config_key_id id) {
    const rp__config_row *row = rp__config_row_get(id);
    if (row == NULL) return RP_ERR_INVALID;
    void *fd = rp__config_field(dst, row);
    const void *fs = rp__config_cfield(src, row);
    switch (row->type) {
    case RP_CFG_TYPE_STRING: {
        const char *v = *(char *const *)fs;
        char *copy = v ? strdup(v) : NULL;
        if (v && copy == NULL) return RP_ERR_NOMEM;
        rp_field_free(dst, row);
        *(char **)fd = copy;
        break;
    }
    case RP_CFG_TYPE_INT:
        *(int64_t *)fd = *(const int64_t *)fs;
        break;
    case RP_CFG_TYPE_BOOL:
        *(bool *)fd = *(const bool *)fs;
        break;
    case RP_CFG_TYPE_ENUM:
        *(int *)fd = *(const int *)fs;
        break;
    case RP_CFG_TYPE_PATTERN: {
        const rp_config_pattern *ps = fs;
        rp_config_pattern np = {NULL, NULL};
        if (ps->text && (np.text = strdup(ps->text)) == NULL) return RP_ERR_NOMEM;
        if (ps->code && (np.code = pcre2_code_copy(ps->code)) == NULL) {
            free(np.text);
            return RP_ERR_NOMEM;
        }
        rp_field_free(dst, row);
        *(rp_config_pattern *)fd = np;
        break;
    }
    case RP_CFG_TYPE_STRLIST: {
        const rp_config_strlist *ls = fs;
        rp_config_strlist nl = {NULL, 0};
        if (ls->n > 0) {
            nl.items = calloc(ls->n, sizeof *nl.items);
            if (nl.items == NULL) return RP_ERR_NOMEM;
            for (; nl.n < ls->n; nl.n++)
                if ((nl.items[nl.n] = strdup(ls->items[nl.n])) == NULL) {
                    rp_strlist_free(&nl);
                    return RP_ERR_NOMEM;
                }
        }
        rp_field_free(dst, row);
        *(rp_config_strlist *)fd = nl;
        break;
    }
    }
    dst->origin[id] = src->origin[id];
    return RP_OK;
}
