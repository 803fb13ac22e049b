/* reaperd's command line (rp_reaperd_args.h). */
#include "rp_reaperd_args.h"

#include <getopt.h>
#include <string.h>

static bool rp_args_fail(rp_reaperd_args_error *err, const char *pre, const char *arg,
                         const char *post, bool usage) {
    *err = (rp_reaperd_args_error){.pre = pre, .arg = arg, .post = post, .usage = usage};
    return false;
}

bool rp_reaperd_args_parse(int argc, char **argv, rp_reaperd_args *out,
                           rp_reaperd_args_error *err) {
    memset(out, 0, sizeof *out);
    /* The flags are set by getopt_long itself (struct option's flag). */
    enum { OPT_PROJECT = 256 };
    const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"check-config", no_argument, &out->check, 1},
        {"migrate", no_argument, &out->migrate, 1},
        {"once", no_argument, &out->once, 1},
        {"project", required_argument, NULL, OPT_PROJECT},
        {"dry-run", no_argument, &out->dry_run, 1},
        {"json", no_argument, &out->json, 1},
        {"healthcheck", no_argument, &out->health, 1},
        {"doctor", no_argument, &out->doctor, 1},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    opterr = 0;
    optind = 0; /* GNU: start again (a second parse in one process: the tests) */
    while ((ch = getopt_long(argc, argv, ":c:Vh", opts, NULL)) != -1) {
        switch (ch) {
        case 0: /* a flag */
            break;
        case 'c':
            out->config = optarg;
            break;
        case OPT_PROJECT:
            out->project = optarg;
            break;
        case 'V':
            out->version = true;
            return true;
        case 'h':
            out->help = true;
            return true;
        case ':':
            return rp_args_fail(err, "option ", argv[optind - 1], " needs a value", true);
        default:
            return rp_args_fail(err, "unknown option ", argv[optind - 1], "", true);
        }
    }
    if (!out->once && (out->project || out->dry_run || (out->json && !out->doctor)))
        return rp_args_fail(err,
                            "--project and --dry-run go with --once, --json with --once or "
                            "--doctor",
                            NULL, "", true);
    if (out->check + out->migrate + out->once + out->health + out->doctor > 1)
        return rp_args_fail(err,
                            "choose one of --check-config, --migrate, --once, --healthcheck "
                            "and --doctor",
                            NULL, "", true);
    if (out->project != NULL && (*out->project == '\0' || strlen(out->project) > 256))
        return rp_args_fail(err, "--project takes a project id of 1 to 256 bytes", NULL, "",
                            false);
    if (optind < argc) return rp_args_fail(err, "unexpected argument '", argv[optind], "'", true);
    return true;
}
