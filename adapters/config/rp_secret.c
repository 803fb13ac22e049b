#include "rp_secret.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RP_SECRET_MAX 4096

rp_status rp_secret_resolve(const char *from_env, const char *path, char **out, char *err,
                            size_t errlen) {
    *out = NULL;
    if (from_env && *from_env) {
        *out = strdup(from_env);
        return *out ? RP_OK : RP_ERR_NOMEM;
    }
    if (path == NULL || *path == '\0') {
        *out = strdup("");
        return *out ? RP_OK : RP_ERR_NOMEM;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return RP_ERR_IO;
    }
    char *buf = calloc(1, RP_SECRET_MAX + 2);
    if (buf == NULL) {
        fclose(f);
        return RP_ERR_NOMEM;
    }
    size_t n = fread(buf, 1, RP_SECRET_MAX + 1, f);
    int failed = ferror(f);
    fclose(f);
    if (failed || n > RP_SECRET_MAX) {
        snprintf(err, errlen, "cannot read %s: %s", path,
                 failed ? "read error" : "larger than 4 KiB, not a password");
        rp_secret_free(buf);
        return RP_ERR_IO;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = '\0';
    if (memchr(buf, '\0', n) != NULL) {
        snprintf(err, errlen, "%s holds a NUL byte, not a password", path);
        rp_secret_free(buf);
        return RP_ERR_IO;
    }
    *out = buf;
    return RP_OK;
}

void rp_secret_free(char *s) {
    if (s == NULL) return;
    explicit_bzero(s, strlen(s));
    free(s);
}
