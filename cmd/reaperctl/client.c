/* reaperctl's request and its reply (client.h), over rp_amqp_ask. */
#include "client.h"

#include <stdio.h>
#include <stdlib.h>

#include "rp_amqp_open.h"

rp_status rp_ctl_request(const rp_config *cfg, const char *password, const char *ct,
                         const void *body, size_t len, int timeout_ms, rp_ctl_reply *out,
                         char *err, size_t errlen) {
    /* reaperd's broker user: the user of broker.url (reaperctl runs with
     * reaperd's configuration), or REAPERCTL_REAPERD_USER when it logs in
     * as someone else. */
    char reaperd[256] = "";
    const char *env = getenv("REAPERCTL_REAPERD_USER");
    if (env != NULL && *env != '\0')
        snprintf(reaperd, sizeof reaperd, "%s", env);
    else if (!rp_amqp_url_user(cfg->broker.url, reaperd, sizeof reaperd))
        reaperd[0] = '\0';
    rp_amqp_ask_opts o = {
        .password = password,
        .content_type = ct,
        .client = "reaperctl",
        .reaperd_user = reaperd[0] ? reaperd : NULL,
        .timeout_ms = timeout_ms,
    };
    rp_status st = rp_amqp_ask(cfg, &o, body, len, out, err, errlen);
    if (out->forged > 0)
        fprintf(stderr,
                "reaperctl: ignored %u reply(ies) to this request not from reaperd (app_id and "
                "user_id must be \"reaperd\" and \"%s\")\n",
                out->forged, reaperd);
    return st;
}

void rp_ctl_reply_cleanup(rp_ctl_reply *r) { rp_amqp_ask_cleanup(r); }
