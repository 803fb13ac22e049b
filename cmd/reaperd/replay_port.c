/* The replays part's ports (replay_port.h), one adapter each: the store
 * side over the pass runner's session (adapters/postgres/rp_pg_replay.h;
 * its settle goes through the runner's gate port, wrapped with the events
 * feed), the publish port over the replay channel (rp_amqp_replay_port.h). */
#include "replay_port.h"

#include <stdlib.h>

#include "rp_amqp_replay_port.h"
#include "rp_pg_replay.h"

struct rp_replay_wiring {
    rp_pg_replay_src store;    /* the store port's self */
    rp_amqp_replay_port *amqp; /* the publish port's self */
    rp_replay_publish_port publish;
};

rp_replay_wiring *rp_replay_wiring_new(rp_pass_runner *runner,
                                       rp_amqp_publisher *const *publisher,
                                       const bool *broker_up, const char *broker_url) {
    rp_replay_wiring *w = calloc(1, sizeof *w);
    if (w == NULL) return NULL;
    w->store = (rp_pg_replay_src){runner->conn, runner->store, &runner->cfg, &runner->ports.gates};
    w->amqp = rp_amqp_replay_port_new(publisher, broker_up, broker_url, &w->publish);
    if (w->amqp == NULL) {
        free(w);
        return NULL;
    }
    return w;
}

void rp_replay_wiring_ports(rp_replay_wiring *w, rp_replay_store_port *store,
                            rp_replay_publish_port *publish) {
    rp_pg_replay_store_port(&w->store, store);
    *publish = w->publish;
}

void rp_replay_wiring_free(rp_replay_wiring *w) {
    if (w == NULL) return;
    rp_amqp_replay_port_free(w->amqp);
    free(w);
}
