/* The targeted check: judge a given set of queues, touching no other
 * queue's sightings (rp_pass.h, rp_pass_queues). It exists for broker
 * events (a consumer, channel or connection of an owned queue went away):
 * the daemon measures those queues at once instead of waiting for the next
 * sweep, with exactly the rules and the sighting behaviour of the sweep. */
#include <stdlib.h>
#include <string.h>

#include "rp_object.h"
#include "rp_pass_internal.h"

static rp_status rp_check_one(rp__pass *p, const rp_queue_ref *ref) {
    char *subject = NULL;
    rp_status st = rp_object_queue(ref->vhost, ref->name, &subject);
    if (st != RP_OK) return st;
    if (rp__strs_has(&p->read, subject)) { /* listed twice: checked once */
        free(subject);
        return RP_OK;
    }
    const rp_broker_port *b = &p->ports->broker;
    rp_queue_facts q;
    memset(&q, 0, sizeof q);
    rp_status gst = b->get_queue(b->self, ref->vhost, ref->name, &q);
    if (gst == RP_ERR_NOT_FOUND) {
        /* Gone: it holds nothing any more, so what was sighted on it
         * clears. */
        st = rp__strs_add(&p->read, subject);
        free(subject);
        return st;
    }
    if (gst != RP_OK) {
        free(subject);
        p->broker_whole = false;
        return rp__pass_unreadable(p, RP_SOURCE_BROKER, "reading a queue", gst);
    }
    /* The port lends q until its next call: judged before any other. The
     * adapter may answer for another name only if it is broken; the
     * reference is what was asked, so judge that name. */
    q.vhost = ref->vhost;
    q.name = ref->name;
    st = rp__strs_add(&p->read, subject);
    free(subject);
    if (st == RP_OK) st = rp__pass_judge_queue(p, &q, false);
    return st;
}

rp_status rp_pass_queues(const rp_ports *ports, const rp_pass_options *opt,
                         const rp_queue_ref *queues, size_t n, rp_report *out) {
    rp_report_init(out, opt ? opt->dry_run : false);
    if (opt != NULL) {
        out->max_verdicts = opt->max_report_verdicts;
        out->on_verdict = opt->on_verdict;
        out->on_verdict_arg = opt->on_verdict_arg;
    }
    if (ports == NULL || opt == NULL || opt->owned_queue_pattern == NULL ||
        opt->dead_letter_queue_pattern == NULL || (n > 0 && queues == NULL))
        return RP_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        if (queues[i].vhost == NULL || queues[i].name == NULL) return RP_ERR_INVALID;
    if (ports->broker.get_queue == NULL) return RP_ERR_INVALID;
    rp__pass p;
    rp__pass_init(&p, ports, opt, out);
    p.targeted = true;
    p.broker_ran = true;
    rp_status st = n > 0 ? rp__pass_load_open(&p) : RP_OK;
    for (size_t i = 0; i < n && st == RP_OK; i++) {
        if (opt->should_stop && opt->should_stop(opt->stop_arg)) {
            st = rp__pass_note(&p, "broker: the check stopped early (shutting down)");
            break;
        }
        st = rp_check_one(&p, &queues[i]);
    }
    if (st == RP_OK) st = rp__pass_release_held(&p);
    if (st == RP_OK) st = rp__pass_routes(&p, false);
    if (st == RP_OK) st = rp__pass_clear(&p);
    rp__pass_cleanup(&p);
    return st;
}
