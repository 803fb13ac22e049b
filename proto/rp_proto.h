/*
 * rp_proto.h - the control queue wire codec (CONTRACT section 5,
 * proto/SCHEMA.md): requests and replies in msgpack or JSON, and the ledger
 * event body published to the events exchange.
 *
 * Decoding goes one way for both encodings: the body is parsed, with every
 * limit of an rp_proto_limits enforced while parsing, into a neutral jansson
 * tree (json_t), and that tree is validated once. So a msgpack request and the
 * same request in JSON decode to the same rp_request or the same error.
 * msgpack is read by our own reader (rp_proto_msgpack.c), not by msgpack-c's
 * unpacker, because the latter allocates for the declared size of an array or
 * map before its entries arrive and offers no limits in its C API.
 *
 * Encoding goes the other way: a reply is built as a json_t and written as
 * compact JSON (jansson) or msgpack (msgpack-c's packer, smallest forms).
 *
 * Ownership, in general: rp_request owns its strings (rp_request_cleanup
 * frees them); rp_proto_buf owns its bytes (rp_proto_buf_cleanup frees them);
 * a json_t returned by a function here is a new reference the caller must
 * json_decref(); every pointer argument is borrowed for the call only.
 *
 * Errors: decoders fill an rp_proto_error whose message is a full ASCII/UTF-8
 * sentence naming the field and what was expected; untrusted text inside it is
 * quoted, escaped and cut to RP_PROTO_QUOTE_MAX bytes.
 */
#ifndef RP_PROTO_H
#define RP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rp_answer_set_port.h"
#include "rp_common.h"
#include "rp_doctor.h"
#include "rp_gate.h"
#include "rp_gate_look.h"
#include "rp_jobs_port.h"
#include "rp_report.h"
#include "rp_stats.h"
#include "rp_status.h"
#include "rp_verdict.h"

/* The protocol version: the "v" of every request and reply. */
#define RP_PROTO_VERSION 1

#define RP_PROTO_CT_MSGPACK "application/msgpack"
#define RP_PROTO_CT_JSON "application/json"

/* Request limits (the daemon decodes hostile input with these). */
#define RP_PROTO_REQUEST_MAX_BODY (64u * 1024u)
#define RP_PROTO_REQUEST_MAX_DEPTH 8u
#define RP_PROTO_REQUEST_MAX_STRING 4096u
#define RP_PROTO_REQUEST_MAX_ENTRIES 64u
#define RP_PROTO_REQUEST_MAX_NODES 1024u

/* Reply limits (reaperctl reads the daemon's replies with these; the
 * encoders refuse to produce a reply beyond them). */
#define RP_PROTO_REPLY_MAX_BODY (8u * 1024u * 1024u)
#define RP_PROTO_REPLY_MAX_DEPTH 16u
#define RP_PROTO_REPLY_MAX_STRING (64u * 1024u)
#define RP_PROTO_REPLY_MAX_ENTRIES 100000u
#define RP_PROTO_REPLY_MAX_NODES 1000000u

/* Field limits of requests. */
#define RP_PROTO_NAME_MAX 256u     /* bytes of "project" and "by" */
#define RP_PROTO_LIMIT_MIN 1
#define RP_PROTO_LIMIT_MAX 1000
/* The largest gates older_than_seconds: ten years. */
#define RP_PROTO_OLDER_THAN_MAX 315360000
#define RP_PROTO_LIMIT_DEFAULT 100
#define RP_PROTO_REASON_MAX 1024u  /* bytes of a cancel's "reason" */

/* Sizes of the error fields below and of quoted untrusted text. */
#define RP_PROTO_MESSAGE_MAX 256u
#define RP_PROTO_OP_MAX 64u
#define RP_PROTO_QUOTE_MAX 64u

/* Length of a formatted time "2024-05-01T12:00:00.123Z" plus its NUL. */
#define RP_PROTO_TIME_SIZE 25u

/* What a parser accepts. Depth counts maps and arrays: a request map is
 * depth 1. Nodes count every value and every map key of the document. */
typedef struct rp_proto_limits {
    size_t max_body;
    size_t max_depth;
    size_t max_string;
    size_t max_entries;
    size_t max_nodes;
} rp_proto_limits;

extern const rp_proto_limits rp_proto_request_limits;
extern const rp_proto_limits rp_proto_reply_limits;

typedef enum rp_encoding {
    RP_ENC_MSGPACK = 0,
    RP_ENC_JSON,
    RP_ENC_COUNT_
} rp_encoding;

/* "application/msgpack" or "application/json"; "unknown" outside. Static. */
const char *rp_encoding_content_type(rp_encoding e);

/* Parses an AMQP content_type property. ct.len == 0 (absent or empty) gives
 * RP_ENC_MSGPACK. The media type is compared without case and with
 * parameters (";charset=utf-8") ignored; "application/x-msgpack" is taken as
 * msgpack. Returns RP_OK, or RP_ERR_BAD_REQUEST (and *out is unchanged) for
 * any other type. */
rp_status rp_encoding_parse(rp_bytes ct, rp_encoding *out) RP_MUSTCHECK;

/* The encoding a reply to a request with content type ct must use: the
 * request's when supported, else msgpack (the protocol's default). */
rp_encoding rp_proto_reply_encoding(rp_bytes ct);

typedef enum rp_op {
    RP_OP_NONE = 0,
    RP_OP_REAP,
    RP_OP_ANSWER,
    RP_OP_GATES,
    RP_OP_STATUS,
    RP_OP_JOBS,   /* list job-table rows (job triage) */
    RP_OP_JOB,    /* one job-table row */
    RP_OP_CANCEL, /* cancel a ready or leased job */
    RP_OP_GATE,   /* one gate looked inside: its job, its stored dead letter */
    RP_OP_DOCTOR, /* the setup's checks (issue 18 item 6, rp_doctor.h) */
    RP_OP_STATS,  /* rows per owned queue and per (project, kind) (issue 18 item 7) */
    RP_OP_ANSWER_MANY, /* answer many gates as one job (issue 20 item 3) */
    RP_OP_ANSWER_SET,  /* that job's progress, or its cancel */
    RP_OP_COUNT_
} rp_op;

/* "reap", "answer", "gates", "status", "jobs", "job", "cancel", "gate",
 * "doctor", "stats", "answer_many", "answer_set"; "none" for
 * RP_OP_NONE and "unknown" outside the enum. Static, never NULL. */
const char *rp_op_string(rp_op op);
/* Exact match of a wire name; RP_OP_NONE is never parsed. */
bool rp_op_parse(const char *s, rp_op *out) RP_MUSTCHECK;

/* The wire code for any status (CONTRACT section 5): the control codes map
 * to their own names; RP_ERR_TOO_LARGE and RP_ERR_INVALID to "bad_request";
 * RP_ERR_TIMEOUT, RP_ERR_CLOSED and RP_ERR_IO to "unavailable"; anything
 * else (RP_OK included) to "internal". Static, never NULL. */
const char *rp_proto_error_code(rp_status s);
/* Parses a wire code back to its status (exact match, only the seven). */
bool rp_proto_error_code_parse(const char *code, rp_status *out) RP_MUSTCHECK;

/* Why a decode failed. code is RP_OK when nothing failed. has_op says the
 * request's "op" was read as a string (possibly unknown); op is then that
 * string cut to RP_PROTO_OP_MAX bytes on a UTF-8 boundary, for the error
 * reply to echo. message is a NUL-terminated UTF-8 sentence. */
typedef struct rp_proto_error {
    rp_status code;
    bool has_op;
    char op[RP_PROTO_OP_MAX + 1];
    char message[RP_PROTO_MESSAGE_MAX];
} rp_proto_error;

void rp_proto_error_init(rp_proto_error *err);

/* A validated request. Only the sub-struct of op is meaningful; the others
 * stay zeroed. Strings are owned (heap, NUL-terminated, valid UTF-8 without
 * NUL, 1..RP_PROTO_NAME_MAX bytes) or NULL when absent. */
typedef struct rp_request {
    rp_op op;
    struct {
        char *project;   /* NULL: every project */
        bool dry_run;    /* default false */
    } reap;
    struct {
        int64_t gate;    /* >= 1 */
        rp_choice choice;
        char *by;        /* NULL: the daemon should use the AMQP user_id */
    } answer;
    struct {
        rp_gate_state state; /* default RP_GATE_STATE_OPEN */
        int limit;           /* RP_PROTO_LIMIT_MIN..MAX, default ..._DEFAULT */
        char *project;       /* NULL: every project */
        bool has_kind;
        rp_gate_kind kind;   /* when has_kind */
        char *queue;         /* NULL: any dead-letter queue */
        char *origin;        /* NULL: any origin queue */
        char *reason;        /* NULL: any reason */
        int64_t older_than_seconds; /* 0: any age, else 1..RP_PROTO_OLDER_THAN_MAX */
        int64_t after;       /* 0: from the newest, else a gate id >= 1 */
    } gates;
    struct {
        bool any_state;      /* default true ("all") */
        rp_job_state state;  /* when !any_state */
        int limit;           /* RP_PROTO_LIMIT_MIN..MAX, default ..._DEFAULT */
        int64_t after;       /* >= 0, default 0: ids above it */
        char *project;       /* NULL: every project */
        char *kind;          /* NULL: every kind */
    } jobs;
    struct {
        int64_t job;         /* >= 1 */
    } job;
    struct {
        int64_t job;         /* >= 1 */
        char *reason;        /* 1..RP_PROTO_REASON_MAX bytes, required */
    } cancel;
    struct {
        rp_choice choice;    /* replay or dismiss */
        int rate;            /* 1..RP_ANSWER_SET_RATE_MAX, default RP_ANSWER_SET_RATE_DEFAULT */
        bool dry_run;        /* default false */
        int64_t *ids;        /* heap, n_ids (1..RP_ANSWER_SET_IDS_MAX) gate ids; NULL: none */
        size_t n_ids;
        char *project;       /* the filters of gates (open gates only); NULL: any */
        bool has_kind;
        rp_gate_kind kind;
        char *queue;
        char *origin;
        char *reason;
        int64_t older_than_seconds; /* 0: any age */
        char *by;            /* NULL: the daemon uses the AMQP user_id */
    } answer_many;
    struct {
        int64_t job;         /* the answer set's id, >= 1 */
        bool cancel;         /* default false: its progress */
    } answer_set;
    struct {
        int64_t gate;        /* >= 1 */
        int64_t body_offset; /* >= 0, default 0 */
        int64_t body_limit;  /* 1..RP_GATE_LOOK_WINDOW_MAX, default RP_GATE_LOOK_WINDOW_DEFAULT */
    } gate;
} rp_request;

/* Zeroes *req (op RP_OP_NONE). */
void rp_request_init(rp_request *req);
/* Frees the strings and zeroes *req; safe on an initialised request. */
void rp_request_cleanup(rp_request *req);

/* Decodes and validates one request body with the request limits.
 * content_type is the AMQP property (len 0 when absent). *out must be
 * initialised; it is filled only on RP_OK (on failure it is left
 * initialised, nothing to free). err may be NULL. Returns RP_OK,
 * RP_ERR_BAD_REQUEST (unsupported content type, malformed body, broken
 * limit, invalid field), RP_ERR_UNKNOWN_OP, or RP_ERR_NOMEM. */
rp_status rp_request_decode(rp_bytes body, rp_bytes content_type, rp_request *out,
                            rp_proto_error *err) RP_MUSTCHECK;

/* Validates an already parsed tree (what rp_request_decode does after
 * parsing). The tree is borrowed. Same returns as rp_request_decode. */
rp_status rp_request_from_json(const json_t *root, rp_request *out,
                               rp_proto_error *err) RP_MUSTCHECK;

/* An owned output buffer: ptr is heap memory of len bytes followed by a NUL
 * byte (not counted), or NULL when len is 0 and nothing was written.
 * rp_proto_buf_cleanup() frees it and zeroes the struct. */
typedef struct rp_proto_buf {
    uint8_t *ptr;
    size_t len;
} rp_proto_buf;

void rp_proto_buf_init(rp_proto_buf *b);
void rp_proto_buf_cleanup(rp_proto_buf *b);

/* Encoders. Each writes one complete message into *out, which must be
 * initialised and empty (any content is freed first). Returns RP_OK,
 * RP_ERR_NOMEM, RP_ERR_INVALID (an argument outside its enum), or
 * RP_ERR_TOO_LARGE (the result breaks rp_proto_reply_limits; *out is then
 * empty). Strings that are not valid UTF-8 are written with each bad byte
 * replaced by U+FFFD; NULL strings are written as nil/null. */

/* A request (for reaperctl): v, op and the fields of req->op that are set
 * (dry_run, state and limit always). The request is first checked by the
 * same validation as rp_request_decode: an invalid one gives
 * RP_ERR_BAD_REQUEST with err (may be NULL) saying why, and nothing is
 * written. */
rp_status rp_request_encode(const rp_request *req, rp_encoding enc, rp_proto_buf *out,
                            rp_proto_error *err) RP_MUSTCHECK;

/* Success replies: {"v":1,"op":OP,"ok":true,"result":...}. */
rp_status rp_proto_encode_reap_reply(const rp_report *report, rp_encoding enc,
                                     rp_proto_buf *out) RP_MUSTCHECK;
/* choice is the gate's recorded answer (the first one when outcome is
 * RP_OUTCOME_ALREADY_ANSWERED). */
rp_status rp_proto_encode_answer_reply(int64_t gate, rp_choice choice, rp_outcome outcome,
                                       rp_encoding enc, rp_proto_buf *out) RP_MUSTCHECK;
/* The same with a note (a sentence for the person: what a replay left out
 * of the published message and why); NULL or "" adds none. */
rp_status rp_proto_encode_answer_reply_note(int64_t gate, rp_choice choice, rp_outcome outcome,
                                            const char *note, rp_encoding enc,
                                            rp_proto_buf *out) RP_MUSTCHECK;
/* gates may be NULL when n is 0. page: how many gates match in all and
 * where the next page starts ("total", "next_after": null when 0,
 * "total_capped": true when the count stopped at its cap); NULL writes
 * total n, no next page, total_capped false. */
rp_status rp_proto_encode_gates_reply(const rp_gate *gates, size_t n, const rp_gate_page *page,
                                      rp_encoding enc, rp_proto_buf *out) RP_MUSTCHECK;

/* Job triage (SCHEMA.md 4, 5.5). jobs: {"jobs": [job...], "total": int,
 * "next_after": int or null}; job: {"job": job, "payload": string or null,
 * "payload_truncated": bool}; cancel: {"job": job, "from": state,
 * "lease_owner": string or null, "seq": int}. Borrowed arguments. */
rp_status rp_proto_encode_jobs_reply(const rp_job_page *page, rp_encoding enc,
                                     rp_proto_buf *out) RP_MUSTCHECK;
rp_status rp_proto_encode_job_reply(const rp_job_row *job, rp_encoding enc,
                                    rp_proto_buf *out) RP_MUSTCHECK;
/* One gate looked inside (SCHEMA.md 4 `gate`, 5.6): {"gate": gate,
 * "job": {...}, "dead_letter": {...} or null, "replay": {"possible": bool,
 * "why": string or null}}. why_not: NULL when a replay may go ahead, else
 * the reason it would be refused (core's replay checks). The stored
 * headers and properties are embedded as the JSON trees they are. */
rp_status rp_proto_encode_gate_reply(const rp_gate_look *l, const char *why_not, rp_encoding enc,
                                     rp_proto_buf *out) RP_MUSTCHECK;
rp_status rp_proto_encode_cancel_reply(const rp_job_cancel_result *r, rp_encoding enc,
                                       rp_proto_buf *out) RP_MUSTCHECK;

/* Answer sets (SCHEMA.md 4 `answer_many`, `answer_set`). answer_many:
 * {"job": id or null (a dry run), "dry_run", "choice", "rate", "total",
 * "skipped", "queues": [{"queue", "count"}...], "other_queues"};
 * answer_set: {"job": set, "cancelled": bool (this request cancelled it)}.
 * Borrowed arguments. */
rp_status rp_proto_encode_answer_many_reply(const rp_answer_set_made *m, bool dry_run,
                                            rp_choice choice, int rate, rp_encoding enc,
                                            rp_proto_buf *out) RP_MUSTCHECK;
rp_status rp_proto_encode_answer_set_reply(const rp_answer_set_row *row, bool cancelled,
                                           rp_encoding enc, rp_proto_buf *out) RP_MUSTCHECK;
json_t *rp_proto_answer_set_json(const rp_answer_set_row *row);

/* What the status op reports. Borrowed pointers. */
typedef struct rp_proto_status {
    const char *version;      /* reaperd's version string */
    bool broker_up;           /* connected to the broker now */
    bool store_up;            /* connected to PostgreSQL now */
    rp_time_ms last_pass_at;  /* end of the last whole pass; 0: none yet */
    int64_t open_sightings;   /* rows in sighting */
} rp_proto_status;

rp_status rp_proto_encode_status_reply(const rp_proto_status *st, rp_encoding enc,
                                       rp_proto_buf *out) RP_MUSTCHECK;

/* doctor's reply (SCHEMA.md section 4 `doctor`): result {"ok": no check
 * failed, "fail": n, "warn": n, "checks": [{"name", "status", "detail",
 * "fix"}...]} in rp_doctor.h's order. */
rp_status rp_proto_encode_doctor_reply(const rp_doctor_report *r, rp_encoding enc,
                                       rp_proto_buf *out) RP_MUSTCHECK;

/* stats' reply (SCHEMA.md section 4 `stats`): result {"window_seconds",
 * "broker_note": null or why no queue is listed, "queues": [{"vhost",
 * "queue", "ready", "unacked", "consumers", "intake", "drained",
 * "oldest_waiting_seconds", "flags"}...], "kinds": [{"project", "kind",
 * "waiting", "active", "intake", "drained", "oldest_waiting_seconds",
 * "flags"}...], "queues_omitted": n, "kinds_omitted": n (rows past
 * RP_STATS_ROWS_MAX, not listed)}; an unknown number is null, a flag a condition's name,
 * ages in whole seconds (rounded down). */
rp_status rp_proto_encode_stats_reply(const rp_stats *s, rp_encoding enc,
                                      rp_proto_buf *out) RP_MUSTCHECK;

/* Error reply: {"v":1,"op":OP,"ok":false,"error":{"code":C,"message":M}}.
 * op NULL writes "op": nil/null (the request had no readable op). code is
 * mapped with rp_proto_error_code(). message NULL writes the code's name. */
rp_status rp_proto_encode_error_reply(const char *op, rp_status code, const char *message,
                                      rp_encoding enc, rp_proto_buf *out) RP_MUSTCHECK;
/* The error reply for a failed rp_request_decode (op echoed when has_op). */
rp_status rp_proto_encode_decode_error(const rp_proto_error *err, rp_encoding enc,
                                       rp_proto_buf *out) RP_MUSTCHECK;

/* The ledger event body for the events exchange: the verdict map alone
 * (the same map as a QueueReaped ledger payload). */
rp_status rp_proto_encode_verdict(const rp_verdict *v, rp_encoding enc,
                                  rp_proto_buf *out) RP_MUSTCHECK;

/* One committed ledger event as a message of the events exchange
 * (SCHEMA.md section 7), in rp_proto_event.c. The body is the event's
 * ledger payload alone: the verdict map for QueueReaped, {gate, job, kind,
 * choice, outcome, by} for GateAnswered. The routing key is
 * <source>.<condition>.<action> for QueueReaped and gate.<kind>.<outcome>
 * for GateAnswered, in lower case; the message id is "ledger-<seq>".
 * RP_ERR_INVALID for an event with neither or both payloads or a value
 * outside its enum. */
#define RP_PROTO_EVENT_KEY_MAX 96
#define RP_PROTO_EVENT_ID_MAX 32
typedef struct rp_proto_event_msg {
    char routing_key[RP_PROTO_EVENT_KEY_MAX];
    char message_id[RP_PROTO_EVENT_ID_MAX];
    const char *type;       /* the ledger kind; static */
    int64_t timestamp;      /* the row's at, in seconds */
    rp_proto_buf body;      /* owned: rp_proto_event_msg_cleanup */
} rp_proto_event_msg;

struct rp_ledger_event; /* rp_ports.h */
rp_status rp_proto_encode_event(const struct rp_ledger_event *ev, rp_encoding enc,
                                rp_proto_event_msg *out) RP_MUSTCHECK;
void rp_proto_event_msg_cleanup(rp_proto_event_msg *m);

/* The pass report as one JSON object in a NUL-terminated heap string (for
 * `reaperd --once --json`; no size limit, no trailing newline). pretty
 * indents by 2. *out is set only on RP_OK; free() it. */
rp_status rp_proto_report_json_text(const rp_report *report, bool pretty,
                                    char **out) RP_MUSTCHECK;

/* Tree builders behind the encoders (new references, NULL only on
 * allocation failure or an argument outside its enum). The verdict tree is
 * also the QueueReaped ledger payload (jsonb). */
json_t *rp_proto_verdict_json(const rp_verdict *v);
json_t *rp_proto_report_json(const rp_report *report);
json_t *rp_proto_gate_json(const rp_gate *g);
json_t *rp_proto_status_json(const rp_proto_status *st);
/* A job row (SCHEMA.md 5.5), without its payload. */
json_t *rp_proto_job_json(const rp_job_row *j);

/* Parses any message (a reply, a request, an event) into a generic tree,
 * with limits (NULL: rp_proto_reply_limits) enforced while parsing, and the
 * same rules as requests (duplicate keys, invalid UTF-8, NUL, bin/ext,
 * non-finite floats and integers beyond int64 are refused). Returns a new
 * reference, or NULL with err filled (code RP_ERR_BAD_REQUEST or
 * RP_ERR_NOMEM). err may be NULL. */
json_t *rp_proto_to_json(rp_bytes body, rp_bytes content_type, const rp_proto_limits *limits,
                         rp_proto_error *err);

/* Writes a tree as msgpack or compact JSON into *out (no limit check). */
rp_status rp_proto_encode_json(const json_t *tree, rp_encoding enc,
                               rp_proto_buf *out) RP_MUSTCHECK;

/* A reply read back: borrowed views into the tree it came from. */
typedef struct rp_proto_reply_view {
    const char *op;          /* NULL when the reply's op is null */
    bool ok;
    const json_t *result;    /* when ok: the result map */
    const char *code;        /* when !ok: the error code */
    const char *message;     /* when !ok: the error message */
} rp_proto_reply_view;

/* Checks a reply envelope (v is 1, op a string or null, ok a bool, result a
 * map when ok, error {code, message} with a known code when not) and fills
 * *view. Returns RP_OK or RP_ERR_BAD_REQUEST with err saying what is wrong. */
rp_status rp_proto_reply_unwrap(const json_t *reply, rp_proto_reply_view *view,
                                rp_proto_error *err) RP_MUSTCHECK;

/* Times on the wire: RFC 3339 UTC with milliseconds, exactly
 * "YYYY-MM-DDTHH:MM:SS.sssZ". Format returns false (and writes "") for a
 * time outside years 0000..9999; size must be >= RP_PROTO_TIME_SIZE. Parse
 * accepts only that exact form. */
bool rp_proto_format_time(rp_time_ms t, char *buf, size_t size) RP_MUSTCHECK;
bool rp_proto_parse_time(const char *s, rp_time_ms *out) RP_MUSTCHECK;

#endif
