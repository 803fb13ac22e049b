/* The configuration reference (rp_config.h, rp_config_reference): one
 * sentence or two per key of the table in rp_config.c, and the rendering of
 * the whole reference as Markdown from the table itself (key, environment
 * variable, type and range, default, reload or restart). docs/CONFIGURATION.md
 * is this output (test_config_reference checks it is current). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_config_internal.h"

#define RP_INT32_MAX INT64_C(2147483647)

/* What each key does, for the reference; a test checks every key has one. */
static const char *const rp_config_docs[RP_CFG_KEY_COUNT_] = {
    [RP_CFG_BROKER_URL] = "The broker's AMQP URL (`amqp://` or `amqps://`, user, host, port, "
                          "vhost). A password inside it is refused: see `broker.password_file`. "
                          "A cluster: a comma-separated host list "
                          "(`amqp://reaper@rmq-0:5672,rmq-1:5672,rmq-2:5672/%2f`, one user and "
                          "vhost), tried in turn with backoff; reaper's tap and control queues "
                          "are then quorum queues on min(hosts, 3) nodes.",
    [RP_CFG_BROKER_PASSWORD] = "The broker password (refused in a file); wins over "
                               "`broker.password_file`. Never printed.",
    [RP_CFG_BROKER_PASSWORD_FILE] = "A file holding the broker password (one line), for AMQP "
                                    "and the management API alike.",
    [RP_CFG_BROKER_MANAGEMENT_URL] = "The management API's base URL (same user and password as "
                                     "AMQP); reaperd reads queues and writes its policies there. "
                                     "A cluster: a comma-separated host list "
                                     "(`http://rmq-0:15672,rmq-1:15672`); a request whose host "
                                     "cannot be reached goes to the next.",
    [RP_CFG_BROKER_CONTROL_QUEUE] = "The queue reaperd answers control requests on (`reaperctl`; "
                                    "the protocol is in proto/SCHEMA.md).",
    [RP_CFG_BROKER_EVENTS_EXCHANGE] = "A topic exchange every committed ledger event is also "
                                      "published to (routing key "
                                      "`<source>.<condition>.<action>` or "
                                      "`gate.<kind>.<outcome>`).",
    [RP_CFG_BROKER_EVENTS_FORMAT] = "The events' body: the ledger payload as msgpack or JSON "
                                    "(`content_type` says which).",
    [RP_CFG_BROKER_TAP_QUEUE] = "The durable quorum queue reaperd binds to the dead-letter "
                                "exchange of every owned queue, to park each dead letter as a "
                                "gate.",
    [RP_CFG_BROKER_TAP_HEADER_CAP_BYTES] =
        "The most a dead letter's header table may weigh decoded (keys, values, nested "
        "tables and arrays, and a per-entry overhead) for the tap to keep it. A heavier one is "
        "parked without its headers (only `x-death` and `x-first-death-*`, which its identity "
        "needs) and marked not replayable; its `properties` say why.",
    [RP_CFG_BROKER_VHOSTS] =
        "The vhosts reaperd watches besides `broker.url`'s, which it always watches (the control "
        "queue and the broker events are there). Each listed vhost gets a tap of its own: its own "
        "AMQP connection (same user), its own `broker.tap_queue` bound to the dead-letter "
        "exchanges of the owned queues there; its dead letters are parked with that vhost in "
        "their identity and rows, and its tap's and dead letters' metrics and reaper's "
        "policies' verdicts (`reaper_policy_verified`) carry it as their `vhost` label (CONTRACT section 7). A listed vhost that does not exist or that reaper's user "
        "cannot access is said in the log (per vhost) and tried again with backoff; the other "
        "vhosts keep working. The sweep (judgements, backfill, reaper's policies, written in "
        "every watched vhost) and the owned-queue inventory list the watched vhosts only, each "
        "through `GET /api/queues/VHOST`; the fleet's sweep turn is taken per vhost. Empty: "
        "the URL's vhost only.",
    [RP_CFG_BROKER_TLS_CA_FILE] = "With `amqps://`: the CA bundle (PEM) the broker's certificate "
                                  "is verified against; empty: the system's.",
    [RP_CFG_BROKER_TLS_CERT_FILE] = "With `amqps://`: a client certificate (PEM), for brokers "
                                    "that ask for one.",
    [RP_CFG_BROKER_TLS_KEY_FILE] = "With `amqps://`: the client certificate's private key (PEM).",
    [RP_CFG_BROKER_TLS_VERIFY_PEER] = "With `amqps://`: verify the broker's certificate and host "
                                      "name. Turn off only to test.",
    [RP_CFG_STORE_DSN] = "The PostgreSQL connection string (libpq keywords or URI). A password "
                         "inside it is refused: use `PGPASSWORD` or a passfile.",
    [RP_CFG_STORE_SCHEMA] = "The schema holding reaper's tables (`job`, `gate`, `dead_letter`, "
                            "`ledger`, `sighting`); `reaperd --migrate` creates it.",
    [RP_CFG_STORE_STATEMENT_TIMEOUT_MS] = "`statement_timeout` of every reaperd session "
                                          "(milliseconds): a statement past it fails and the "
                                          "pass reports the store unreadable.",
    [RP_CFG_STORE_LOCK_TIMEOUT_MS] = "`lock_timeout` of every reaperd session (milliseconds).",
    [RP_CFG_STORE_IDLE_IN_TRANSACTION_TIMEOUT_MS] =
        "`idle_in_transaction_session_timeout` of every reaperd session (milliseconds).",
    [RP_CFG_STORE_TCP_USER_TIMEOUT_MS] = "`tcp_user_timeout` of every reaperd session "
                                         "(milliseconds): how long unacknowledged data may wait "
                                         "before the connection counts as broken.",
    [RP_CFG_STORE_LEASE_BATCH_SIZE] = "Expired leases taken (`FOR UPDATE SKIP LOCKED`) and moved "
                                      "per transaction, each row inside a savepoint of its own "
                                      "so that a row that fails rolls back alone; the batch's "
                                      "events are published once it has committed.",
    [RP_CFG_REAP_ENABLED] = "The automatic sweep every `interval_seconds`. Off never stops the "
                            "lease reap, the tap or on-demand passes (`reaperctl reap`).",
    [RP_CFG_REAP_INTERVAL_SECONDS] = "Seconds between two automatic sweeps of one reaperd.",
    [RP_CFG_REAP_LEASE_GRACE_SECONDS] = "A job's lease is reaped when it is more than this many "
                                        "seconds past `lease_expires_at`.",
    [RP_CFG_REAP_STALE_READY_SECONDS] = "A ready job or a queue's head message older than this "
                                        "(and nobody taking it) is surfaced as `STALE_READY`.",
    [RP_CFG_REAP_CONSUMER_TIMEOUT_SECONDS] =
        "The bound on a hung handler: written as the `consumer-timeout` of reaper's policies on "
        "RabbitMQ 3.12 and later (3.10 has only the broker-wide `consumer_timeout`). Refused "
        "below `longest_lease_seconds`.",
    [RP_CFG_REAP_LONGEST_LEASE_SECONDS] = "The longest a worker legitimately holds a job or a "
                                          "message.",
    [RP_CFG_REAP_DELIVERY_LIMIT] = "The `delivery-limit` of reaper's policy on owned quorum "
                                   "queues: a message delivered this often is dead-lettered "
                                   "(poison).",
    [RP_CFG_REAP_DEAD_LETTER_QUEUE_PATTERN] = "A PCRE naming dead-letter queues.",
    [RP_CFG_REAP_DEAD_LETTER_MIN_DEPTH] = "A dead-letter queue counts once it holds this many "
                                          "messages (ready and unacknowledged).",
    [RP_CFG_REAP_DEAD_LETTER_PEEK_LIMIT] = "New dead letters a backfill peek parks per owned "
                                           "dead-letter queue per pass; a classic queue is read "
                                           "past the ones parked already, so a backlog is worked "
                                           "through this many per pass; what lies behind is "
                                           "surfaced until gone.",
    [RP_CFG_REAP_OWNED_QUEUE_PATTERN] = "A PCRE naming the queues reaper owns: it writes "
                                        "policies on them, parks their dead letters and replays "
                                        "to them. Refused if it matches every name or a known "
                                        "foreign one.",
    [RP_CFG_REAP_POLICY_PRIORITY] = "The priority of reaper's broker policies.",
    [RP_CFG_REAP_HELD_CEILING_SECONDS] =
        "A leased job held this long (since it was claimed: the `claimed_at` that migration 7's "
        "trigger keeps, which heartbeats do not move) while its lease is still alive is "
        "surfaced as `STALLED`, naming the job, its owner and the hold. On the broker, a "
        "channel holding unacknowledged messages of an owned queue whose ack count has not "
        "moved for this long (sampled every sweep) is `STALLED` on the queue, naming the "
        "connection and channel.",
    [RP_CFG_REAP_HELD_EVICT_FACTOR] = "0: a `STALLED` job is only surfaced. N: a job held N x "
                                      "`held_ceiling_seconds` is requeued (fenced on its owner "
                                      "and claim; a `STALLED` / `REQUEUED` ledger event), and "
                                      "its owner's later settle fails its fence.",
    [RP_CFG_REAP_WAITING_DEPTH_THRESHOLD] = "More claimable jobs than this of one kind in one "
                                            "project are surfaced as `WAITING_DEPTH`, with the "
                                            "depth and the fix (a cap on admission).",
    [RP_CFG_REAP_QUEUE_DEPTH_THRESHOLD] = "More ready messages than this on an owned work queue "
                                          "are surfaced as `WAITING_DEPTH`, with the depth and "
                                          "the fix (a cap on admission).",
    [RP_CFG_REAP_WEDGED_SECONDS] =
        "A (project, kind) of the job table with claimable jobs, no live lease and no job "
        "succeeded for this long (counted from the newest completion, or from when the oldest "
        "claimable job became claimable if that is later) is wedged; on an owned queue: ready "
        "messages and consumers but no ack for this long.",
    [RP_CFG_REAP_WEDGED_CHECKS] = "A queue is surfaced as `WEDGED` once it is seen wedged on "
                                  "this many consecutive checks (counted in PostgreSQL, across "
                                  "passes and replicas); one healthy check resets the count.",
    [RP_CFG_REAP_WEDGE_RESTART] = "The restart-loop breaker (broker only): true closes the "
                                  "connections of a wedged owned queue's consumers through the "
                                  "management API (with an X-Reason header) so their "
                                  "supervisors reconnect them, each a `WEDGED` / `RESTARTED` "
                                  "event, never twice within `wedged_seconds`, once fleet-wide.",
    [RP_CFG_REAP_WEDGE_RESTART_MAX] = "At most this many restarts of one queue per "
                                      "`wedge_restart_window_seconds`; past that one `WEDGED` / "
                                      "`RESTART_LOOP` event and no more restarts until the "
                                      "sighting clears.",
    [RP_CFG_REAP_WEDGE_RESTART_WINDOW_SECONDS] = "The window `wedge_restart_max` counts "
                                                 "restarts in.",
    [RP_CFG_REAP_DIVERGENCE_WINDOW_SECONDS] =
        "The window over which intake and drain are compared for `DIVERGENT`: job-table rows "
        "created and rows that reached `succeeded` in it (per project and kind); an owned "
        "queue's publishes and acks in it (sampled every sweep into the store).",
    [RP_CFG_REAP_DIVERGENCE_RATIO] = "Intake above this many times the completions over the "
                                     "window (and more than `divergence_min_waiting` waiting) "
                                     "is surfaced as `DIVERGENT`.",
    [RP_CFG_REAP_DIVERGENCE_MIN_WAITING] = "`DIVERGENT` needs more than this many waiting: "
                                           "claimable jobs of the kind, or ready messages of "
                                           "the queue.",
    [RP_CFG_CONTROL_ALLOWED_USERS] = "Broker users (the broker-checked `user_id` of a request) "
                                     "allowed to send control requests; empty: reaperd's "
                                     "own broker user only (the user of `broker.url`); "
                                     "`[\"*\"]`: any authenticated broker user. Others get no "
                                     "reply. In the environment: a comma-separated list.",
    [RP_CFG_CONTROL_REAP_RATE_SECONDS] = "At most one `reap` request per this many seconds per "
                                         "user (0: no limit); one too soon is answered `busy`.",
    [RP_CFG_CONTROL_REPLAY_CLAIM_SECONDS] =
        "How long a replay's claim on a gate holds. While a replica replays a gate (from its "
        "claim, before the publish, to the settle after the confirm) every other answer to it, "
        "from any replica, is answered `busy`. A claim older than this is stale (its replica "
        "stopped or hung between publishing and settling): the next answer takes it over, "
        "records `GateClaimTakenOver` on the ledger and says that the message may have been "
        "published once already; a replay does not publish it again. Keep it well above a "
        "publish confirm's time.",
    [RP_CFG_CONTROL_REPLY_QUEUE_PATTERN] = "PCRE naming the queues replies may go to besides "
                                           "direct reply-to; empty: none. A request with any "
                                           "other `reply_to` is refused without a reply.",
    [RP_CFG_HTTP_LISTEN] = "Where `/metrics`, `/healthz` and `/readyz` are served (`host:port`; "
                           "port 0: any free port).",
    [RP_CFG_HTTP_CONSOLE] = "Serve the browser console at `/console` on `http.listen`: open "
                            "gates, a gate looked inside, sightings and recent ledger events, "
                            "and answers sent as the signed-in broker user.",
    [RP_CFG_HTTP_CONSOLE_READ_ANONYMOUS] = "Let the console's reads go without a sign-in (they "
                                           "run as reaperd's own broker user); answers always "
                                           "need one (HTTP Basic with a broker user and "
                                           "password).",
    [RP_CFG_LOG_LEVEL] = "The lowest level logged.",
    [RP_CFG_LOG_FORMAT] = "One line per event on standard error, as JSON or text.",
};

const char *rp_config_key_doc(rp_config_key_id id) {
    if ((int)id < 0 || id >= RP_CFG_KEY_COUNT_) return NULL;
    return rp_config_docs[id];
}

static const char *rp_type_name(rp_config_type t) {
    switch (t) {
    case RP_CFG_TYPE_STRING: return "string";
    case RP_CFG_TYPE_INT: return "integer";
    case RP_CFG_TYPE_BOOL: return "bool";
    case RP_CFG_TYPE_ENUM: return "one of";
    case RP_CFG_TYPE_STRLIST: return "list of strings";
    case RP_CFG_TYPE_PATTERN: return "PCRE pattern";
    }
    return "?";
}

/* A table cell: | escaped, so a pattern's alternation stays in its cell. */
static void rp_cell(char *dst, size_t cap, const char *src) {
    size_t o = 0;
    for (const char *p = src; *p && o + 3 < cap; p++) {
        if (*p == '|') dst[o++] = '\\';
        dst[o++] = *p;
    }
    dst[o] = '\0';
}

rp_status rp_config_reference(char **out) {
    *out = NULL;
    rp__cfg_buf b = {0};
    rp__cfg_buf_printf(&b, "%s",
           "# Configuration reference\n\n"
           "<!-- Generated from the configuration table (core/rp_config.c, core/rp_config_doc.c)\n"
           "     by scripts/gen-config-reference; test_config_reference checks it is current.\n"
           "     Do not edit by hand. -->\n\n"
           "reaperd and reaperctl read one YAML file (`--config FILE`, optional) and the\n"
           "environment; every key can be set as its variable below, and the environment\n"
           "wins over the file. With no file, the defaults and the environment make the\n"
           "whole configuration. `reaperd --check-config` prints the configuration in force\n"
           "(secrets masked), each key with where it came from, or every problem, each\n"
           "naming its key (exit 2). An unknown key or `REAPER_` variable is refused.\n\n"
           "Reload: on SIGHUP reaperd reads the file and the environment again and applies\n"
           "the keys marked *reload* at once (the store's from its next pass); the keys\n"
           "marked *restart* apply at the next start (a changed one is logged). A\n"
           "configuration with any problem is refused whole and the one in force stays.\n\n"
           "| key | environment variable | type | default | applies | what it does |\n"
           "| --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < RP_CFG_KEY_COUNT_ && !b.nomem; i++) {
        const rp__config_row *row = rp__config_row_get((rp_config_key_id)i);
        char env[128], type[256], def[256], doc[1024];
        rp_config_env_name((rp_config_key_id)i, env, sizeof env);
        switch (row->type) {
        case RP_CFG_TYPE_INT:
            if (row->max == RP_INT32_MAX)
                snprintf(type, sizeof type, "integer, at least %" PRId64, row->min);
            else
                snprintf(type, sizeof type, "integer, %" PRId64 "..%" PRId64, row->min, row->max);
            break;
        case RP_CFG_TYPE_ENUM: {
            size_t o = (size_t)snprintf(type, sizeof type, "one of");
            for (const char *const *c = row->choices; *c && o < sizeof type; c++)
                o += (size_t)snprintf(type + o, sizeof type - o, "%s `%s`",
                                      c == row->choices ? "" : ",", *c);
            break;
        }
        default: snprintf(type, sizeof type, "%s", rp_type_name(row->type)); break;
        }
        if (row->def[0] == '\0')
            snprintf(def, sizeof def, "%s", row->type == RP_CFG_TYPE_STRLIST ? "`[]`" : "empty");
        else
            snprintf(def, sizeof def, "`%s`", row->def);
        char defcell[300];
        rp_cell(defcell, sizeof defcell, def);
        rp_cell(doc, sizeof doc, rp_config_docs[i] ? rp_config_docs[i] : "");
        const char *extra = (row->flags & RP__CFG_ENV_ONLY) ? " Environment only." : "";
        rp__cfg_buf_printf(&b, "| `%s` | `%s` | %s | %s | %s | %s%s |\n", row->key, env, type,
               defcell, (row->flags & RP__CFG_RESTART) ? "restart" : "reload", doc, extra);
    }
    rp__cfg_buf_printf(&b, "%s",
           "\nPatterns are PCRE, matched as the broker matches its own policy patterns.\n"
           "Refused at start, each with a message naming the key (exit 2): an unknown key,\n"
           "a wrong type (a bool or a float where an integer goes), a value outside its\n"
           "range, an empty or catch-all pattern, an owned pattern that matches a known\n"
           "foreign name (`celery`, `amq.gen-x`, `amq.rabbitmq.reply-to`), a pattern that\n"
           "does not compile, a consumer timeout under the longest lease, a password inside\n"
           "a URL or DSN.\n");
    if (b.nomem || b.s == NULL) {
        free(b.s);
        return RP_ERR_NOMEM;
    }
    *out = b.s;
    return RP_OK;
}
