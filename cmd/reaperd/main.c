/*
 * reaperd - the reaper daemon: command line, configuration, then the loop.
 *
 * Exit codes (CONTRACT section 4): 0 ok; 1 the daemon could not run (an
 * http.listen that cannot be bound included); 2 usage or configuration
 * error.
 */
#include <errno.h>
#include <getopt.h>
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
#include "rp_reaperd_help.h"
#include "rp_secret.h"
#include "version.h"

extern char **environ;

static void rp_usage(FILE *f) { fputs(rp_reaperd_help, f); }

int main(int argc, char **argv) {
    /* The flags are set by getopt_long itself (struct option's flag). */
    int check = 0, migrate = 0, once = 0, dry_run = 0, json = 0, health = 0, doctor = 0;
    enum { OPT_PROJECT = 256 };
    const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"check-config", no_argument, &check, 1},
        {"migrate", no_argument, &migrate, 1},
        {"once", no_argument, &once, 1},
        {"project", required_argument, NULL, OPT_PROJECT},
        {"dry-run", no_argument, &dry_run, 1},
        {"json", no_argument, &json, 1},
        {"healthcheck", no_argument, &health, 1},
        {"doctor", no_argument, &doctor, 1},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = NULL;
    const char *project = NULL;
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":c:Vh", opts, NULL)) != -1) {
        switch (ch) {
        case 0: /* a flag */
            break;
        case 'c':
            path = optarg;
            break;
        case OPT_PROJECT:
            project = optarg;
            break;
        case 'V':
            printf("reaperd %s\n", RP_VERSION_STRING);
            return 0;
        case 'h':
            rp_usage(stdout);
            return 0;
        case ':':
            fprintf(stderr, "reaperd: option %s needs a value\n", argv[optind - 1]);
            rp_usage(stderr);
            return 2;
        default:
            fprintf(stderr, "reaperd: unknown option %s\n", argv[optind - 1]);
            rp_usage(stderr);
            return 2;
        }
    }
    if (!once && (project || dry_run || (json && !doctor))) {
        fprintf(stderr, "reaperd: --project and --dry-run go with --once, --json with --once or "
                        "--doctor\n");
        rp_usage(stderr);
        return 2;
    }
    if (check + migrate + once + health + doctor > 1) {
        fprintf(stderr, "reaperd: choose one of --check-config, --migrate, --once, --healthcheck "
                        "and --doctor\n");
        rp_usage(stderr);
        return 2;
    }
    if (project != NULL && (*project == '\0' || strlen(project) > 256)) {
        fprintf(stderr, "reaperd: --project takes a project id of 1 to 256 bytes\n");
        return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "reaperd: unexpected argument '%s'\n", argv[optind]);
        rp_usage(stderr);
        return 2;
    }

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
