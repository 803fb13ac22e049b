/*
 * rp_reaperd_args.h - reaperd's command line read into a struct, with the
 * rules of which options go together (moved from cmd/reaperd/main.c). Pure:
 * it prints nothing; cmd/reaperd/main.c writes what it says (the help text
 * is rp_reaperd_help.h).
 *
 * Ownership: the strings of rp_reaperd_args and rp_reaperd_args_error point
 * into argv or are static: nothing to free. Threads: getopt_long's globals
 * (optind, optarg, opterr): one thread, the process's start.
 */
#ifndef RP_REAPERD_ARGS_H
#define RP_REAPERD_ARGS_H

#include <stdbool.h>

#include "rp_common.h"

typedef struct rp_reaperd_args {
    const char *config;  /* --config FILE; NULL: none */
    const char *project; /* --project P; NULL: none */
    /* The flags (ints: "choose one of" counts them). */
    int check, migrate, once, dry_run, json, health, doctor;
    bool version; /* -V, --version: print the version, exit 0 */
    bool help;    /* -h, --help: print the help on standard output, exit 0 */
} rp_reaperd_args;

/* What is wrong with a command line: the line to write is
 * "reaperd: " pre arg post (arg NULL: nothing), then the help text on
 * standard error when usage is true; the exit code is 2. */
typedef struct rp_reaperd_args_error {
    const char *pre;
    const char *arg;
    const char *post;
    bool usage;
} rp_reaperd_args_error;

/* Reads argv (from argv[1]; optind is reset) into *out. A -V or -h ends the
 * reading where it stands (what follows is not looked at). Returns true
 * when the line is usable (or asks for the version or the help), false
 * with *err filled otherwise: an option without its value, an unknown
 * option, --project/--dry-run without --once, --json without --once or
 * --doctor, more than one of --check-config, --migrate, --once,
 * --healthcheck and --doctor, a project id outside 1..256 bytes, an
 * argument left over (checked in that order). */
bool rp_reaperd_args_parse(int argc, char **argv, rp_reaperd_args *out,
                           rp_reaperd_args_error *err) RP_MUSTCHECK;

#endif
