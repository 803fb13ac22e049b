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
#include "rp_secret.h"
#include "version.h"

extern char **environ;

static void rp_usage(FILE *f) {
    fprintf(f,
            "usage: reaperd [--config FILE] [--check-config] [--migrate] [--version] [--help]\n"
            "       reaperd [--config FILE] --once [--project P] [--dry-run] [--json]\n"
            "       reaperd [--config FILE] --healthcheck\n"
            "       reaperd [--config FILE] --doctor [--json]\n"
            "\n"
            "Finds work that stopped moving in RabbitMQ and in the PostgreSQL job table,\n"
            "and deals with it by measurement (see README.md).\n"
            "\n"
            "  -c, --config FILE   read FILE (YAML); without it, the environment and the\n"
            "                      defaults make the whole configuration\n"
            "      --check-config  print the effective configuration (secrets masked) and\n"
            "                      exit 0, or print every problem and exit 2\n"
            "      --once          run one whole pass in-process, print its report, exit\n"
            "                      (0 ok, 1 something was unreadable); each committed\n"
            "                      ledger event is also published to broker.events_exchange;\n"
            "                      a feed the broker did not take is a note and a warning,\n"
            "                      not exit 1 (the ledger is the record)\n"
            "      --project P     with --once: only project P's jobs (the broker is skipped)\n"
            "      --dry-run       with --once: judge everything, write nothing at all\n"
            "      --json          with --once: standard output is exactly one JSON object,\n"
            "                      the pass report (logs stay on standard error); with\n"
            "                      --doctor: the checks as one JSON object\n"
            "      --doctor        check the setup in-process (no daemon needed): the broker,\n"
            "                      its management API, plugins, permissions, policies, the\n"
            "                      tap, the store and its schema, open findings; one line\n"
            "                      per check (ok, WARN, FAIL) with a fix; exit 0 when no\n"
            "                      check failed, 1 otherwise\n"
            "      --migrate       apply the schema migrations to store.schema and exit\n"
            "                      (0 applied or already current, 1 the store refused)\n"
            "      --healthcheck   GET /healthz of the reaperd running on this machine, at\n"
            "                      the http.listen of the configuration in force (a\n"
            "                      wildcard host is asked on loopback); without --config,\n"
            "                      the --config of process 1 when it is reaperd (a\n"
            "                      container); exit 0 on 200, 1 otherwise (a container's\n"
            "                      HEALTHCHECK)\n"
            "  -V, --version       print the version and exit\n"
            "  -h, --help          print this help and exit\n"
            "\n"
            "Every key can be set as REAPER_<SECTION>_<KEY> (e.g. REAPER_REAP_INTERVAL_SECONDS);\n"
            "the environment wins over the file. An unknown REAPER_* variable is refused,\n"
            "except the ones a kubelet injects for a Service named reaper...\n"
            "(REAPER_SERVICE_HOST, REAPER_PORT_9464_TCP_ADDR...), which are ignored.\n"
            "\n"
            "The daemon serves GET /metrics, /healthz and /readyz on http.listen (port 0:\n"
            "any free port, logged at start). SIGTERM or SIGINT: stop taking work, finish\n"
            "what is in flight (at most 10 s, then cancel), exit 0. SIGHUP: read the\n"
            "configuration again; a refused one is logged and the old one kept; broker.*,\n"
            "store.* and http.listen apply only at the next start.\n"
            "\n"
            "Exit codes: 0 ok; 1 could not run (e.g. http.listen cannot be bound);\n"
            "2 usage or configuration error.\n");
}

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
