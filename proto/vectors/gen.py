#!/usr/bin/env python3
"""Writes the control protocol test vectors of proto/vectors/.

Standard library only: msgpack is written by hand below, in the smallest
forms (the forms msgpack-c's packer chooses), so that reply vectors are
byte-for-byte what reaperd sends. Run from anywhere:

    python3 proto/vectors/gen.py

It also refreshes the vec_* seeds of tests/fuzz/corpus/proto_decode/.

Each vector NAME has NAME.msgpack and/or NAME.json (the bytes) and
NAME.expect (a JSON document, their meaning):

    kind          "request" (decoded by rp_request_decode), "reply" or
                  "event" (decoded by rp_proto_to_json with the reply limits)
    description   what the vector shows
    content_type  optional: the AMQP content_type to pass (null: absent);
                  default: from the file's extension
    ok            whether decoding succeeds
    request       (request, ok) the decoded request, defaults filled in
    value         (reply/event, ok) the decoded tree; integers and floats
                  are distinct (5 is not 5.0)
    fixture       (reply/event, optional) a fixture the C test encodes; its
                  bytes must equal the vector's exactly
    error         (not ok) {"code", "message_contains", "op"}: op is what the
                  error reply echoes (null: no readable op)

When a vector has both files, both must decode to the same meaning.
"""

import json
import math
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- a minimal msgpack writer ---------------------------------------------


class Raw(bytes):
    """Bytes written verbatim (for malformed vectors)."""


class F32(float):
    """A float written as msgpack float32."""


def mp(o):
    if isinstance(o, Raw):
        return bytes(o)
    if o is None:
        return b"\xc0"
    if o is True:
        return b"\xc3"
    if o is False:
        return b"\xc2"
    if isinstance(o, int):
        if o >= 0:
            if o < 128:
                return bytes([o])
            if o < 1 << 8:
                return b"\xcc" + struct.pack(">B", o)
            if o < 1 << 16:
                return b"\xcd" + struct.pack(">H", o)
            if o < 1 << 32:
                return b"\xce" + struct.pack(">I", o)
            return b"\xcf" + struct.pack(">Q", o)
        if o >= -32:
            return struct.pack(">b", o)
        if o >= -(1 << 7):
            return b"\xd0" + struct.pack(">b", o)
        if o >= -(1 << 15):
            return b"\xd1" + struct.pack(">h", o)
        if o >= -(1 << 31):
            return b"\xd2" + struct.pack(">i", o)
        return b"\xd3" + struct.pack(">q", o)
    if isinstance(o, F32):
        return b"\xca" + struct.pack(">f", o)
    if isinstance(o, float):
        return b"\xcb" + struct.pack(">d", o)
    if isinstance(o, (str, bytes)):
        b = o.encode("utf-8") if isinstance(o, str) else o
        n = len(b)
        if n < 32:
            h = bytes([0xA0 | n])
        elif n < 1 << 8:
            h = b"\xd9" + struct.pack(">B", n)
        elif n < 1 << 16:
            h = b"\xda" + struct.pack(">H", n)
        else:
            h = b"\xdb" + struct.pack(">I", n)
        return h + b
    if isinstance(o, list):
        n = len(o)
        if n < 16:
            h = bytes([0x90 | n])
        elif n < 1 << 16:
            h = b"\xdc" + struct.pack(">H", n)
        else:
            h = b"\xdd" + struct.pack(">I", n)
        return h + b"".join(mp(x) for x in o)
    if isinstance(o, (dict, Pairs)):
        items = o.items()
        n = len(items)
        if n < 16:
            h = bytes([0x80 | n])
        elif n < 1 << 16:
            h = b"\xde" + struct.pack(">H", n)
        else:
            h = b"\xdf" + struct.pack(">I", n)
        return h + b"".join(mp(k) + mp(v) for k, v in items)
    raise TypeError(type(o))


class Pairs:
    """A map that may repeat keys (for duplicate-key vectors)."""

    def __init__(self, *pairs):
        self.pairs = list(pairs)

    def items(self):
        return self.pairs


def js(o):
    """Compact JSON, as jansson's JSON_COMPACT writes it."""
    if isinstance(o, Pairs):
        return b"{" + b",".join(js(k) + b":" + js(v) for k, v in o.items()) + b"}"
    if isinstance(o, float) and not math.isfinite(o):
        raise ValueError("no JSON for " + repr(o))
    if isinstance(o, (dict, list)) and any(isinstance(x, Pairs) for x in _walk(o)):
        if isinstance(o, dict):
            return b"{" + b",".join(js(k) + b":" + js(v) for k, v in o.items()) + b"}"
        return b"[" + b",".join(js(x) for x in o) + b"]"
    return json.dumps(o, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _walk(o):
    yield o
    if isinstance(o, dict):
        for v in o.values():
            yield from _walk(v)
    elif isinstance(o, list):
        for v in o:
            yield from _walk(v)


# ---- the vectors -----------------------------------------------------------

VECTORS = {}


def add(name, expect, msgpack=None, json_bytes=None):
    assert name not in VECTORS, name
    assert msgpack is not None or json_bytes is not None
    VECTORS[name] = (expect, msgpack, json_bytes)


def both(obj):
    return mp(obj), js(obj)


def req_ok(name, desc, obj, decoded, msgpack=None, json_bytes=None, content_type=Ellipsis,
           only=None):
    m, j = (msgpack, json_bytes) if (msgpack or json_bytes) else both(obj)
    if only == "msgpack":
        j = None
    if only == "json":
        m = None
    e = {"kind": "request", "description": desc, "ok": True, "request": decoded}
    if content_type is not Ellipsis:
        e["content_type"] = content_type
    add(name, e, m, j)


def req_err(name, desc, code, contains, op=None, obj=Ellipsis, msgpack=None, json_bytes=None,
            content_type=Ellipsis, only=None):
    m, j = msgpack, json_bytes
    if obj is not Ellipsis:
        m, j = both(obj)
    if only == "msgpack":
        j = None
    if only == "json":
        m = None
    e = {"kind": "request", "description": desc, "ok": False,
         "error": {"code": code, "message_contains": contains, "op": op}}
    if content_type is not Ellipsis:
        e["content_type"] = content_type
    add(name, e, m, j)


def reply(name, desc, value, fixture=None, kind="reply"):
    e = {"kind": kind, "description": desc, "ok": True, "value": value}
    if fixture:
        e["fixture"] = fixture
    add(name, e, mp(value), js(value))


def R(op, **kw):
    d = {"op": op}
    d.update(kw)
    return d


REAP = lambda project=None, dry_run=False: R("reap", project=project, dry_run=dry_run)
ANSWER = lambda gate, choice, by=None: R("answer", gate=gate, choice=choice, by=by)
GATES = lambda state="open", limit=100, project=None, kind=None, queue=None, origin=None, reason=None, \
    older_than_seconds=0, after=0: R("gates", state=state, limit=limit, project=project, kind=kind, queue=queue,
                                     origin=origin, reason=reason, older_than_seconds=older_than_seconds,
                                     after=after)
STATUS = {"op": "status"}
JOBS = lambda state="all", limit=100, after=0, project=None, kind=None: R(
    "jobs", state=state, limit=limit, after=after, project=project, kind=kind)
JOB = lambda job: R("job", job=job)
GATE = lambda gate, body_offset=0, body_limit=4096: R("gate", gate=gate, body_offset=body_offset,
                                                      body_limit=body_limit)
CANCEL = lambda job, reason: R("cancel", job=job, reason=reason)


def requests_ok():
    req_ok("req_reap_minimal", "reap with defaults", {"v": 1, "op": "reap"}, REAP())
    req_ok("req_reap_full", "reap one project, dry run",
           {"v": 1, "op": "reap", "project": "alpha", "dry_run": True}, REAP("alpha", True))
    req_ok("req_reap_null_project", "null means absent for an optional field",
           {"v": 1, "op": "reap", "project": None, "dry_run": None}, REAP())
    req_ok("req_reap_key_order", "keys in any order", {"dry_run": False, "op": "reap", "v": 1},
           REAP())
    req_ok("req_reap_unicode_project", "a UTF-8 project name",
           {"v": 1, "op": "reap", "project": "proj\u00e9-\u2713-\U0001F600"},
           REAP("proj\u00e9-\u2713-\U0001F600"))
    req_ok("req_reap_project_256", "a project name of exactly 256 bytes",
           {"v": 1, "op": "reap", "project": "p" * 256}, REAP("p" * 256))
    req_ok("req_answer_replay", "answer a dead-letter gate",
           {"v": 1, "op": "answer", "gate": 42, "choice": "replay", "by": "alice"},
           ANSWER(42, "replay", "alice"))
    req_ok("req_answer_retry", "answer without by",
           {"v": 1, "op": "answer", "gate": 7, "choice": "retry"}, ANSWER(7, "retry"))
    req_ok("req_answer_dismiss_max_gate", "the largest gate id",
           {"v": 1, "op": "answer", "gate": 9223372036854775807, "choice": "dismiss"},
           ANSWER(9223372036854775807, "dismiss"))
    req_ok("req_answer_gate_300", "a gate id in uint16 form",
           {"v": 1, "op": "answer", "gate": 300, "choice": "dismiss"}, ANSWER(300, "dismiss"))
    req_ok("req_gates_defaults", "gates with defaults: open, 100", {"v": 1, "op": "gates"}, GATES())
    req_ok("req_gates_full", "every gates field",
           {"v": 1, "op": "gates", "state": "all", "limit": 1000, "project": "beta"},
           GATES("all", 1000, "beta"))
    req_ok("req_gates_filters", "every gates filter: kind, queues, reason, age and the next page",
           {"v": 1, "op": "gates", "state": "open", "limit": 50, "kind": "bus_dead_lettered",
            "queue": "vibey.orders.dlq", "origin": "vibey.orders", "reason": "rejected",
            "older_than_seconds": 3600, "after": 1234},
           GATES("open", 50, None, "bus_dead_lettered", "vibey.orders.dlq", "vibey.orders", "rejected",
                 3600, 1234))
    req_ok("req_gates_null_filters", "null filters are absent",
           {"v": 1, "op": "gates", "kind": None, "queue": None, "after": None}, GATES())
    req_ok("req_gates_limit_1", "the smallest limit",
           {"v": 1, "op": "gates", "state": "answered", "limit": 1}, GATES("answered", 1))
    req_ok("req_status", "status", {"v": 1, "op": "status"}, STATUS)
    req_ok("req_jobs_defaults", "jobs with defaults: every state, 100, from the first id",
           {"v": 1, "op": "jobs"}, JOBS())
    req_ok("req_jobs_full", "every jobs field",
           {"v": 1, "op": "jobs", "state": "leased", "project": "alpha", "kind": "pdf.render",
            "limit": 50, "after": 1200}, JOBS("leased", 50, 1200, "alpha", "pdf.render"))
    req_ok("req_jobs_state_all", "state all is every state, as absent",
           {"v": 1, "op": "jobs", "state": "all", "limit": 1000}, JOBS(limit=1000))
    req_ok("req_job", "one job", {"v": 1, "op": "job", "job": 42}, JOB(42))
    req_ok("req_gate", "one gate looked inside: the first 4 KiB of its body", {"v": 1, "op": "gate", "gate": 7},
           GATE(7))
    req_ok("req_gate_window", "the next 32 KiB of its body",
           {"v": 1, "op": "gate", "gate": 7, "body_offset": 4096, "body_limit": 32768}, GATE(7, 4096, 32768))
    req_ok("req_doctor", "doctor: the setup's checks", {"v": 1, "op": "doctor"}, {"op": "doctor"})
    req_ok("req_stats", "stats: rows per owned queue and per (project, kind)", {"v": 1, "op": "stats"},
           {"op": "stats"})
    req_ok("req_answer_many_ids", "answer many: named ids, replay, the default rate",
           {"v": 1, "op": "answer_many", "choice": "replay", "ids": [3, 5, 8]},
           {"op": "answer_many", "choice": "replay", "rate": 100, "dry_run": False, "ids": [3, 5, 8]})
    req_ok("req_answer_many_filters", "answer many: every open gate from one origin, a dry run",
           {"v": 1, "op": "answer_many", "choice": "dismiss", "rate": 500, "dry_run": True,
            "origin": "vibey.orders", "by": "ops"},
           {"op": "answer_many", "choice": "dismiss", "rate": 500, "dry_run": True, "ids": [],
            "origin": "vibey.orders", "by": "ops"})
    req_ok("req_answer_set_cancel", "an answer set cancelled",
           {"v": 1, "op": "answer_set", "job": 12, "cancel": True},
           {"op": "answer_set", "job": 12, "cancel": True})
    req_ok("req_cancel", "cancel a job with a reason",
           {"v": 1, "op": "cancel", "job": 42, "reason": "stuck on a bad PDF"},
           CANCEL(42, "stuck on a bad PDF"))
    req_ok("req_cancel_reason_1024", "a reason of exactly 1024 bytes",
           {"v": 1, "op": "cancel", "job": 9223372036854775807, "reason": "r" * 1024},
           CANCEL(9223372036854775807, "r" * 1024))
    req_ok("req_json_escaped_keys", "status, with a key and a value given as escapes in JSON",
           None, STATUS, msgpack=mp({"v": 1, "op": "status"}),
           json_bytes=b'{"\\u0076":1,"op":"st\\u0061tus"}')
    # Transport variants.
    req_ok("req_no_content_type", "an absent content_type means msgpack",
           {"v": 1, "op": "status"}, STATUS, content_type=None, only="msgpack")
    req_ok("req_ct_x_msgpack", "application/x-msgpack is taken as msgpack",
           {"v": 1, "op": "status"}, STATUS, content_type="application/x-msgpack", only="msgpack")
    req_ok("req_ct_json_params", "parameters and case of the content type are ignored",
           {"v": 1, "op": "status"}, STATUS, content_type="Application/JSON; charset=utf-8",
           only="json")
    req_ok("req_json_whitespace", "JSON with whitespace around and inside", None, GATES(limit=5),
           json_bytes=b' \n{ "v" : 1 ,\n\t"op" : "gates" , "limit" : 5 }\r\n ')
    # msgpack forms that are not the smallest are still accepted.
    req_ok("req_mp_wide_ints", "integers in wider forms than needed", None, ANSWER(42, "retry"),
           msgpack=b"\x84" + mp("v") + b"\xcf" + struct.pack(">Q", 1) + mp("op") + mp("answer") +
           mp("gate") + b"\xd3" + struct.pack(">q", 42) + mp("choice") + mp("retry"))
    req_ok("req_mp_wide_str_map", "str8/str16 strings and a map16 header", None, STATUS,
           msgpack=b"\xde\x00\x02" + b"\xd9\x01v" + b"\x01" + b"\xda\x00\x02op" + b"\xd9\x06status")


def requests_bad():
    E = "bad_request"
    # Transport and envelope.
    req_err("err_empty_body", "an empty body", E, "empty body", msgpack=b"", json_bytes=b"")
    req_err("err_content_type_text", "an unsupported content type", E,
            'content_type "text/plain" is not supported', obj={"v": 1, "op": "status"},
            content_type="text/plain", only="json")
    req_err("err_content_type_xml", "an unsupported content type with parameters", E,
            "is not supported", obj={"v": 1, "op": "status"},
            content_type="application/xml; charset=utf-8", only="json")
    req_err("err_not_a_map_array", "the body is an array", E, "the request must be a map, got an array",
            obj=[1, "reap"])
    req_err("err_not_a_map_string", "the body is a string", E, "the request must be a map, got a string",
            obj="reap")
    req_err("err_not_a_map_null", "the body is null", E, "the request must be a map, got null",
            obj=None)
    req_err("err_missing_v", "no v", E, 'missing field "v"', op="status", obj={"op": "status"})
    req_err("err_v_null", "v is null", E, 'missing field "v"', op="status", obj={"v": None, "op": "status"})
    req_err("err_v_2", "protocol version 2", E, 'unsupported protocol version 2 in field "v"',
            op="status", obj={"v": 2, "op": "status"})
    req_err("err_v_0", "protocol version 0", E, "unsupported protocol version 0", op="reap",
            obj={"v": 0, "op": "reap"})
    req_err("err_v_string", "v as a string", E, 'field "v" must be an integer, got a string',
            op="status", obj={"v": "1", "op": "status"})
    req_err("err_v_float", "v as a float (1.0)", E, 'field "v" must be an integer, got a float',
            op="status", obj={"v": 1.0, "op": "status"})
    req_err("err_v_bool", "v as a bool", E, 'field "v" must be an integer, got a bool', op="status",
            obj={"v": True, "op": "status"})
    req_err("err_missing_op", "no op", E, 'missing field "op"', obj={"v": 1})
    req_err("err_op_int", "op as an integer", E, 'field "op" must be a string, got an integer',
            obj={"v": 1, "op": 3})
    req_err("err_op_null", "op null", E, 'missing field "op"', obj={"v": 1, "op": None})
    req_err("err_op_map", "op as a map", E, 'field "op" must be a string, got a map',
            obj={"v": 1, "op": {"name": "reap"}})
    req_err("err_unknown_op", "an unknown op", "unknown_op", 'unknown op "frobnicate"', op="frobnicate",
            obj={"v": 1, "op": "frobnicate"})
    req_err("err_unknown_op_case", "op names are case sensitive", "unknown_op", 'unknown op "REAP"',
            op="REAP", obj={"v": 1, "op": "REAP"})
    req_err("err_unknown_op_empty", "an empty op", "unknown_op", 'unknown op ""', op="",
            obj={"v": 1, "op": ""})
    long_op = "x" * 300
    req_err("err_unknown_op_long", "a 300-byte op is quoted cut in the message and echoed cut to 64",
            "unknown_op", 'unknown op "' + "x" * 64 + '"...', op="x" * 64, obj={"v": 1, "op": long_op})
    req_err("err_unknown_op_wrong_v", "a bad v is reported before an unknown op", E,
            "unsupported protocol version 3", op="frob", obj={"v": 3, "op": "frob"})
    req_err("err_unknown_field", "a misspelt field is refused, not ignored", E,
            'unknown field "dryrun" for op reap', op="reap", obj={"v": 1, "op": "reap", "dryrun": True})
    req_err("err_doctor_extra_field", "doctor takes no fields", E, 'unknown field "json" for op doctor',
            op="doctor", obj={"v": 1, "op": "doctor", "json": True})
    req_err("err_stats_extra_field", "stats takes no fields", E, 'unknown field "project" for op stats',
            op="stats", obj={"v": 1, "op": "stats", "project": "alpha"})
    req_err("err_status_extra_field", "status takes no fields", E, 'unknown field "limit" for op status',
            op="status", obj={"v": 1, "op": "status", "limit": 5})
    req_err("err_answer_field_on_gates", "a field of another op", E, 'unknown field "gate" for op gates',
            op="gates", obj={"v": 1, "op": "gates", "gate": 5})
    # reap fields.
    req_err("err_dry_run_int", "dry_run as 1", E, 'field "dry_run" must be a bool (true or false), got an integer',
            op="reap", obj={"v": 1, "op": "reap", "dry_run": 1})
    req_err("err_dry_run_string", "dry_run as \"true\"", E, 'field "dry_run" must be a bool', op="reap",
            obj={"v": 1, "op": "reap", "dry_run": "true"})
    req_err("err_project_empty", "an empty project", E, 'field "project" must not be empty', op="reap",
            obj={"v": 1, "op": "reap", "project": ""})
    req_err("err_project_int", "project as an integer", E, 'field "project" must be a string, got an integer',
            op="reap", obj={"v": 1, "op": "reap", "project": 5})
    req_err("err_project_array", "project as an array", E, 'field "project" must be a string, got an array',
            op="gates", obj={"v": 1, "op": "gates", "project": ["a"]})
    req_err("err_project_257", "a project of 257 bytes", E,
            'field "project" must be at most 256 bytes, got 257', op="reap",
            obj={"v": 1, "op": "reap", "project": "p" * 257})
    # answer fields.
    req_err("err_answer_missing_gate", "answer without gate", E, 'missing field "gate"', op="answer",
            obj={"v": 1, "op": "answer", "choice": "retry"})
    req_err("err_answer_gate_0", "gate 0", E, 'field "gate" must be in 1..9223372036854775807, got 0',
            op="answer", obj={"v": 1, "op": "answer", "gate": 0, "choice": "retry"})
    req_err("err_answer_gate_negative", "gate -5", E, 'field "gate" must be in 1..9223372036854775807, got -5',
            op="answer", obj={"v": 1, "op": "answer", "gate": -5, "choice": "retry"})
    req_err("err_answer_gate_min_int64", "gate -2^63", E, "got -9223372036854775808", op="answer",
            obj={"v": 1, "op": "answer", "gate": -9223372036854775808, "choice": "retry"})
    req_err("err_answer_gate_float", "gate 5.0", E, 'field "gate" must be an integer, got a float',
            op="answer", obj={"v": 1, "op": "answer", "gate": 5.0, "choice": "retry"})
    req_err("err_answer_gate_string", "gate \"42\"", E, 'field "gate" must be an integer, got a string',
            op="answer", obj={"v": 1, "op": "answer", "gate": "42", "choice": "retry"})
    req_err("err_answer_gate_bool", "gate true", E, 'field "gate" must be an integer, got a bool',
            op="answer", obj={"v": 1, "op": "answer", "gate": True, "choice": "retry"})
    req_err("err_answer_missing_choice", "answer without choice", E, 'missing field "choice"',
            op="answer", obj={"v": 1, "op": "answer", "gate": 1})
    req_err("err_answer_choice_unknown", "choice delete", E,
            'field "choice" must be one of replay, dismiss, retry, got "delete"', op="answer",
            obj={"v": 1, "op": "answer", "gate": 1, "choice": "delete"})
    req_err("err_answer_choice_case", "choice Replay", E, 'got "Replay"', op="answer",
            obj={"v": 1, "op": "answer", "gate": 1, "choice": "Replay"})
    req_err("err_answer_choice_int", "choice 1", E, 'field "choice" must be a string, got an integer',
            op="answer", obj={"v": 1, "op": "answer", "gate": 1, "choice": 1})
    req_err("err_answer_by_empty", "by empty", E, 'field "by" must not be empty', op="answer",
            obj={"v": 1, "op": "answer", "gate": 1, "choice": "dismiss", "by": ""})
    req_err("err_answer_by_int", "by 5", E, 'field "by" must be a string, got an integer', op="answer",
            obj={"v": 1, "op": "answer", "gate": 1, "choice": "dismiss", "by": 5})
    # gates fields.
    for name, val, msg in [
        ("err_gates_limit_0", 0, 'field "limit" must be in 1..1000, got 0'),
        ("err_gates_limit_1001", 1001, 'field "limit" must be in 1..1000, got 1001'),
        ("err_gates_limit_negative", -1, 'field "limit" must be in 1..1000, got -1'),
        ("err_gates_limit_huge", 1 << 40, 'field "limit" must be in 1..1000, got 1099511627776'),
        ("err_gates_limit_float", 5.0, 'field "limit" must be an integer, got a float'),
        ("err_gates_limit_float_frac", 5.5, 'field "limit" must be an integer, got a float'),
        ("err_gates_limit_string", "5", 'field "limit" must be an integer, got a string'),
    ]:
        req_err(name, "gates limit %r" % (val,), E, msg, op="gates", obj={"v": 1, "op": "gates", "limit": val})
    req_err("err_gates_limit_float32", "a msgpack float32 for limit", E,
            'field "limit" must be an integer, got a float', op="gates",
            obj={"v": 1, "op": "gates", "limit": F32(5.0)}, only="msgpack")
    req_err("err_gates_limit_exp", "JSON 5e0 is a float", E, 'field "limit" must be an integer, got a float',
            op="gates", json_bytes=b'{"v":1,"op":"gates","limit":5e0}')
    req_err("err_gates_limit_minus_zero", "JSON -0 is the integer 0", E, 'got 0', op="gates",
            json_bytes=b'{"v":1,"op":"gates","limit":-0}')
    req_err("err_gates_kind_unknown", "kind poison", E,
            'field "kind" must be one of delivery_exhausted, bus_dead_lettered, got "poison"', op="gates",
            obj={"v": 1, "op": "gates", "kind": "poison"})
    req_err("err_gates_queue_empty", "an empty queue filter", E, 'field "queue" must not be empty',
            op="gates", obj={"v": 1, "op": "gates", "queue": ""})
    req_err("err_gates_older_than_0", "older_than_seconds 0", E,
            'field "older_than_seconds" must be in 1..315360000, got 0', op="gates",
            obj={"v": 1, "op": "gates", "older_than_seconds": 0})
    req_err("err_gates_after_negative", "after -5", E,
            'field "after" must be in 1..9223372036854775807, got -5', op="gates",
            obj={"v": 1, "op": "gates", "after": -5})
    req_err("err_gates_after_string", "after as a string", E,
            'field "after" must be an integer, got a string', op="gates",
            obj={"v": 1, "op": "gates", "after": "12"})
    req_err("err_gates_state_unknown", "state closed", E,
            'field "state" must be one of open, answered, all, got "closed"', op="gates",
            obj={"v": 1, "op": "gates", "state": "closed"})
    req_err("err_gates_state_int", "state 1", E, 'field "state" must be a string, got an integer',
            op="gates", obj={"v": 1, "op": "gates", "state": 1})
    # jobs, job and cancel fields.
    req_err("err_jobs_state_unknown", "jobs state stuck", E,
            'field "state" must be one of ready, leased, succeeded, failed, awaiting_human, all, '
            'got "stuck"', op="jobs", obj={"v": 1, "op": "jobs", "state": "stuck"})
    req_err("err_jobs_state_open", "jobs take job states, not gate states", E,
            'field "state" must be one of ready', op="jobs", obj={"v": 1, "op": "jobs", "state": "open"})
    req_err("err_jobs_limit_negative", "jobs limit -1", E, 'field "limit" must be in 1..1000, got -1',
            op="jobs", obj={"v": 1, "op": "jobs", "limit": -1})
    req_err("err_jobs_limit_0", "jobs limit 0", E, 'field "limit" must be in 1..1000, got 0',
            op="jobs", obj={"v": 1, "op": "jobs", "limit": 0})
    req_err("err_jobs_after_negative", "jobs after -1", E,
            'field "after" must be in 0..9223372036854775807, got -1', op="jobs",
            obj={"v": 1, "op": "jobs", "after": -1})
    req_err("err_jobs_after_string", "jobs after as a string", E,
            'field "after" must be an integer, got a string', op="jobs",
            obj={"v": 1, "op": "jobs", "after": "12"})
    req_err("err_jobs_kind_empty", "an empty kind", E, 'field "kind" must not be empty', op="jobs",
            obj={"v": 1, "op": "jobs", "kind": ""})
    req_err("err_jobs_field_of_cancel", "reason is not a field of jobs", E,
            'unknown field "reason" for op jobs', op="jobs", obj={"v": 1, "op": "jobs", "reason": "x"})
    req_err("err_gate_missing_gate", "gate without gate", E, 'missing field "gate"', op="gate",
            obj={"v": 1, "op": "gate"})
    req_err("err_gate_limit_0", "a body window of 0", E, 'field "body_limit" must be in 1..32768, got 0',
            op="gate", obj={"v": 1, "op": "gate", "gate": 7, "body_limit": 0})
    req_err("err_gate_limit_big", "a body window over 32 KiB", E,
            'field "body_limit" must be in 1..32768, got 32769', op="gate",
            obj={"v": 1, "op": "gate", "gate": 7, "body_limit": 32769})
    req_err("err_gate_offset_negative", "a negative offset", E,
            'field "body_offset" must be in 0..9223372036854775807, got -1', op="gate",
            obj={"v": 1, "op": "gate", "gate": 7, "body_offset": -1})
    req_err("err_answer_many_retry", "answer many does not retry", E,
            'field "choice" must be one of replay, dismiss, got "retry"', op="answer_many",
            obj={"v": 1, "op": "answer_many", "choice": "retry"})
    req_err("err_answer_many_ids_65", "at most 64 ids", E, 'array of 65 entries exceeds the limit of 64',
            op=None, obj={"v": 1, "op": "answer_many", "choice": "replay",
                                   "ids": list(range(1, 65)) + [65]})
    req_err("err_answer_many_rate_0", "a rate of 0", E, 'field "rate" must be in 1..10000, got 0',
            op="answer_many", obj={"v": 1, "op": "answer_many", "choice": "replay", "rate": 0})
    req_err("err_answer_set_missing_job", "answer_set without job", E, 'missing field "job"',
            op="answer_set", obj={"v": 1, "op": "answer_set"})
    req_err("err_job_missing_job", "job without job", E, 'missing field "job"', op="job",
            obj={"v": 1, "op": "job"})
    req_err("err_job_0", "job 0", E, 'field "job" must be in 1..9223372036854775807, got 0', op="job",
            obj={"v": 1, "op": "job", "job": 0})
    req_err("err_cancel_missing_reason", "cancel without a reason", E, 'missing field "reason"',
            op="cancel", obj={"v": 1, "op": "cancel", "job": 42})
    req_err("err_cancel_null_reason", "a null reason is a missing one", E, 'missing field "reason"',
            op="cancel", obj={"v": 1, "op": "cancel", "job": 42, "reason": None})
    req_err("err_cancel_reason_empty", "an empty reason", E, 'field "reason" must not be empty',
            op="cancel", obj={"v": 1, "op": "cancel", "job": 42, "reason": ""})
    req_err("err_cancel_reason_1025", "a reason of 1025 bytes", E,
            'field "reason" must be at most 1024 bytes, got 1025', op="cancel",
            obj={"v": 1, "op": "cancel", "job": 42, "reason": "r" * 1025})
    req_err("err_cancel_job_float", "a float job id", E, 'field "job" must be an integer, got a float',
            op="cancel", obj={"v": 1, "op": "cancel", "job": 42.0, "reason": "x"})


def requests_hostile():
    E = "bad_request"
    # Duplicate keys.
    req_err("err_duplicate_v", "v twice", E, 'duplicate key "v"', obj=Pairs(("v", 1), ("v", 1), ("op", "status")))
    req_err("err_duplicate_op", "op twice with different values", E, 'duplicate key "op"',
            obj=Pairs(("v", 1), ("op", "status"), ("op", "reap")))
    req_err("err_duplicate_nested", "a duplicate key inside a nested map", E, 'duplicate key "a"',
            obj={"v": 1, "op": "status", "x": Pairs(("a", 1), ("a", 2))})
    req_err("err_duplicate_escaped", "a duplicate hidden by a JSON escape", E, "duplicate key",
            json_bytes=b'{"v":1,"\\u0076":1,"op":"status"}')
    # Depth.
    def nest(n):
        o = 1
        for _ in range(n):
            o = [o]
        return o
    req_err("err_depth_100", "100 nested arrays", E, "nesting deeper than 8",
            obj={"v": 1, "op": "status", "x": nest(100)})
    req_err("err_depth_top_100", "a body of 100 nested arrays", E, "nesting deeper than 8", obj=nest(100))
    req_err("err_depth_9", "depth 9: the map and 8 arrays", E, "nesting deeper than 8",
            obj={"v": 1, "op": "status", "x": nest(8)})
    req_err("err_depth_8_parses", "depth 8 parses; the field is then unknown", E,
            'unknown field "x" for op status', op="status", obj={"v": 1, "op": "status", "x": nest(7)})
    req_err("err_depth_brackets_in_strings", "brackets inside strings are not nesting", E,
            'unknown field "x" for op status', op="status",
            obj={"v": 1, "op": "status", "x": "[[[[[[[[[[{{{{{{{{{{\\\"[[[[[["})
    # Sizes.
    req_err("err_string_10mb_declared", "a string declaring 10,000,000 bytes in a 28-byte body", E,
            "string of 10000000 bytes exceeds the limit of 4096",
            msgpack=b"\x83" + mp("v") + mp(1) + mp("op") + mp("reap") + mp("project") +
            b"\xdb" + struct.pack(">I", 10000000) + b"abc")
    req_err("err_string_4097", "a string of 4097 bytes", E, "string of 4097 bytes exceeds the limit of 4096",
            obj={"v": 1, "op": "reap", "project": "s" * 4097})
    req_err("err_key_5000", "a key of 5000 bytes", E, "string of 5000 bytes exceeds the limit of 4096",
            obj={"v": 1, "op": "reap", "k" * 5000: 1})
    req_err("err_map_2_32", "a map declaring 2^32-1 entries in 5 bytes", E,
            "map of 4294967295 entries exceeds the limit of 64", msgpack=b"\xdf\xff\xff\xff\xff\xa1v\x01")
    req_err("err_array_2_32_nested", "an array declaring 2^32-1 entries inside a request", E,
            "array of 4294967295 entries exceeds the limit of 64",
            msgpack=b"\x83" + mp("v") + mp(1) + mp("op") + mp("status") + mp("x") + b"\xdd\xff\xff\xff\xff\x01")
    req_err("err_map16_lies", "a map16 declaring 60 entries with 1 present", E, "truncated msgpack",
            msgpack=b"\xde\x00\x3c\xa1v\x01")
    req_err("err_array_65", "an array of 65 entries", E, "array of 65 entries exceeds the limit of 64",
            obj={"v": 1, "op": "status", "x": [0] * 65})
    req_err("err_array_64_parses", "an array of 64 entries parses", E, 'unknown field "x"', op="status",
            obj={"v": 1, "op": "status", "x": [0] * 64})
    big_map = {"v": 1, "op": "status"}
    for i in range(63):
        big_map["k%02d" % i] = i
    req_err("err_map_65", "a map of 65 entries", E, "map of 65 entries exceeds the limit of 64", obj=big_map)
    req_err("err_too_many_values", "more than 1024 values", E, "more than 1024 values in the document",
            obj={"v": 1, "op": "status", "x": [[0] * 60] * 20})
    req_err("err_body_too_large", "a body over 64 KiB", E, "exceeds the limit of 65536",
            obj={"v": 1, "op": "status", "x": ["a" * 4000] * 17})
    # UTF-8 and NUL.
    for name, bad, desc in [
        ("err_utf8_ff", b"\xff", "a 0xff byte"),
        ("err_utf8_overlong", b"\xc0\xaf", "an overlong '/'"),
        ("err_utf8_overlong3", b"\xe0\x80\xaf", "a 3-byte overlong"),
        ("err_utf8_surrogate", b"\xed\xa0\x80", "an encoded surrogate U+D800"),
        ("err_utf8_above_max", b"\xf4\x90\x80\x80", "U+110000"),
        ("err_utf8_cut", b"ab\xe2\x82", "a sequence cut short"),
        ("err_utf8_lone_continuation", b"a\x80b", "a lone continuation byte"),
    ]:
        req_err(name, "invalid UTF-8 in a value: " + desc, E, "invalid UTF-8",
                msgpack=mp({"v": 1, "op": "reap", "project": bad}),
                json_bytes=b'{"v":1,"op":"reap","project":"' + bad + b'"}')
    req_err("err_utf8_in_key", "invalid UTF-8 in a key", E, "invalid UTF-8",
            msgpack=b"\x83" + mp("v") + mp(1) + mp("op") + mp("reap") + mp(b"k\xff") + mp(1),
            json_bytes=b'{"v":1,"op":"reap","k\xff":1}')
    req_err("err_utf8_escaped_surrogate", "a lone surrogate escape in JSON", E, "invalid JSON",
            json_bytes=b'{"v":1,"op":"reap","project":"\\ud800"}')
    req_err("err_nul_in_string", "a NUL inside a string", E, "NUL byte in a string",
            msgpack=mp({"v": 1, "op": "reap", "project": "a\x00b"}),
            json_bytes=b'{"v":1,"op":"reap","project":"a\\u0000b"}')
    req_err("err_nul_in_key", "a NUL inside a key", E, "NUL byte in a string",
            msgpack=mp({"v": 1, "op": "reap", "k\x00": 1}),
            json_bytes=b'{"v":1,"op":"reap","k\\u0000":1}')
    req_err("err_json_raw_control", "a raw control byte inside a JSON string", E, "invalid JSON",
            json_bytes=b'{"v":1,"op":"reap","project":"a\x01b"}')
    req_err("err_json_bom", "JSON with a byte order mark", E, "byte order mark",
            json_bytes=b"\xef\xbb\xbf" + js({"v": 1, "op": "status"}))
    # Syntax.
    full = mp({"v": 1, "op": "answer", "gate": 42, "choice": "replay"})
    req_err("err_truncated_1", "msgpack cut after the map header", E, "truncated msgpack", msgpack=full[:1])
    req_err("err_truncated_mid_string", "msgpack cut inside a string", E, "truncated msgpack",
            msgpack=full[:8])
    req_err("err_truncated_last_byte", "msgpack missing its last byte", E, "truncated msgpack",
            msgpack=full[:-1])
    req_err("err_truncated_json", "JSON cut short", E, "truncated JSON", json_bytes=js({"v": 1, "op": "status"})[:-1])
    req_err("err_json_whitespace_only", "a body of blanks", E, "truncated JSON", json_bytes=b"   \n")
    req_err("err_trailing_bytes", "a second value after the request", E, "trailing bytes",
            msgpack=mp({"v": 1, "op": "status"}) + b"\xc0",
            json_bytes=js({"v": 1, "op": "status"}) + b" null")
    req_err("err_two_documents", "two requests in one body", E, "trailing bytes",
            msgpack=mp({"v": 1, "op": "status"}) * 2, json_bytes=js({"v": 1, "op": "status"}) * 2)
    req_err("err_mp_c1", "the never-used byte 0xc1", E, "byte 0xc1 is never used",
            msgpack=b"\x82" + mp("v") + b"\xc1" + mp("op") + mp("status"))
    req_err("err_mp_bin", "a bin value", E, "binary values (msgpack bin) are not allowed",
            msgpack=b"\x83" + mp("v") + mp(1) + mp("op") + mp("reap") + mp("project") + b"\xc4\x03abc")
    req_err("err_mp_ext_timestamp", "a timestamp extension", E, "extension values",
            msgpack=b"\x83" + mp("v") + mp(1) + mp("op") + mp("status") + mp("at") + b"\xd6\xff\x00\x00\x00\x01")
    req_err("err_mp_int_key", "an integer map key", E, "map key is an integer, not a string",
            msgpack=b"\x83" + mp("v") + mp(1) + mp("op") + mp("status") + mp(1) + mp(2))
    req_err("err_mp_nil_key", "a nil map key", E, "map key is null, not a string",
            msgpack=b"\x81\xc0\x01")
    req_err("err_mp_uint64_max", "a uint64 above int64", E, "number out of range",
            msgpack=b"\x84" + mp("v") + mp(1) + mp("op") + mp("answer") + mp("gate") + b"\xcf" +
            b"\xff" * 8 + mp("choice") + mp("retry"))
    req_err("err_json_int_overflow", "a JSON integer above int64", E, "number out of range",
            json_bytes=b'{"v":1,"op":"answer","gate":18446744073709551615,"choice":"retry"}')
    req_err("err_json_real_overflow", "1e400", E, "number out of range",
            json_bytes=b'{"v":1,"op":"gates","limit":1e400}')
    req_err("err_mp_nan", "a NaN float", E, "non-finite float",
            msgpack=mp({"v": 1, "op": "gates", "limit": float("nan")}))
    req_err("err_mp_inf32", "a float32 infinity", E, "non-finite float",
            msgpack=b"\x83" + mp("v") + mp(1) + mp("op") + mp("gates") + mp("limit") + b"\xca\x7f\x80\x00\x00")
    for name, body in [("err_json_nan", b'{"v":1,"op":"gates","limit":NaN}'),
                       ("err_json_infinity", b'{"v":1,"op":"gates","limit":Infinity}'),
                       ("err_json_single_quotes", b"{'v':1,'op':'status'}"),
                       ("err_json_trailing_comma", b'{"v":1,"op":"status",}'),
                       ("err_json_comment", b'{"v":1, /* c */ "op":"status"}'),
                       ("err_json_unquoted_key", b'{v:1,"op":"status"}'),
                       ("err_json_hex", b'{"v":0x1,"op":"status"}')]:
        req_err(name, "not JSON: " + body.decode(), E, "invalid JSON", json_bytes=body)


def verdict_vhost(object_):
    """The vhost a verdict's object names (core/rp_verdict_vhost.h), or None."""
    import urllib.parse
    if object_ is None:
        return None
    rest = None
    if object_.startswith("queue:"):
        rest, sep = object_[len("queue:"):], ":"
    elif object_.startswith("dead_letter:id:"):
        rest, sep = object_[len("dead_letter:id:"):], "/"
    elif object_.startswith("dead_letter:sha256:"):
        rest, sep = object_[len("dead_letter:sha256:"):], "/"
    if rest is None or sep not in rest:
        return None
    return urllib.parse.unquote(rest.split(sep, 1)[0])


def verdict(object_, queue, project, condition, measured, threshold, unit, action, source, detail, trusted):
    return {"object": object_, "queue": queue, "project": project, "condition": condition,
            "measured": measured, "threshold": threshold, "unit": unit, "action": action,
            "source": source, "detail": detail, "trusted": trusted,
            "vhost": verdict_vhost(object_)}


V_POISON = verdict("job:42", "email.send", "alpha", "POISON", 7.0, 7, "attempts", "PARKED", "job_queue",
                   "job 42 used 7 of 7 attempts; parked for a person", True)
V_HOLDER = verdict("queue:/:vibey.orders", "vibey.orders", None, "HOLDER_GONE", 3.0, 0, "messages",
                   "SURFACED", "broker", "3 unacked messages and no consumer", True)
V_DEAD = verdict("dead_letter:sha256:ab12", "vibey.orders.dlq", None, "DEAD_LETTER", 1.0, 1, "messages",
                 "PARKED", "broker", 'dead-lettered from "vibey.orders" (rejected)', False)
V_STALE = verdict("job:77", "report.build", "beta", "STALE_READY", 1200.5, 900, "seconds", "SURFACED",
                  "job_queue", "oldest claimable job waited 1200.5 s", True)
J_LEASED = {"id": 42, "project": "alpha", "kind": "pdf.render", "state": "leased", "attempts": 2,
            "max_attempts": 7, "lease_owner": "worker-7", "lease_expires_at": "2024-05-01T12:05:00.000Z",
            "run_after": "2024-05-01T11:00:00.000Z", "depends_on": None, "finished_at": None,
            "created_at": "2024-05-01T11:00:00.000Z", "updated_at": "2024-05-01T12:00:00.123Z"}
J_READY = {"id": 43, "project": "alpha", "kind": "pdf.render", "state": "ready", "attempts": 0,
           "max_attempts": 7, "lease_owner": None, "lease_expires_at": None,
           "run_after": "2024-05-01T11:30:00.000Z", "depends_on": 42, "finished_at": None,
           "created_at": "2024-05-01T11:30:00.000Z", "updated_at": "2024-05-01T11:30:00.000Z"}
J_CANCELLED = dict(J_LEASED, state="failed", lease_owner=None, lease_expires_at=None,
                   finished_at="2024-05-01T12:10:00.000Z", updated_at="2024-05-01T12:10:00.000Z")
V_CLEARED = verdict("queue:/:vibey.x", None, None, "HOLDER_GONE", None, 0, "messages", "CLEARED", "broker",
                    None, False)

DOCTOR_NAMES = ["broker_connection", "management_api", "event_exchange", "permissions", "policies",
                "consumer_timeout", "tap_bindings", "store_connection", "schema_version", "queue_health",
                "wedged_queue", "divergent_queue", "dead_letter_backlog", "remainders"]
DOCTOR_CHECKS = [{"name": n, "status": "ok", "detail": n + " is fine.", "fix": ""} for n in DOCTOR_NAMES]
DOCTOR_CHECKS[7] = {"name": "store_connection", "status": "fail",
                    "detail": "the store refused the login (layer: authentication): x.",
                    "fix": "PGPASSWORD or PGPASSFILE for store.dsn's user (pg_hba.conf)"}
DOCTOR_CHECKS[10] = {"name": "wedged_queue", "status": "warn",
                     "detail": "WEDGED is not judged yet by this reaperd: not judged, so not checked.",
                     "fix": "upgrade reaperd"}

STATS_QUEUES = [
    {"vhost": "/", "queue": "vibey.pdf", "ready": 3, "unacked": 2, "consumers": 1, "intake": 40,
     "drained": 25, "oldest_waiting_seconds": 90, "flags": ["WAITING_DEPTH"]},
    {"vhost": "/", "queue": "vibey.x", "ready": None, "unacked": None, "consumers": None,
     "intake": None, "drained": None, "oldest_waiting_seconds": None, "flags": []},
]
STATS_KINDS = [
    {"project": "alpha", "kind": "pdf", "waiting": 4, "active": 2, "intake": 10, "drained": 6,
     "oldest_waiting_seconds": 61, "flags": ["STALLED", "WEDGED"]},
    {"project": "alpha", "kind": "mail", "waiting": 0, "active": 1, "intake": 1, "drained": 0,
     "oldest_waiting_seconds": None, "flags": []},
]


def ok_reply(op, result):
    return {"v": 1, "op": op, "ok": True, "result": result}


def err_reply(op, code, message):
    return {"v": 1, "op": op, "ok": False, "error": {"code": code, "message": message}}


def replies():
    reply("reply_reap_ok", "a pass report with three verdicts, a note and a policy",
          ok_reply("reap", {"ok": True, "dry_run": False, "verdicts": [V_POISON, V_HOLDER, V_DEAD],
                            "unreadable": [], "notes": ["quorum queue vibey.orders reports no head age"],
                            "policies": [{"name": "vibey-reap", "verified": True,
                                          "detail": "consumer-timeout 21600000 in force",
                                          "vhosts": [{"vhost": "/", "verified": True},
                                                     {"vhost": "orders", "verified": True}]}]}),
          "reap_ok")
    reply("reply_reap_empty", "a dry run that found nothing",
          ok_reply("reap", {"ok": True, "dry_run": True, "verdicts": [], "unreadable": [], "notes": [],
                            "policies": []}), "reap_empty")
    reply("reply_reap_unreadable", "a pass that could not read the store: result.ok is false",
          ok_reply("reap", {"ok": False, "dry_run": False, "verdicts": [],
                            "unreadable": ["store: connection refused"], "notes": [], "policies": []}),
          "reap_unreadable")
    reply("reply_answer_replayed", "an answered gate",
          ok_reply("answer", {"gate": 17, "choice": "replay", "outcome": "replayed"}), "answer_replayed")
    reply("reply_answer_already", "a second answer returns the first",
          ok_reply("answer", {"gate": 18, "choice": "dismiss", "outcome": "already_answered"}),
          "answer_already")
    reply("reply_gates_two", "an open and an answered gate",
          ok_reply("gates", {"gates": [
              {"id": 5, "job_id": 42, "kind": "delivery_exhausted", "project": "alpha",
               "question": "job 42 (email.send) used all 7 attempts: retry or dismiss?",
               "choices": ["retry", "dismiss"], "state": "open", "answer": None, "answered_by": None,
               "answered_at": None, "created_at": "2024-05-01T12:00:00.123Z", "queue": None,
               "origin_queue": None, "reason": None, "vhost": None},
              {"id": 6, "job_id": 43, "kind": "bus_dead_lettered", "project": "vibey",
               "question": "message from vibey.orders was dead-lettered (rejected): replay or dismiss?",
               "choices": ["replay", "dismiss"], "state": "answered", "answer": "replay",
               "answered_by": "alice", "answered_at": "2024-05-01T13:00:00.000Z",
               "created_at": "2024-05-01T12:01:00.000Z", "queue": "vibey.orders.dlq",
               "origin_queue": "vibey.orders", "reason": "rejected", "vhost": "/"}], "total": 7, "next_after": 5,
              "total_capped": False}),
          "gates_two")
    reply("reply_gates_replaying", "two open gates being replayed: a live claim and a stale one",
          ok_reply("gates", {"gates": [
              {"id": 8, "job_id": 45, "kind": "bus_dead_lettered", "project": "vibey",
               "question": "message from vibey.orders was dead-lettered (rejected): replay or dismiss?",
               "choices": ["replay", "dismiss"], "state": "open", "answer": None, "answered_by": None,
               "answered_at": None, "created_at": "2024-05-01T12:02:00.000Z", "queue": "vibey.orders.dlq",
               "origin_queue": "vibey.orders", "reason": "rejected", "vhost": "tenant/b",
               "replaying": {"by": "web-1:4242:1714564800000", "since": "2024-05-01T12:10:00.250Z",
                             "stale": False}},
              {"id": 7, "job_id": 44, "kind": "bus_dead_lettered", "project": "vibey",
               "question": "message from vibey.orders was dead-lettered (expired): replay or dismiss?",
               "choices": ["replay", "dismiss"], "state": "open", "answer": None, "answered_by": None,
               "answered_at": None, "created_at": "2024-05-01T12:01:30.000Z", "queue": "vibey.orders.dlq",
               "origin_queue": "vibey.orders", "reason": "expired", "vhost": "tenant/b",
               "replaying": {"by": "web-2:77:1714560000000", "since": "2024-05-01T11:00:00.000Z",
                             "stale": True}}], "total": 2, "next_after": None, "total_capped": False}), "gates_replaying")
    reply("reply_gates_empty", "no gates", ok_reply("gates", {"gates": [], "total": 0, "next_after": None,
                                                          "total_capped": False}), "gates_empty")
    reply("reply_gates_capped", "a page of more than 10,000 matches: total says at least 10,000",
          ok_reply("gates", {"gates": [], "total": 10000, "next_after": None, "total_capped": True}),
          "gates_capped")
    reply("reply_jobs_page", "a page of two jobs, more to come after id 43",
          ok_reply("jobs", {"jobs": [J_LEASED, J_READY], "total": 5, "next_after": 43}), "jobs_page")
    reply("reply_jobs_last", "the last page: next_after is null",
          ok_reply("jobs", {"jobs": [J_READY], "total": 1, "next_after": None}), "jobs_last")
    reply("reply_jobs_empty", "nothing matches", ok_reply("jobs", {"jobs": [], "total": 0,
                                                                   "next_after": None}), "jobs_empty")
    reply("reply_job", "one job with its payload",
          ok_reply("job", {"job": J_LEASED, "payload": '{"file": "a.pdf"}', "payload_truncated": False}),
          "job")
    reply("reply_cancel_leased", "a leased job cancelled: its owner is named, its lease cleared",
          ok_reply("cancel", {"job": J_CANCELLED, "from": "leased", "lease_owner": "worker-7",
                              "seq": 901}), "cancel_leased")
    reply("reply_doctor", "doctor: fourteen checks in their order, one failed, one warning",
          ok_reply("doctor", {"ok": False, "fail": 1, "warn": 1, "checks": DOCTOR_CHECKS}), "doctor")
    reply("reply_stats", "stats: an owned queue with rates and a flag, one whose counts and rates are "
          "unknown, two kinds (one flagged twice, one with nothing waiting), seven kinds past the cap",
          ok_reply("stats", {"window_seconds": 86400, "broker_note": None, "queues": STATS_QUEUES,
                             "kinds": STATS_KINDS, "queues_omitted": 0, "kinds_omitted": 7}), "stats")
    reply("reply_stats_no_broker", "stats without the broker: a note, no queue rows, the kinds",
          ok_reply("stats", {"window_seconds": 3600,
                             "broker_note": "the broker's queues could not be listed (unavailable); "
                                            "only the job table is shown",
                             "queues": [], "kinds": [], "queues_omitted": 0, "kinds_omitted": 0}),
          "stats_no_broker")
    reply("reply_status", "status after a pass",
          ok_reply("status", {"version": "0.1.0-7741df0", "broker": "up", "store": "down",
                              "last_pass_at": "2024-05-01T12:00:00.000Z", "open_sightings": 3}), "status")
    reply("reply_status_never", "status before any pass",
          ok_reply("status", {"version": "0.1.0", "broker": "up", "store": "up", "last_pass_at": None,
                              "open_sightings": 0}), "status_never")
    for name, op, code, msg in [
        ("reply_error_bad_request", "gates", "bad_request", 'field "limit" must be in 1..1000, got 0'),
        ("reply_error_unknown_op", "frobnicate", "unknown_op",
         'unknown op "frobnicate" (expected one of reap, answer, gates, status, jobs, job, cancel, gate, doctor, stats)'),
        ("reply_error_no_op", None, "bad_request", "truncated msgpack: the body ends inside a value (at byte 3)"),
        ("reply_error_forbidden", "reap", "forbidden", 'user "mallory" is not in control.allowed_users'),
        ("reply_error_not_found", "answer", "not_found", "gate 99 does not exist"),
        ("reply_error_conflict", "answer", "conflict", 'replay refused: queue "celery" is not owned'),
        ("reply_error_unavailable", "reap", "unavailable", "the store is not connected"),
        ("reply_error_internal", "status", "internal", "internal error"),
    ]:
        reply(name, "an error reply: " + code, err_reply(op, code, msg), "err_" + name[len("reply_error_"):])
    reply("event_poison_parked", "the ledger event body of a parked poison job", V_POISON,
          "event_poison", kind="event")
    reply("event_stale_ready", "a surfaced stale-ready job; measured has a fraction", V_STALE,
          "event_stale", kind="event")
    reply("event_cleared_nulls", "a cleared sighting: absent fields are null, measured unknown", V_CLEARED,
          "event_cleared", kind="event")
    # Reply-side limits.
    deep = 1
    for _ in range(17):
        deep = [deep]
    e = {"kind": "reply", "description": "replies are read with depth 16", "ok": False,
         "error": {"code": "bad_request", "message_contains": "nesting deeper than 16", "op": None}}
    add("reply_err_depth_17", e, mp(deep), js(deep))
    e = {"kind": "reply", "description": "replies refuse duplicate keys too", "ok": False,
         "error": {"code": "bad_request", "message_contains": "duplicate key", "op": None}}
    add("reply_err_duplicate", e, mp(Pairs(("v", 1), ("v", 1))), js(Pairs(("v", 1), ("v", 1))))


def main():
    requests_ok()
    requests_bad()
    requests_hostile()
    replies()
    for f in os.listdir(HERE):
        if f.endswith((".msgpack", ".json", ".expect")):
            os.remove(os.path.join(HERE, f))
    files = 0
    for name, (expect, m, j) in sorted(VECTORS.items()):
        if m is not None:
            with open(os.path.join(HERE, name + ".msgpack"), "wb") as fh:
                fh.write(m)
            files += 1
        if j is not None:
            with open(os.path.join(HERE, name + ".json"), "wb") as fh:
                fh.write(j)
            files += 1
        with open(os.path.join(HERE, name + ".expect"), "w", encoding="utf-8") as fh:
            json.dump(expect, fh, indent=2, ensure_ascii=False, sort_keys=True)
            fh.write("\n")
    # Seeds for tests/fuzz/fuzz_proto_decode.c: the first byte picks the
    # decoder (0/1 request msgpack/JSON, 2/3 tree msgpack/JSON). Only vec_*
    # seeds are replaced; the others are inputs the fuzzer found, kept.
    corpus = os.path.join(HERE, "..", "..", "tests", "fuzz", "corpus", "proto_decode")
    os.makedirs(corpus, exist_ok=True)
    for f in os.listdir(corpus):
        if f.startswith("vec_"):
            os.remove(os.path.join(corpus, f))
    seeds = 0
    for name, (expect, m, j) in sorted(VECTORS.items()):
        base = 0 if expect["kind"] == "request" else 2
        for mode, body, ext in ((base, m, "msgpack"), (base + 1, j, "json")):
            if body is None:
                continue
            with open(os.path.join(corpus, "vec_%s_%s" % (name, ext)), "wb") as fh:
                fh.write(bytes([mode]) + body)
            seeds += 1
    print("%d vectors, %d byte files, %d fuzz seeds" % (len(VECTORS), files, seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
