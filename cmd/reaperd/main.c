/*
 * reaperd - the reaper daemon: command line, configuration, then the loop.
 *
 * Exit codes (CONTRACT section 4): 0 ok; 1 the daemon could not run (an
 * http.listen that cannot be bound included); 2 usage or configuration
 * error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "rp_http_check.h"
#include "rp_pg_migrate.h"
#include "once.h"
#include "rp_config.h"
#include "rp_config_load.h"
#include "rp_log.h"
#include "rp_pg_conn.h"
#include "rp_reaperd_args.h"
#include "rp_reaperd_help.h"
#include "rp_secret.h"
#include "version.h"

extern char **environ;

static void rp_usage(FILE *f) { fputs(rp_reaperd_help, f); }

int main(int argc, char **argv) {
    rp_reaperd_args a;
    rp_reaperd_args_error e;
    if (!rp_reaperd_args_parse(argc, argv, &a, &e)) {
        fprintf(stderr, "reaperd: %s%s%s\n", e.pre, e.arg ? e.arg : "", e.post);
        if (e.usage) rp_usage(stderr);
        return 2;
    }
    if (a.version) {
        printf("reaperd %s\n", RP_VERSION_STRING);
        return 0;
    }
    if (a.help) {
        rp_usage(stdout);
        return 0;
    }
    const char *path = a.config, *project = a.project;
    int check = a.check, migrate = a.migrate, once = a.once, dry_run = a.dry_run, json = a.json,
        health = a.health, doctor = a.doctor;

    /* In a container, HEALTHCHECK runs reaperd --healthcheck beside the
     * daemon (process 1) without its arguments: take its --config. */
    char pid1_config[1024];
    if (health && path == NULL) path = rp_healthcheck_pid1_config(pid1_config, sizeof pid1_config);

    /* libpq's own reading of store.dsn, so that every spelling of a
     * password it would decode is refused (and never printed). */
    rp_config_set_dsn_inspector(rp_pg_dsn_leak);
    rp_config cfg;
    if (rp_config_load_cli("reaperd", path, environ, &cfg, stderr) != RP_OK) return 2;

    if (health) {
        char why[512];
        int rc = rp_healthcheck(cfg.http.listen, 5000, why, sizeof why);
        fprintf(rc == 0 ? stdout : stderr, "reaperd: %s\n", why);
        rp_config_cleanup(&cfg);
        return rc;
    }

    /* The broker password: the environment, else the password file. Only
     * --migrate (which talks to the store alone) goes without. */
    char *password = NULL;
    char err[512];
    if (!migrate &&
        rp_secret_resolve(cfg.broker.password, cfg.broker.password_file, &password, err,
                          sizeof err) != RP_OK) {
        fprintf(stderr, "reaperd: broker.password_file: %s (or set REAPER_BROKER_PASSWORD)\n",
                err);
        fprintf(stderr, "reaperd: configuration refused (1 problem)\n");
        rp_config_cleanup(&cfg);
        return 2;
    }

    if (check) {
        char *text = NULL;
        if (rp_config_format(&cfg, &text, NULL) != RP_OK) {
            fprintf(stderr, "reaperd: out of memory\n");
            rp_secret_free(password);
            rp_config_cleanup(&cfg);
            return 1;
        }
        fputs(text, stdout);
        free(text);
        rp_secret_free(password);
        rp_config_cleanup(&cfg);
        return 0;
    }

    rp_log_setup(cfg.log.level, cfg.log.format);
    /* Once, at start: the Service variables passed over (a reload reads
     * the same environment). */
    if (rp_log_level_now() <= RP_LOG_DEBUG) {
        char names[1024];
        size_t n = rp_config_env_service_links(environ, names, sizeof names);
        if (n > 0) {
            char count[24];
            snprintf(count, sizeof count, "%zu", n);
            RP_DEBUG("ignored the environment variables a kubelet sets for Services (service "
                     "links), not configuration keys",
                     "count", count, "variables", names, NULL);
        }
    }
    if (doctor) {
        int rc = rp_doctor_cli(&cfg, password, json);
        rp_secret_free(password);
        rp_config_cleanup(&cfg);
        return rc;
    }
    if (migrate || once) {
        int rc = migrate ? rp_pg_migrate_cli(&cfg) : rp_once_run(&cfg, password, project, dry_run, json);
        rp_secret_free(password);
        rp_config_cleanup(&cfg);
        return rc;
    }
    if (password == NULL || *password == '\0')
        RP_WARN("no broker password configured; set broker.password_file or REAPER_BROKER_PASSWORD",
                "key", "broker.password_file", NULL);
    int rc = rp_daemon_run(&cfg, password);
    rp_secret_free(password);
    rp_config_cleanup(&cfg);
    return rc;
}
