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
