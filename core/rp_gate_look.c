/* A gate looked inside (rp_gate_look.h). */
#include "rp_gate_look.h"

#include <stdlib.h>
#include <string.h>

void rp_gate_look_init(rp_gate_look *l) {
    memset(l, 0, sizeof *l);
    rp_gate_init(&l->gate);
}

void rp_gate_look_cleanup(rp_gate_look *l) {
    rp_gate_cleanup(&l->gate);
    free(l->job_kind);
    free(l->vhost);
    free(l->headers_json);
    free(l->properties_json);
    free(l->window_base64);
    memset(l, 0, sizeof *l);
}
