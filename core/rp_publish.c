#include "rp_publish.h"

#include <inttypes.h>
#include <stdlib.h>

#include "rp_text.h"

rp_status rp_publish_event(const rp_ports *ports, const rp_event_ref *ev, const rp_verdict *v,
                           rp_report *report) {
    rp_ledger_event le = {
        .seq = ev->seq,
        .at = ev->at,
        .kind = RP_LEDGER_QUEUE_REAPED,
        .verdict = v,
        .answer = NULL,
    };
    /* No publisher (a store-only reaper, --once): the ledger is the record. */
    if (ports->publisher.publish == NULL) return RP_OK;
    rp_status pst = ports->publisher.publish(ports->publisher.self, &le);
    if (pst == RP_OK) return RP_OK;
    char *note = NULL;
    rp_status st = rp_text_format(&note,
                                  "ledger event %" PRId64
                                  " is committed but was not published to the events exchange: %s",
                                  ev->seq, rp_status_string(pst));
    if (st != RP_OK) return st;
    st = rp_report_add_note(report, note);
    free(note);
    return st;
}

rp_status rp_publish_answer(const rp_publisher_port *publisher, int64_t gate_id, const char *by,
                            const char *note, const rp_answer_result *res) {
    if (publisher->publish == NULL || res == NULL || !res->committed) return RP_OK;
    rp_gate_answered a = {
        .gate_id = gate_id,
        .job_id = res->job_id,
        .kind = res->kind,
        .choice = res->choice,
        .outcome = res->outcome,
        .by = by,
        .note = note,
        .vhost = res->vhost[0] != '\0' ? res->vhost : NULL,
    };
    rp_ledger_event le = {
        .seq = res->event.seq,
        .at = res->event.at,
        .kind = RP_LEDGER_GATE_ANSWERED,
        .answer = &a,
    };
    return publisher->publish(publisher->self, &le);
}

static rp_status rp_gate_feed_list(void *self, const rp_gate_query *q, rp_gate **gates,
                                   size_t *n, rp_gate_page *page) {
    rp_gate_feed *f = self;
    return f->inner.list(f->inner.self, q, gates, n, page);
}

static rp_status rp_gate_feed_answer(void *self, int64_t gate_id, rp_choice choice,
                                     const char *by, const char *note,
                                     rp_answer_result *out) {
    rp_gate_feed *f = self;
    rp_status st = f->inner.answer(f->inner.self, gate_id, choice, by, note, out);
    /* The answer is committed: a feed that fails loses nothing of it. */
    if (st == RP_OK) (void)rp_publish_answer(&f->publisher, gate_id, by, note, out);
    return st;
}

void rp_gate_feed_wrap(rp_gate_feed *f, rp_ports *ports) {
    f->inner = ports->gates;
    f->publisher = ports->publisher;
    ports->gates.self = f;
    ports->gates.list = f->inner.list ? rp_gate_feed_list : NULL;
    ports->gates.answer = f->inner.answer ? rp_gate_feed_answer : NULL;
}
