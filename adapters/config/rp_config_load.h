/*
 * rp_config_load.h - loading the configuration: the YAML file (libyaml), then
 * the environment over it, then the whole-config validation of core
 * (rp_config.h says what each key is and how values are typed).
 *
 * The file is one YAML document whose root is a mapping, nested as in
 * CONTRACT section 3 (block or flow style). Refused, each as a problem that
 * names the key (or, for the file as a whole, the path): malformed YAML (with
 * line and column), a root that is not a mapping, more than one document, a
 * duplicate key, an unknown key (with "did you mean"), a dotted key ("reap.x:"
 * must be written nested), an alias (*x: so a "billion laughs" document costs
 * nothing), a YAML tag (!!str), a value of the wrong type or shape. The file
 * may be at most RP_CONFIG_FILE_MAX bytes. An empty file, or one with only
 * comments, is an empty mapping.
 *
 * The environment: REAPER_<SECTION>_<KEY> in upper case, nested sections
 * joined the same way (REAPER_BROKER_TLS_CA_FILE); its value is typed as an
 * unquoted YAML scalar, a list is comma-separated. It wins over the file.
 * An unknown REAPER_* variable is a problem (with "did you mean"), except the
 * names in RP_CONFIG_ENV_IGNORED, which belong to the build and test tools,
 * and the service links a kubelet injects for a Service whose name starts
 * with "reaper" (REAPER_SERVICE_HOST, REAPER_PORT_9464_TCP_ADDR...: name and
 * value both of that shape, rp_config_env_is_service_link), which are
 * passed over: rp_config_env_service_links() lists them for a debug line.
 * When a variable appears twice in envp the first one counts, as getenv().
 *
 * Ownership: nothing here keeps a pointer to an argument. Problems are
 * added to the caller's list (rp_config_problems_init/cleanup).
 */
#ifndef RP_CONFIG_LOAD_H
#define RP_CONFIG_LOAD_H

#include <stdbool.h>
#include <stddef.h>

#include <stdio.h>

#include "rp_common.h"
#include "rp_config.h"
#include "rp_status.h"

#define RP_CONFIG_FILE_MAX (1024 * 1024)

/* Variables that start with REAPER_ but are not configuration keys. */
#define RP_CONFIG_ENV_IGNORED {"REAPER_SOURCE_DIR"}

/* Builds the whole configuration: rp_config_init(out), then the file at path
 * (none when path is NULL: the environment and the defaults compose the
 * whole configuration), then the REAPER_* variables of envp (NULL-terminated
 * "NAME=value" strings, e.g. environ; NULL for none), then
 * rp_config_validate(). Every problem found is added to *problems: it does
 * not stop at the first. After malformed YAML the environment is still
 * read, but the whole-config validation is skipped (its findings would be
 * about a half-read file).
 *
 * *out is always left initialised: call rp_config_cleanup(out) whatever the
 * result. Returns RP_OK (no problem: *out is ready to use), RP_ERR_CONFIG
 * (problems), RP_ERR_IO (the file could not be read; a problem says why:
 * path and strerror), RP_ERR_TOO_LARGE (the file is over
 * RP_CONFIG_FILE_MAX) or RP_ERR_NOMEM. On anything but RP_OK, *out must not
 * be used: print the problems and exit 2. */
rp_status rp_config_load(const char *path, char *const *envp, rp_config *out,
                         rp_config_problems *problems) RP_MUSTCHECK;

/* rp_config_load over the process's environment (environ): a reload's
 * reading (app/rp_signals.h's load). */
rp_status rp_config_load_environ(const char *path, rp_config *out,
                                 rp_config_problems *problems) RP_MUSTCHECK;

/* rp_config_load for a command line: on anything but RP_OK every problem
 * is written to f as "PROG: message" (then "... and N more problems" when
 * some were left out, or why nothing could be loaded), then "PROG:
 * configuration refused (N problems)", and *out is cleaned up. Returns
 * rp_config_load's status. */
rp_status rp_config_load_cli(const char *prog, const char *path, char *const *envp,
                             rp_config *out, FILE *f) RP_MUSTCHECK;

/* Applies one YAML document held in memory (len bytes, need not be
 * NUL-terminated) onto *cfg, which rp_config_init() filled. name is the
 * file name used in messages and origins (recorded as cfg->path). Does not
 * validate. Returns RP_OK, RP_ERR_CONFIG (problems were added),
 * RP_ERR_TOO_LARGE or RP_ERR_NOMEM. When malformed is not NULL it is set to
 * whether the YAML itself was broken (so parsing stopped early). */
rp_status rp_config_load_yaml_buffer(const void *data, size_t len, const char *name,
                                     rp_config *cfg, rp_config_problems *problems,
                                     bool *malformed) RP_MUSTCHECK;

/* Applies the REAPER_* variables of envp onto *cfg. Returns RP_OK,
 * RP_ERR_CONFIG (problems were added) or RP_ERR_NOMEM. */
rp_status rp_config_apply_env(rp_config *cfg, char *const *envp,
                              rp_config_problems *problems) RP_MUSTCHECK;

/* Counts the REAPER_* variables of envp that rp_config_apply_env() passed
 * over as service links, and writes their names, comma-separated, into buf
 * (NUL-terminated; names that do not fit whole are left out; cap 0 for
 * none). Never the values. Returns the count. */
size_t rp_config_env_service_links(char *const *envp, char *buf, size_t cap);

/* Reads a whole regular file of at most max bytes into a heap buffer
 * (*data, NUL-terminated, the caller frees; *len its length). A failure is
 * added to *problems with the path and strerror. Returns RP_OK, RP_ERR_IO,
 * RP_ERR_TOO_LARGE or RP_ERR_NOMEM. */
rp_status rp_config_read_file(const char *path, size_t max, char **data, size_t *len,
                              rp_config_problems *problems) RP_MUSTCHECK;

#endif
