#include "rp_park.h"

#include "rp_judge.h"
#include "rp_publish.h"

rp_status rp_park_dead_letter(const rp_ports *ports, const rp_park_site *site,
                              const rp_dl_message *msg, bool dry_run, rp_report *report,
                              rp_park_outcome *outcome) {
    *outcome = RP_PARKED_ALREADY;
    rp_dead_letter d;
    rp_verdict v;
    rp_verdict_init(&v);
    rp_status st = rp_dead_letter_examine(&msg->headers, site->vhost ? site->vhost : "", site->queue, site->dlq_pattern,
                                          msg->body, &d);
    if (st == RP_OK) st = rp_judge_dead_letter(&d, site->vhost, site->queue, &v);
    if (st != RP_OK) goto done;

    if (dry_run) {
        bool parked = false;
        st = ports->dead_letters.is_parked(ports->dead_letters.self, &d, &parked);
        if (st != RP_OK || parked) goto done;
        st = rp_report_add_verdict(report, &v);
        if (st == RP_OK) *outcome = RP_PARKED_WOULD;
        goto done;
    }

    rp_park_result res = {0};
    st = ports->dead_letters.park(ports->dead_letters.self, site->vhost, site->queue, msg, &d, &v,
                                  &res);
    if (st != RP_OK || !res.parked) goto done;
    st = rp_publish_event(ports, &res.event, &v, report);
    if (st == RP_OK) st = rp_report_add_verdict(report, &v);
    if (st == RP_OK) *outcome = RP_PARKED_NEW;
done:
    rp_verdict_cleanup(&v);
    rp_dead_letter_cleanup(&d);
    return st;
}
