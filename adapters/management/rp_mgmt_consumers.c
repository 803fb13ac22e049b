/* Issue 18 item 4: the connections of a queue's consumers, as the
 * management API lists them (rp_mgmt_parse.h). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "rp_mgmt_parse.h"

void rp_mgmt_names_free(char **names, size_t n) {
    for (size_t i = 0; names != NULL && i < n; i++) free(names[i]);
    free(names);
}

rp_status rp_mgmt_parse_consumer_connections(const char *body, size_t len, char ***names,
                                             size_t *n) {
    *names = NULL;
    *n = 0;
    json_t *root = body ? json_loadb(body, len, 0, NULL) : NULL;
    if (!json_is_object(root)) {
        json_decref(root);
        return RP_ERR_INVALID;
    }
    json_t *list = json_object_get(root, "consumer_details");
    size_t cap = json_is_array(list) ? json_array_size(list) : 0;
    char **v = cap ? calloc(cap, sizeof *v) : NULL;
    if (cap && v == NULL) {
        json_decref(root);
        return RP_ERR_NOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < cap; i++) {
        json_t *ch = json_object_get(json_array_get(list, i), "channel_details");
        const char *conn = json_string_value(json_object_get(ch, "connection_name"));
        if (conn == NULL || conn[0] == '\0') continue;
        bool dup = false;
        for (size_t j = 0; j < k && !dup; j++) dup = strcmp(v[j], conn) == 0;
        if (dup) continue;
        v[k] = strdup(conn);
        if (v[k] == NULL) {
            rp_mgmt_names_free(v, k);
            json_decref(root);
            return RP_ERR_NOMEM;
        }
        k++;
    }
    json_decref(root);
    if (k == 0) {
        free(v);
        v = NULL;
    }
    *names = v;
    *n = k;
    return RP_OK;
}
