/*
 * rp_secret.h - reading the broker password from the environment or a file.
 *
 * Ownership: *out is a heap copy the caller frees with rp_secret_free, which
 * wipes it first. err never holds the secret (only the path and strerror).
 */
#ifndef RP_SECRET_H
#define RP_SECRET_H

#include <stddef.h>

#include "rp_common.h"
#include "rp_status.h"

/* from_env wins when non-empty; else the file at path (trailing newlines
 * removed, at most 4 KiB); else *out is an empty string. RP_ERR_IO with err
 * set when the file cannot be read or is too large. */
rp_status rp_secret_resolve(const char *from_env, const char *path, char **out, char *err,
                            size_t errlen) RP_MUSTCHECK;
void rp_secret_free(char *s);

#endif
