/* One pass asked for and what came of it (rp_pass_request.h). */
#include "rp_pass_request.h"

#include <stdlib.h>
#include <string.h>

void rp_pass_request_init(rp_pass_request *req, rp_pass_scope scope, bool dry_run) {
    memset(req, 0, sizeof *req);
    req->scope = scope;
    req->dry_run = dry_run;
    rp_report_init(&req->report, dry_run);
}

void rp_pass_request_cleanup(rp_pass_request *req) {
    free(req->project);
    rp_report_cleanup(&req->report);
    memset(req, 0, sizeof *req);
}
