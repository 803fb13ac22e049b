/* libFuzzer: every reader of the management API's answers that runs
 * between requests (adapters/management: the dead-letter tap's reconcile,
 * rp_mgmt_dlx.h: policies, queue pages with arguments, an exchange's
 * bindings, the tap's bindings; the policy reconcile, rp_mgmt_policy.h:
 * the version, policies, operator policies, the queue check; the broker
 * port: queue pages, the inventory seed, the broker-wide consumer_timeout
 * in /api/config/effective). The HTTP bridge is replaced here by one that
 * answers each request, in order, from the fuzz input, so every parser
 * sees whatever a hostile or broken broker could answer, in any order.
 *
 * The input: byte 0 picks the caller (modulo 4: tap bindings reconcile,
 * policy reconcile, inventory seed and queue pages, broker-wide timeout
 * and version), byte 1 its flags (bit 0 dry run). Then one answer per
 * request: 1 byte status (modulo 8: 200, 201, 204, 400, 404, 500, 401,
 * no connection), 2 bytes length, the body. When the input ends every
 * further request finds no connection, so every caller ends. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_wire.h"
#include "rp_mgmt_bridge.h"
#include "rp_mgmt_broker.h"
#include "rp_mgmt_dlx.h"
#include "rp_log.h"
#include "rp_mgmt_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- the bridge, answering from the input ---------------------------------------- */

static rp_fuzz_reader rp_answers;
static unsigned rp_requests;

void rp_mgmt_response_init(rp_mgmt_response *r) { memset(r, 0, sizeof *r); }

void rp_mgmt_response_cleanup(rp_mgmt_response *r) {
    if (r == NULL) return;
    free(r->body);
    memset(r, 0, sizeof *r);
}

rp_status rp_mgmt_bridge_call(rp_mgmt_bridge *b, rp_http_method method, const char *path,
                              const char *body, size_t body_len, long timeout_ms,
                              rp_mgmt_response *out) {
    RP_UNUSED(b);
    RP_UNUSED(method);
    RP_UNUSED(body);
    RP_UNUSED(body_len);
    RP_UNUSED(timeout_ms);
    rp_mgmt_response_init(out);
    if (path == NULL || path[0] != '/') abort();
    /* A bound on the requests of one call: a hostile answer must not make
     * a caller ask forever. */
    if (++rp_requests > 100000) abort();
    static const long codes[] = {200, 201, 204, 400, 404, 500, 401, 0};
    if (rp_answers.n == 0) {
        snprintf(out->error, sizeof out->error, "no connection");
        return RP_ERR_UNAVAILABLE;
    }
    long code = codes[rp_fuzz_byte(&rp_answers) % 8];
    amqp_bytes_t b2 = rp_fuzz_take(&rp_answers, rp_fuzz_u16(&rp_answers));
    if (code == 0) {
        snprintf(out->error, sizeof out->error, "no connection");
        return RP_ERR_UNAVAILABLE;
    }
    out->http_status = code;
    out->body = malloc(b2.len + 1);
    if (out->body == NULL) return RP_ERR_NOMEM;
    if (b2.len) memcpy(out->body, b2.bytes, b2.len);
    out->body[b2.len] = '\0';
    out->body_len = b2.len;
    return RP_OK;
}

/* The call with an extra request header (the breaker's X-Reason): the
 * same answers. */
rp_status rp_mgmt_bridge_call_with(rp_mgmt_bridge *b, rp_http_method method, const char *path,
                                   const char *body, size_t body_len, const char *header,
                                   long timeout_ms, rp_mgmt_response *out) {
    RP_UNUSED(header);
    return rp_mgmt_bridge_call(b, method, path, body, body_len, timeout_ms, out);
}

char *rp_mgmt_bridge_scrub(const rp_mgmt_bridge *b, char *buf, size_t cap) {
    RP_UNUSED(b);
    RP_UNUSED(cap);
    return buf;
}

/* ---- the callers ----------------------------------------------------------------- */

static pcre2_code *rp_compile(const char *p) {
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    if (re == NULL) abort();
    return re;
}

static bool rp_visit(void *arg, const char *vhost, const char *name, rp_queue_type type,
                     bool is_dead_letter_queue) {
    RP_UNUSED(type);
    RP_UNUSED(is_dead_letter_queue);
    size_t *n = arg;
    if (vhost == NULL || name == NULL) abort();
    *n += strlen(vhost) + strlen(name);
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static pcre2_code *owned, *dlq;
    if (owned == NULL) {
        rp_log_setup(RP_LOG_ERROR, RP_LOG_FORMAT_TEXT); /* the reconcile's warnings: noise here */
        owned = rp_compile("^vibey\\.");
        dlq = rp_compile("(\\.dlq|\\.dead)$");
    }
    rp_answers = (rp_fuzz_reader){data, size};
    rp_requests = 0;
    uint8_t pick = rp_fuzz_byte(&rp_answers) % 4;
    uint8_t flags = rp_fuzz_byte(&rp_answers);
    static char bridge_token;
    rp_mgmt_broker *b = rp_mgmt_broker_new((rp_mgmt_bridge *)(void *)&bridge_token, NULL);
    if (b == NULL) return 0;
    rp_status st = RP_OK;
    switch (pick) {
    case 0: {
        static const char *const skip[] = {"vibey.reap.control"};
        rp_mgmt_dlx_options o = {.vhost = "/",
                                 .tap_queue = "vibey.reap.tap",
                                 .owned_pattern = owned,
                                 .skip = skip,
                                 .n_skip = 1,
                                 .dry_run = (flags & 1) != 0};
        rp_mgmt_dlx_stats s;
        st = rp_mgmt_dlx_reconcile(b, &o, &s);
        if (st == RP_OK && s.with_dlx > s.owned) abort();
        break;
    }
    case 1: {
        rp_mgmt_policy_options o;
        rp_mgmt_policy_options_default(&o);
        o.owned_pattern = "^vibey\\.";
        o.dead_letter_pattern = "(\\.dlq|\\.dead)$";
        o.exclude[0] = "vibey.reap.control";
        o.exclude[1] = "vibey.reap.tap";
        o.n_exclude = 2;
        o.dry_run = (flags & 1) != 0;
        o.verify_wait_ms = 1;
        o.poll_ms = 1;
        rp_report report;
        rp_report_init(&report, o.dry_run);
        rp_mgmt_policy_stats s;
        st = rp_mgmt_policy_reconcile(b, &o, &report, &s);
        rp_report_cleanup(&report);
        break;
    }
    case 2: {
        size_t n = 0, n_owned = 0;
        st = rp_mgmt_broker_each_owned(b, owned, dlq, rp_visit, &n, &n_owned);
        for (size_t page = 1; page < 4; page++) {
            rp_queue_page pg;
            if (rp_mgmt_broker_list(b, page, NULL, &pg) != RP_OK) break;
            for (size_t i = 0; i < pg.n; i++)
                if (pg.queues[i].name == NULL || pg.queues[i].vhost == NULL) abort();
            if (pg.last) break;
        }
        break;
    }
    default: {
        rp_wide_timeout_state state;
        int64_t ms = 0;
        const char *why = NULL;
        st = rp_mgmt_broker_wide_timeout(b, &state, &ms, &why);
        rp_mgmt_version v;
        if (rp_mgmt_broker_version(b, &v) == RP_OK && (v.major < 0 || v.minor < 0)) abort();
        break;
    }
    }
    (void)strlen(rp_mgmt_broker_last_error(b));
    RP_UNUSED(st);
    rp_mgmt_broker_free(b);
    return 0;
}
