/* libFuzzer: the management API's JSON and text readers
 * (adapters/management/rp_mgmt_parse.h): a queue page, one queue, an error
 * body, the version in /api/overview and as text, and the broker-wide
 * consumer_timeout in /api/config/effective. A broker (or whatever answers
 * on its port) may send anything: every reader refuses or gives values that
 * hold their invariants.
 *
 * The input: byte 0 picks the reader (modulo 7: page, queue, error reason,
 * is_error, version text, overview, effective config), the rest is the
 * body. The same body is also given to the page reader twice in a row into
 * one page, as the broker adapter reuses its page. */
#include <stdlib.h>
#include <string.h>

#include "rp_mgmt_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void rp_check_page(const rp_mgmt_page *p) {
    if (p->n > p->cap) abort();
    for (size_t i = 0; i < p->n; i++) {
        const rp_queue_facts *q = &p->facts[i];
        if (q->name == NULL || q->vhost == NULL) abort();
        if (q->owned || q->is_dead_letter_queue) abort();
        if (!p->extra[i].counts_known && (q->ready != 0 || q->unacked != 0)) abort();
        (void)strlen(q->name);
        (void)strlen(q->vhost);
        if (p->extra[i].policy) (void)strlen(p->extra[i].policy);
        if (p->extra[i].operator_policy) (void)strlen(p->extra[i].operator_policy);
    }
}

static void rp_check_version(const rp_mgmt_version *v) {
    if (v->major < 0 || v->minor < 0 || v->patch < 0) abort();
    if (memchr(v->text, '\0', sizeof v->text) == NULL) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    int pick = data[0] % 7;
    size_t len = size - 1;
    char *body = malloc(len + 1);
    if (body == NULL) return 0;
    memcpy(body, data + 1, len);
    body[len] = '\0';
    char err[128];
    switch (pick) {
    case 0:
    case 1: {
        rp_mgmt_page p;
        rp_mgmt_page_init(&p);
        for (int round = 0; round < 2; round++) {
            rp_status st = pick == 0 ? rp_mgmt_parse_page(body, len, &p, err, sizeof err)
                                     : rp_mgmt_parse_queue(body, len, &p, err, sizeof err);
            if (st == RP_OK) {
                rp_check_page(&p);
                if (pick == 1 && p.n != 1) abort();
            } else if (st != RP_ERR_INVALID && st != RP_ERR_NOMEM) {
                abort();
            } else if (memchr(err, '\0', sizeof err) == NULL) {
                abort();
            }
        }
        rp_mgmt_page_cleanup(&p);
        break;
    }
    case 2: {
        char buf[64];
        char *out = rp_mgmt_error_reason(body, len, buf, sizeof buf);
        if (out != buf) abort();
        size_t n = strnlen(buf, sizeof buf);
        if (n == sizeof buf || n == 0) abort();
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) abort();
        break;
    }
    case 3: (void)rp_mgmt_is_error(body, len, "page_out_of_range"); break;
    case 4: {
        rp_mgmt_version v;
        if (rp_mgmt_version_parse(body, &v)) rp_check_version(&v);
        break;
    }
    case 5: {
        rp_mgmt_version v;
        rp_status st = rp_mgmt_parse_overview_version(body, len, &v);
        if (st == RP_OK) rp_check_version(&v);
        break;
    }
    default: {
        bool found = false, enabled = false;
        int64_t ms = 0;
        rp_status st = rp_mgmt_parse_effective_timeout(body, &found, &enabled, &ms);
        if (st == RP_OK && enabled && (!found || ms <= 0)) abort();
        break;
    }
    }
    free(body);
    return 0;
}
