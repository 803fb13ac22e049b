/*
 * reaperctl - talk to a running reaperd over AMQP (CONTRACT section 4).
 *
 * It publishes one request to the control queue with reply_to set to direct
 * reply-to and waits for the answer. Exit codes: 0 ok; 1 the request was
 * not ok (an unreadable source, a refused answer, a time-out, the broker
 * unreachable); 2 usage or configuration error.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "duration.h"
#include "escape.h"
#include "gate_view.h"
#include "answer_set_view.h"
#include <unistd.h>
#include "print.h"
#include "rp_config.h"
#include "rp_config_load.h"
#include "rp_proto.h"
#include "rp_secret.h"
#include "version.h"

extern char **environ;

static void rp_usage(FILE *f) {
    fprintf(f,
            "usage: reaperctl [--config FILE] [--timeout SECONDS] COMMAND [OPTIONS]\n"
            "\n"
            "  reap   [--project P] [--dry-run] [--json]   run one whole pass now\n"
            "  gates  [--state open|answered|all] [--limit N] [--project P] [--kind K]\n"
            "         [--queue Q] [--origin Q] [--reason R] [--older-than DURATION]\n"
            "         [--after ID] [--json]              list gates, newest first (default:\n"
            "                                              open, 100), with how many match;\n"
            "                                              --after ID: the next page\n"
            "  answer GATE --choice replay|dismiss|retry [--by NOTE] [--json]\n"
            "                                              answer a gate (once)\n"
            "  answer --all [--project P] [--kind K] [--queue Q] [--origin Q] [--reason R]\n"
            "         [--older-than DURATION] --choice replay|dismiss [--rate N] [--dry-run]\n"
            "         [--yes] [--by NOTE] [--json]\n"
            "  answer GATE GATE ... --choice replay|dismiss [--rate N] [--dry-run] [--yes]\n"
            "                                              answer many open gates as one job\n"
            "                                              of reaperd's (the ids matching now,\n"
            "                                              at most N a second, default 100;\n"
            "                                              up to 64 ids); --dry-run: how many\n"
            "                                              and to which queues; on a terminal\n"
            "                                              it asks first unless --yes\n"
            "  answer --status JOB [--json]                an answer set's progress\n"
            "  answer --cancel JOB [--json]                cancel it (gates not reached stay open)\n"
            "  gate   GATE [--json] [--body raw|text|hex]  one gate looked inside: its job, the\n"
            "                                              stored message's properties, headers\n"
            "                                              (x-death as a table) and body (text\n"
            "                                              when UTF-8, else hex; the first 4 KiB\n"
            "                                              unless --body; raw: the exact bytes)\n"
            "  status [--json]                             reaperd's state\n"
            "  doctor [--json]                             the setup's checks, run by reaperd:\n"
            "                                              broker, management API, plugins,\n"
            "                                              permissions, policies, tap, store,\n"
            "                                              schema, open findings; one line\n"
            "                                              each (ok, WARN, FAIL) with a fix;\n"
            "                                              exit 1 when one failed\n"
            "  stats [--json]                              one row per owned queue (ready, unacked,\n"
            "                                              consumers) and per (project, kind) of\n"
            "                                              the job table (waiting, active), each\n"
            "                                              with intake and drained over\n"
            "                                              reap.divergence_window_seconds, the\n"
            "                                              oldest waiting age and the flags of\n"
            "                                              open sightings (STALLED, WEDGED,\n"
            "                                              DIVERGENT, WAITING_DEPTH); exit 1\n"
            "                                              when the broker could not be read\n"
            "  jobs list [--state S] [--project P] [--kind K] [--limit N] [--after ID] [--json]\n"
            "                                              the job table, lowest id first, with\n"
            "                                              the total that match; S: ready, leased,\n"
            "                                              succeeded, failed, awaiting_human, all\n"
            "                                              (default all); N: 1 to 1000 (100);\n"
            "                                              the next page: --after the last id\n"
            "  jobs get ID [--json]                        one job, with its payload\n"
            "  jobs cancel ID --reason R [--json]          a ready or leased job -> failed, its\n"
            "                                              lease cleared (the worker's settle then\n"
            "                                              fails its fence), a JobCancelled ledger\n"
            "                                              event with R and your broker user\n"
            "\n"
            "reaperctl speaks only AMQP: it sends the request to broker.control_queue\n"
            "and waits for the reply (default 30 s; a reap may need more: --timeout).\n"
            "The configuration is reaperd's (file and REAPER_* environment). Only a\n"
            "reply with app_id reaperd and user_id = the user of broker.url is taken\n"
            "(REAPERCTL_REAPERD_USER names reaperd's user when reaperctl logs in as\n"
            "another; that user must be in reaperd's control.allowed_users).\n"
            "Exit codes: 0 ok, 1 not ok (unreadable source, refused, time-out),\n"
            "2 usage or configuration error.\n");
}

/* "reaperctl: WHAT[: DETAIL]" on stderr, both escaped (escape.h): they can
 * hold what the daemon, the broker or the command line said. */
static void rp_say(const char *what, const char *detail) {
    fputs("reaperctl: ", stderr);
    rp_ctl_fputs(stderr, what);
    if (detail) {
        fputs(": ", stderr);
        rp_ctl_fputs(stderr, detail);
    }
    fputc('\n', stderr);
}

static int rp_fail_usage(const char *msg) {
    rp_say(msg, NULL);
    rp_usage(stderr);
    return 2;
}

/* A whole number (optionally signed) of the command line into *out. */
static bool rp_whole(const char *s, long long *out) {
    char *end;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return errno == 0 && end != s && *end == '\0';
}

/* The same, for a usage error found once the request tree exists. */
static int rp_fail_usage_free(json_t *req, const char *msg) {
    json_decref(req);
    return rp_fail_usage(msg);
}

/* One request (req_json: validated and encoded here) and its reply:
 * *tree (the caller frees it) and the view into it. 0, or 1 when it could
 * not be sent or read (said on standard error). */
static int rp_ctl_call(const rp_config *cfg, const char *password, const json_t *req_json,
                       int timeout_ms, json_t **tree, rp_proto_reply_view *view) {
    rp_request r;
    rp_request_init(&r);
    rp_proto_error perr;
    rp_proto_error_init(&perr);
    rp_proto_buf body = {0};
    *tree = NULL;
    if (rp_request_from_json(req_json, &r, &perr) != RP_OK ||
        rp_request_encode(&r, RP_ENC_MSGPACK, &body, &perr) != RP_OK) {
        rp_request_cleanup(&r);
        rp_proto_buf_cleanup(&body);
        rp_say("the request could not be made", perr.message);
        return 1;
    }
    rp_request_cleanup(&r);
    char err[512] = "";
    rp_ctl_reply reply;
    rp_status st = rp_ctl_request(cfg, password, "application/msgpack", body.ptr, body.len,
                                  timeout_ms, &reply, err, sizeof err);
    rp_proto_buf_cleanup(&body);
    if (st != RP_OK) {
        rp_say(err, NULL);
        return 1;
    }
    rp_bytes ct = {(const uint8_t *)reply.content_type, strlen(reply.content_type)};
    *tree = rp_proto_to_json((rp_bytes){reply.body, reply.len}, ct, NULL, &perr);
    rp_ctl_reply_cleanup(&reply);
    if (*tree == NULL || rp_proto_reply_unwrap(*tree, view, &perr) != RP_OK) {
        rp_say("the reply could not be read", perr.message);
        json_decref(*tree);
        *tree = NULL;
        return 1;
    }
    return 0;
}

/* `gate ID`: the first window of the body with the gate (the preview), or
 * with --body every window of it in turn, RP_GATE_LOOK_WINDOW_MAX at a
 * time (one request each), then printed whole. */
static int rp_ctl_gate(const rp_config *cfg, const char *password, long long gate,
                       rp_ctl_body_mode mode, bool json, int timeout_ms) {
    json_t *req = json_pack("{s:i, s:s, s:I, s:I, s:I}", "v", 1, "op", "gate", "gate",
                            (json_int_t)gate, "body_offset", (json_int_t)0, "body_limit",
                            (json_int_t)(mode == RP_CTL_BODY_AUTO ? RP_GATE_LOOK_WINDOW_DEFAULT
                                                                  : RP_GATE_LOOK_WINDOW_MAX));
    uint8_t *bytes = NULL;
    size_t have = 0;
    json_t *first = NULL;
    rp_proto_reply_view view, first_view;
    int rc = 0;
    for (;;) {
        json_t *tree;
        if ((rc = rp_ctl_call(cfg, password, req, timeout_ms, &tree, &view)) != 0) break;
        if (!view.ok) {
            if (json) {
                char *s = json_dumps(tree, JSON_COMPACT);
                puts(s);
                free(s);
            }
            rp_say(view.code ? view.code : "error", view.message ? view.message : "(no message)");
            json_decref(tree);
            rc = 1;
            break;
        }
        const json_t *b = json_object_get(json_object_get(view.result, "dead_letter"), "body");
        const char *b64 = json_string_value(json_object_get(b, "base64"));
        long long size = json_integer_value(json_object_get(b, "size"));
        long n = 0;
        if (b64 != NULL) {
            size_t room = strlen(b64) / 4 * 3 + 1;
            uint8_t *grown = realloc(bytes, have + room);
            n = grown != NULL ? rp_ctl_base64_decode(b64, grown + have, room) : -1;
            if (grown != NULL) bytes = grown;
        }
        if (n < 0) {
            rp_say("the reply could not be read", "the body is not base64");
            json_decref(tree);
            rc = 1;
            break;
        }
        have += (size_t)n;
        if (first == NULL) {
            first = tree;
            first_view = view;
        } else {
            json_decref(tree);
        }
        if (mode == RP_CTL_BODY_AUTO || n == 0 || (long long)have >= size) break;
        json_object_set_new(req, "body_offset", json_integer((json_int_t)have));
    }
    json_decref(req);
    if (rc == 0 && first != NULL) {
        const rp_proto_reply_view v = first_view;
        const json_t *dl = json_object_get(v.result, "dead_letter");
        long long size = json_integer_value(json_object_get(json_object_get(dl, "body"), "size"));
        if (mode == RP_CTL_BODY_RAW) {
            rp_ctl_print_body(stdout, bytes ? bytes : (const uint8_t *)"", have, false, mode);
        } else if (json) {
            char *s = json_dumps(v.result, JSON_COMPACT);
            puts(s);
            free(s);
        } else {
            rp_ctl_print_gate(stdout, v.result);
            if (json_is_object(dl) && have > 0) {
                rp_ctl_print_body(stdout, bytes, have, (long long)have < size, mode);
                if ((long long)have < size)
                    printf("... %lld more bytes: reaperctl gate %lld --body text|hex|raw\n",
                           size - (long long)have, gate);
            }
        }
    }
    json_decref(first);
    free(bytes);
    return rc;
}

/* The gate filters gates and answer --all share, set on req; false when
 * --older-than is not a duration (nothing else can be wrong). */
static bool rp_gate_filters(json_t *req, const char *project, const char *kind,
                            const char *queue, const char *origin, const char *reason,
                            const char *older) {
    if (project) json_object_set_new(req, "project", json_string(project));
    if (kind) json_object_set_new(req, "kind", json_string(kind));
    if (queue) json_object_set_new(req, "queue", json_string(queue));
    if (origin) json_object_set_new(req, "origin", json_string(origin));
    if (reason) json_object_set_new(req, "reason", json_string(reason));
    if (older) {
        int64_t secs;
        if (!rp_ctl_duration_parse(older, &secs)) return false;
        json_object_set_new(req, "older_than_seconds", json_integer(secs));
    }
    return true;
}

int main(int argc, char **argv) {
    enum {
        O_PROJECT = 256, O_DRY, O_JSON, O_STATE, O_LIMIT, O_CHOICE, O_BY, O_TIMEOUT,
        O_KIND, O_QUEUE, O_ORIGIN, O_REASON, O_OLDER, O_AFTER, O_BODY, O_ALL, O_RATE, O_YES,
        O_SET_STATUS, O_SET_CANCEL
    };
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},  {"timeout", required_argument, NULL, O_TIMEOUT},
        {"project", required_argument, NULL, O_PROJECT}, {"dry-run", no_argument, NULL, O_DRY},
        {"json", no_argument, NULL, O_JSON},       {"state", required_argument, NULL, O_STATE},
        {"limit", required_argument, NULL, O_LIMIT}, {"choice", required_argument, NULL, O_CHOICE},
        {"by", required_argument, NULL, O_BY},     {"kind", required_argument, NULL, O_KIND},
        {"queue", required_argument, NULL, O_QUEUE}, {"origin", required_argument, NULL, O_ORIGIN},
        {"reason", required_argument, NULL, O_REASON},
        {"older-than", required_argument, NULL, O_OLDER},
        {"after", required_argument, NULL, O_AFTER}, {"body", required_argument, NULL, O_BODY},
        {"all", no_argument, NULL, O_ALL},         {"rate", required_argument, NULL, O_RATE},
        {"yes", no_argument, NULL, O_YES},         {"status", required_argument, NULL, O_SET_STATUS},
        {"cancel", required_argument, NULL, O_SET_CANCEL},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    const char *path = NULL, *project = NULL, *state = NULL, *limit = NULL, *choice = NULL,
               *by = NULL, *kind = NULL, *queue = NULL, *origin = NULL, *reason = NULL,
               *older = NULL, *after = NULL, *sub = "", *body_opt = NULL, *rate = NULL,
               *set_status = NULL, *set_cancel = NULL;
    bool dry = false, json = false, all = false, yes = false;
    /* answer's forms: one gate, many (answer_many), one set (answer_set). */
    bool many = false, set_op = false;
    long long gate_id = 0;
    rp_ctl_body_mode body_mode = RP_CTL_BODY_AUTO;
    long timeout_s = 30;
    int ch;
    opterr = 0;
    /* Options may come before or after the command (GNU getopt permutes). */
    while ((ch = getopt_long(argc, argv, ":c:Vh", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': path = optarg; break;
        case O_TIMEOUT: {
            char *end;
            errno = 0;
            timeout_s = strtol(optarg, &end, 10);
            if (errno || *end || timeout_s < 1 || timeout_s > 86400)
                return rp_fail_usage("--timeout takes whole seconds, 1 to 86400");
            break;
        }
        case O_PROJECT: project = optarg; break;
        case O_DRY: dry = true; break;
        case O_JSON: json = true; break;
        case O_STATE: state = optarg; break;
        case O_LIMIT: limit = optarg; break;
        case O_CHOICE: choice = optarg; break;
        case O_BY: by = optarg; break;
        case O_KIND: kind = optarg; break;
        case O_QUEUE: queue = optarg; break;
        case O_ORIGIN: origin = optarg; break;
        case O_REASON: reason = optarg; break;
        case O_OLDER: older = optarg; break;
        case O_AFTER: after = optarg; break;
        case O_BODY: body_opt = optarg; break;
        case O_ALL: all = true; break;
        case O_RATE: rate = optarg; break;
        case O_YES: yes = true; break;
        case O_SET_STATUS: set_status = optarg; break;
        case O_SET_CANCEL: set_cancel = optarg; break;
        case 'V': printf("reaperctl %s\n", RP_VERSION_STRING); return 0;
        case 'h': rp_usage(stdout); return 0;
        case ':': {
            char m[128];
            snprintf(m, sizeof m, "option %s needs a value", argv[optind - 1]);
            return rp_fail_usage(m);
        }
        default: {
            char m[128];
            snprintf(m, sizeof m, "unknown option %s", argv[optind - 1]);
            return rp_fail_usage(m);
        }
        }
    }
    if (optind >= argc)
        return rp_fail_usage("which command? reap, gates, answer, status, jobs, doctor or stats");
    const char *cmd = argv[optind++];

    /* The request, as a JSON tree validated by the daemon's own codec. */
    json_t *req = json_pack("{s:i}", "v", 1);
    if (strcmp(cmd, "reap") == 0) {
        json_object_set_new(req, "op", json_string("reap"));
        json_object_set_new(req, "dry_run", json_boolean(dry));
        if (project) json_object_set_new(req, "project", json_string(project));
    } else if (strcmp(cmd, "gates") == 0) {
        json_object_set_new(req, "op", json_string("gates"));
        json_object_set_new(req, "state", json_string(state ? state : "open"));
        if (limit) {
            char *end;
            long long n = strtoll(limit, &end, 10);
            if (*end || end == limit) return rp_fail_usage_free(req, "--limit takes a whole number, 1 to 1000");
            json_object_set_new(req, "limit", json_integer(n));
        }
        if (!rp_gate_filters(req, project, kind, queue, origin, reason, older))
            return rp_fail_usage_free(req, "--older-than takes a duration: 90s, 15m, 2h, 7d "
                                           "(a whole number, s when no unit)");
        if (after) {
            char *end;
            long long id = strtoll(after, &end, 10);
            if (*end || end == after)
                return rp_fail_usage_free(req, "--after takes a gate id (a whole number)");
            json_object_set_new(req, "after", json_integer(id));
        }
    } else if (strcmp(cmd, "answer") == 0 && (set_status != NULL || set_cancel != NULL)) {
        long long id;
        if (set_status != NULL && set_cancel != NULL)
            return rp_fail_usage_free(req, "--status and --cancel do not go together");
        if (!rp_whole(set_status != NULL ? set_status : set_cancel, &id))
            return rp_fail_usage_free(req, "JOB is an answer set's id (a whole number)");
        set_op = true;
        json_object_set_new(req, "op", json_string("answer_set"));
        json_object_set_new(req, "job", json_integer(id));
        json_object_set_new(req, "cancel", json_boolean(set_cancel != NULL));
    } else if (strcmp(cmd, "answer") == 0 && (all || argc - optind >= 2)) {
        many = true;
        if (all && optind < argc)
            return rp_fail_usage_free(req, "--all takes filters, not gate ids");
        if (choice == NULL) return rp_fail_usage_free(req, "answer needs --choice replay|dismiss");
        json_object_set_new(req, "op", json_string("answer_many"));
        json_object_set_new(req, "choice", json_string(choice));
        json_object_set_new(req, "dry_run", json_boolean(dry));
        if (rate) {
            long long n;
            if (!rp_whole(rate, &n))
                return rp_fail_usage_free(req, "--rate takes a whole number of answers a second, "
                                               "1 to 10000");
            json_object_set_new(req, "rate", json_integer(n));
        }
        if (!all) {
            json_t *ids = json_array();
            for (; optind < argc; optind++) {
                long long id;
                if (!rp_whole(argv[optind], &id)) {
                    json_decref(ids);
                    return rp_fail_usage_free(req, "GATE is a gate id (a whole number)");
                }
                json_array_append_new(ids, json_integer(id));
            }
            json_object_set_new(req, "ids", ids);
        }
        if (!rp_gate_filters(req, project, kind, queue, origin, reason, older))
            return rp_fail_usage_free(req, "--older-than takes a duration: 90s, 15m, 2h, 7d "
                                           "(a whole number, s when no unit)");
        if (by) json_object_set_new(req, "by", json_string(by));
    } else if (strcmp(cmd, "answer") == 0) {
        if (optind >= argc) return rp_fail_usage_free(req, "answer needs a GATE id");
        char *end;
        long long gate = strtoll(argv[optind], &end, 10);
        if (*end || end == argv[optind]) return rp_fail_usage_free(req, "GATE is a gate id (a whole number)");
        optind++;
        if (choice == NULL) return rp_fail_usage_free(req, "answer needs --choice replay|dismiss|retry");
        json_object_set_new(req, "op", json_string("answer"));
        json_object_set_new(req, "gate", json_integer(gate));
        json_object_set_new(req, "choice", json_string(choice));
        if (by) json_object_set_new(req, "by", json_string(by));
    } else if (strcmp(cmd, "gate") == 0) {
        if (optind >= argc) return rp_fail_usage_free(req, "gate needs a GATE id");
        char *end;
        gate_id = strtoll(argv[optind], &end, 10);
        if (*end || end == argv[optind]) return rp_fail_usage_free(req, "GATE is a gate id (a whole number)");
        optind++;
        if (body_opt != NULL && !rp_ctl_body_mode_parse(body_opt, &body_mode))
            return rp_fail_usage_free(req, "--body takes raw, text or hex");
        json_object_set_new(req, "op", json_string("gate"));
        json_object_set_new(req, "gate", json_integer(gate_id));
        json_object_set_new(req, "body_limit", json_integer(body_mode == RP_CTL_BODY_AUTO
                                                                ? RP_GATE_LOOK_WINDOW_DEFAULT
                                                                : RP_GATE_LOOK_WINDOW_MAX));
    } else if (strcmp(cmd, "status") == 0) {
        json_object_set_new(req, "op", json_string("status"));
    } else if (strcmp(cmd, "doctor") == 0) {
        json_object_set_new(req, "op", json_string("doctor"));
    } else if (strcmp(cmd, "stats") == 0) {
        json_object_set_new(req, "op", json_string("stats"));
    } else if (strcmp(cmd, "jobs") == 0) {
        if (optind >= argc) return rp_fail_usage_free(req, "jobs needs list, get or cancel");
        sub = argv[optind++];
        if (strcmp(sub, "list") == 0) {
            json_object_set_new(req, "op", json_string("jobs"));
            if (state) json_object_set_new(req, "state", json_string(state));
            if (project) json_object_set_new(req, "project", json_string(project));
            if (kind) json_object_set_new(req, "kind", json_string(kind));
            long long n;
            if (limit) {
                if (!rp_whole(limit, &n))
                    return rp_fail_usage_free(req, "--limit takes a whole number, 1 to 1000");
                json_object_set_new(req, "limit", json_integer(n));
            }
            if (after) {
                if (!rp_whole(after, &n))
                    return rp_fail_usage_free(req, "--after takes a job id (a whole number)");
                json_object_set_new(req, "after", json_integer(n));
            }
        } else if (strcmp(sub, "get") == 0 || strcmp(sub, "cancel") == 0) {
            bool get = strcmp(sub, "get") == 0;
            long long id;
            if (optind >= argc)
                return rp_fail_usage_free(req, get ? "jobs get needs a job ID"
                                                   : "jobs cancel needs a job ID");
            if (!rp_whole(argv[optind], &id))
                return rp_fail_usage_free(req, "ID is a job id (a whole number)");
            optind++;
            if (!get && reason == NULL)
                return rp_fail_usage_free(req, "jobs cancel needs --reason R (kept in the ledger)");
            json_object_set_new(req, "op", json_string(get ? "job" : "cancel"));
            json_object_set_new(req, "job", json_integer(id));
            if (!get) json_object_set_new(req, "reason", json_string(reason));
        } else {
            char m[160];
            snprintf(m, sizeof m, "unknown jobs command '%.64s' (list, get or cancel)", sub);
            return rp_fail_usage_free(req, m);
        }
    } else {
        char m[160];
        snprintf(m, sizeof m, "unknown command '%.64s'", cmd);
        return rp_fail_usage_free(req, m);
    }
    if (optind < argc) {
        char m[160];
        snprintf(m, sizeof m, "unexpected argument '%.64s'", argv[optind]);
        return rp_fail_usage_free(req, m);
    }
    bool listing = strcmp(cmd, "jobs") == 0 && strcmp(sub, "list") == 0;
    if (body_opt != NULL && strcmp(cmd, "gate") != 0)
        return rp_fail_usage_free(req, "that option does not go with this command");
    /* answer --all and answer ID ID ... take the gates' filters. */
    bool filters = strcmp(cmd, "gates") == 0 || many;
    if ((!many && (all || rate || yes)) || (!set_op && (set_status || set_cancel)) ||
        (set_op && (choice || by)) ||
        (strcmp(cmd, "reap") != 0 && !many && dry) || (strcmp(cmd, "answer") != 0 && (choice || by)) ||
        (strcmp(cmd, "gates") != 0 && !listing && (state || limit)) ||
        (strcmp(cmd, "reap") != 0 && !filters && !listing && project) ||
        (!filters && !listing && kind) || (strcmp(cmd, "gates") != 0 && !listing && after) ||
        (!filters && (queue || origin || older)) ||
        (!filters && !(strcmp(cmd, "jobs") == 0 && strcmp(sub, "cancel") == 0) && reason))
        return rp_fail_usage_free(req, "that option does not go with this command");

    rp_request r;
    rp_request_init(&r);
    rp_proto_error perr;
    rp_proto_error_init(&perr);
    rp_proto_buf body = {0};
    if (rp_request_from_json(req, &r, &perr) != RP_OK ||
        rp_request_encode(&r, RP_ENC_MSGPACK, &body, &perr) != RP_OK) {
        json_decref(req);
        rp_request_cleanup(&r);
        rp_proto_buf_cleanup(&body);
        return rp_fail_usage(perr.message);
    }
    /* Many gates answered from a terminal: asked first (with what a dry
     * run says), unless --yes or --dry-run. */
    json_t *ask = NULL;
    if (many && !dry && !yes && isatty(STDIN_FILENO) && isatty(STDERR_FILENO)) {
        ask = json_deep_copy(req);
        json_object_set_new(ask, "dry_run", json_true());
    }
    json_decref(req);
    rp_request_cleanup(&r);

    rp_config cfg;
    rp_config_problems problems;
    rp_config_problems_init(&problems);
    if (rp_config_load(path, environ, &cfg, &problems) != RP_OK) {
        for (size_t i = 0; i < problems.n; i++) rp_say(problems.items[i].message, NULL);
        fprintf(stderr, "reaperctl: configuration refused\n");
        rp_config_problems_cleanup(&problems);
        rp_config_cleanup(&cfg);
        rp_proto_buf_cleanup(&body);
        return 2;
    }
    rp_config_problems_cleanup(&problems);
    char err[512] = "";
    char *password = NULL;
    if (rp_secret_resolve(cfg.broker.password, cfg.broker.password_file, &password, err,
                          sizeof err) != RP_OK) {
        fputs("reaperctl: broker.password_file: ", stderr);
        rp_ctl_fputs(stderr, err);
        fputs(" (or set REAPER_BROKER_PASSWORD)\n", stderr);
        rp_config_cleanup(&cfg);
        rp_proto_buf_cleanup(&body);
        return 2;
    }

    if (ask != NULL) {
        json_t *t = NULL;
        rp_proto_reply_view v;
        int arc = rp_ctl_call(&cfg, password, ask, (int)timeout_s * 1000, &t, &v);
        json_decref(ask);
        if (arc == 0 && !v.ok)
            rp_say(v.code ? v.code : "error", v.message ? v.message : "(no message)");
        bool go = false;
        if (arc == 0 && v.ok) {
            rp_ctl_print_answer_many(stderr, v.result);
            fputs("answer them? [y/N] ", stderr);
            char line[16] = "";
            go = fgets(line, sizeof line, stdin) != NULL && (line[0] == 'y' || line[0] == 'Y');
            if (!go) fputs("nothing answered\n", stderr);
        }
        json_decref(t);
        if (!go) {
            rp_secret_free(password);
            rp_config_cleanup(&cfg);
            rp_proto_buf_cleanup(&body);
            return 1;
        }
    }
    if (strcmp(cmd, "gate") == 0) {
        rp_proto_buf_cleanup(&body);
        int grc = rp_ctl_gate(&cfg, password, gate_id, body_mode, json, (int)timeout_s * 1000);
        rp_secret_free(password);
        rp_config_cleanup(&cfg);
        return grc;
    }
    rp_ctl_reply reply;
    rp_status st = rp_ctl_request(&cfg, password, "application/msgpack", body.ptr, body.len,
                                  (int)timeout_s * 1000, &reply, err, sizeof err);
    rp_secret_free(password);
    rp_config_cleanup(&cfg);
    rp_proto_buf_cleanup(&body);
    if (st != RP_OK) {
        rp_say(err, NULL);
        return 1;
    }
    rp_bytes ct = {(const uint8_t *)reply.content_type, strlen(reply.content_type)};
    json_t *tree = rp_proto_to_json((rp_bytes){reply.body, reply.len}, ct, NULL, &perr);
    rp_ctl_reply_cleanup(&reply);
    rp_proto_reply_view view;
    if (tree == NULL || rp_proto_reply_unwrap(tree, &view, &perr) != RP_OK) {
        rp_say("the reply could not be read", perr.message);
        json_decref(tree);
        return 1;
    }
    int rc = 0;
    if (!view.ok) {
        rc = 1;
        if (json) {
            char *s = json_dumps(tree, JSON_COMPACT);
            puts(s);
            free(s);
        }
        rp_say(view.code ? view.code : "error", view.message ? view.message : "(no message)");
    } else {
        if ((strcmp(cmd, "reap") == 0 || strcmp(cmd, "doctor") == 0) &&
            !json_is_true(json_object_get(view.result, "ok")))
            rc = 1;
        /* stats without the broker's queues: an unreadable source, as a
         * pass's (the job table's rows are still shown). */
        if (strcmp(cmd, "stats") == 0 && json_is_string(json_object_get(view.result, "broker_note")))
            rc = 1;
        if (json) {
            char *s = json_dumps(view.result, JSON_COMPACT);
            puts(s);
            free(s);
        } else if (strcmp(cmd, "status") == 0) {
            rp_ctl_print_status(stdout, view.result);
        } else if (strcmp(cmd, "doctor") == 0) {
            rp_ctl_print_doctor(stdout, view.result);
        } else if (strcmp(cmd, "stats") == 0) {
            rp_ctl_print_stats(stdout, view.result);
        } else if (strcmp(cmd, "reap") == 0) {
            rp_ctl_print_report(stdout, view.result);
        } else if (strcmp(cmd, "jobs") == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            if (strcmp(sub, "list") == 0)
                rp_ctl_print_jobs(stdout, view.result,
                                  (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
            else if (strcmp(sub, "get") == 0)
                rp_ctl_print_job(stdout, view.result);
            else
                rp_ctl_print_cancel(stdout, view.result);
        } else if (many) {
            rp_ctl_print_answer_many(stdout, view.result);
        } else if (set_op) {
            rp_ctl_print_answer_set(stdout, view.result);
        } else if (strcmp(cmd, "gates") == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            rp_ctl_print_gates(stdout, view.result, (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        } else {
            rp_ctl_print_answer(stdout, view.result);
        }
    }
    json_decref(tree);
    return rc;
}
