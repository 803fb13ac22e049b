/*
 * rp_config_env.c - the environment overlay: REAPER_<SECTION>_<KEY>=value.
 * The names come from core's table (rp_config_env_lookup); values are typed
 * by rp_config_set_scalar as unquoted scalars. The variables a kubelet
 * injects for a Service named reaper... (rp_config_env_is_service_link) are
 * passed over.
 */
#include <stdio.h>
#include <string.h>

#include "rp_config.h"
#include "rp_config_load.h"

static bool rp_env_ignored(const char *name, size_t len) {
    static const char *const ignored[] = RP_CONFIG_ENV_IGNORED;
    for (size_t i = 0; i < RP_ARRAY_LEN(ignored); i++)
        if (strlen(ignored[i]) == len && memcmp(ignored[i], name, len) == 0) return true;
    return false;
}

rp_status rp_config_apply_env(rp_config *cfg, char *const *envp,
                              rp_config_problems *problems) {
    if (envp == NULL) return RP_OK;
    static const char prefix[] = "REAPER_";
    bool seen[RP_CFG_KEY_COUNT_] = {false};
    size_t before = rp_config_problems_count(problems);
    rp_config_origin env = {RP_CONFIG_ENV, 0, 0};
    for (char *const *e = envp; *e != NULL; e++) {
        const char *entry = *e;
        if (strncmp(entry, prefix, sizeof prefix - 1) != 0) continue;
        const char *eq = strchr(entry, '=');
        if (eq == NULL) continue;
        size_t nlen = (size_t)(eq - entry);
        if (rp_env_ignored(entry, nlen)) continue;
        int id = rp_config_env_lookup(entry, nlen);
        if (id < 0 && rp_config_env_is_service_link(entry, nlen, eq + 1, strlen(eq + 1)))
            continue;
        if (id < 0) {
            rp_config_refuse_unknown(cfg, entry, nlen, true, env, problems);
            continue;
        }
        if (seen[id]) continue; /* the first one counts, as getenv() */
        seen[id] = true;
        rp_status st = rp_config_set_scalar(cfg, (rp_config_key_id)id, eq + 1, strlen(eq + 1),
                                            false, env, problems);
        if (st == RP_ERR_NOMEM) return st;
    }
    if (problems != NULL && problems->nomem) return RP_ERR_NOMEM;
    return rp_config_problems_count(problems) > before ? RP_ERR_CONFIG : RP_OK;
}

size_t rp_config_env_service_links(char *const *envp, char *buf, size_t cap) {
    size_t count = 0, used = 0;
    bool full = false;
    if (cap > 0) buf[0] = '\0';
    if (envp == NULL) return 0;
    for (char *const *e = envp; *e != NULL; e++) {
        const char *entry = *e;
        if (strncmp(entry, "REAPER_", 7) != 0) continue;
        const char *eq = strchr(entry, '=');
        if (eq == NULL) continue;
        size_t nlen = (size_t)(eq - entry);
        if (rp_env_ignored(entry, nlen) || rp_config_env_lookup(entry, nlen) >= 0 ||
            !rp_config_env_is_service_link(entry, nlen, eq + 1, strlen(eq + 1)))
            continue;
        count++;
        if (full || cap == 0) continue;
        int n = snprintf(buf + used, cap - used, "%s%.*s", used ? "," : "", (int)nlen, entry);
        if (n < 0 || (size_t)n >= cap - used) {
            buf[used] = '\0'; /* whole names only: stop at the last one that fit */
            full = true;
        } else {
            used += (size_t)n;
        }
    }
    return count;
}
