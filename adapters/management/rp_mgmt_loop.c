#include "rp_mgmt_loop.h"

#include <event2/thread.h>
#include <pthread.h>
#include <stdlib.h>

struct rp_mgmt_loop {
    struct event_base *base;
    rp_mgmt_bridge *bridge;
    struct event *stop_ev;
    pthread_t thread;
    bool running;
};

static void *rp_loop_main(void *arg) {
    rp_mgmt_loop *l = arg;
    event_base_loop(l->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

static void rp_loop_on_stop(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    event_base_loopbreak(((rp_mgmt_loop *)arg)->base);
}

rp_mgmt_loop *rp_mgmt_loop_new(const rp_mgmt_http_params *params, const char **err) {
    static const char *dummy;
    if (err == NULL) err = &dummy;
    if (evthread_use_pthreads() != 0) {
        *err = "libevent has no pthreads support";
        return NULL;
    }
    rp_mgmt_loop *l = calloc(1, sizeof *l);
    if (l == NULL) {
        *err = "out of memory";
        return NULL;
    }
    l->base = event_base_new();
    if (l->base == NULL) {
        *err = "cannot create an event loop";
        free(l);
        return NULL;
    }
    rp_mgmt_http *h = rp_mgmt_http_new(l->base, params, err);
    if (h == NULL) {
        event_base_free(l->base);
        free(l);
        return NULL;
    }
    l->bridge = rp_mgmt_bridge_new(l->base, h);
    l->stop_ev = event_new(l->base, -1, 0, rp_loop_on_stop, l);
    if (l->bridge == NULL || l->stop_ev == NULL) {
        *err = "out of memory";
        rp_mgmt_loop_free(l);
        return NULL;
    }
    if (pthread_create(&l->thread, NULL, rp_loop_main, l) != 0) {
        *err = "cannot start the management loop thread";
        rp_mgmt_loop_free(l);
        return NULL;
    }
    l->running = true;
    return l;
}

rp_mgmt_bridge *rp_mgmt_loop_bridge(rp_mgmt_loop *l) { return l ? l->bridge : NULL; }

void rp_mgmt_loop_free(rp_mgmt_loop *l) {
    if (l == NULL) return;
    rp_mgmt_bridge_close(l->bridge);
    if (l->running) {
        event_active(l->stop_ev, 0, 0);
        pthread_join(l->thread, NULL);
    }
    /* The loop has stopped: this thread owns the base now. */
    rp_mgmt_bridge_free(l->bridge);
    if (l->stop_ev) event_free(l->stop_ev);
    event_base_free(l->base);
    free(l);
}
