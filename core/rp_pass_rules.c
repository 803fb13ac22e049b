/* Issue 18 item 5: when reaper's policies let a pass be ok
 * (rp_pass_rules.h). */
#include "rp_pass_rules.h"

#include <stdio.h>
#include <stdlib.h>

#include "rp_text.h"

bool rp_pass_policies_ok(const rp_policy_check *policies, size_t n, bool dry_run) {
    if (dry_run || n == 0) return true;
    if (policies == NULL) return false;
    for (size_t i = 0; i < n; i++)
        if (!policies[i].verified) return false;
    return true;
}

rp_status rp_pass_policies_settle(rp_report *r, size_t from, bool dry_run) {
    if (r == NULL) return RP_ERR_INVALID;
    if (from >= r->n_policies) return RP_OK;
    const rp_policy_check *mine = r->policies + from;
    size_t n = r->n_policies - from;
    if (rp_pass_policies_ok(mine, n, dry_run)) return RP_OK;
    r->ok = false;
    for (size_t i = 0; i < n; i++) {
        if (mine[i].verified) continue;
        char *note = NULL;
        rp_status st = rp_text_format(&note, "policy %s is not verified: the pass is not ok",
                                      mine[i].name ? mine[i].name : "?");
        if (st == RP_OK) st = rp_report_add_note(r, note);
        free(note);
        if (st != RP_OK) return st;
    }
    return RP_OK;
}
