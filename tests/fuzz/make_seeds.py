#!/usr/bin/env python3
"""Writes the seed corpora of the wire and management API fuzzers
(tests/fuzz/corpus/{amqp_table,capture,amqp_msg,events,mgmt_parse,mgmt_api}/)
from realistic inputs: AMQP property lists shaped like what RabbitMQ 3.10.8
and 4.0.5 put on a dead letter and on an amq.rabbitmq.event delivery
(docs: RABBITMQ facts in the project notes), and the management API answers
captured from both brokers in tests/fuzz/captured/. Run it from anywhere;
it overwrites only the files it names (seed-*)."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def shortstr(s):
    b = s.encode() if isinstance(s, str) else s
    return bytes([len(b)]) + b


def longstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack(">I", len(b)) + b


def value(v):
    kind, x = v
    if kind == "S":
        return b"S" + longstr(x)
    if kind == "x":
        return b"x" + longstr(x)
    if kind == "l":
        return b"l" + struct.pack(">q", x)
    if kind == "I":
        return b"I" + struct.pack(">i", x)
    if kind == "T":
        return b"T" + struct.pack(">Q", x)
    if kind == "t":
        return b"t" + bytes([1 if x else 0])
    if kind == "d":
        return b"d" + struct.pack(">d", x)
    if kind == "D":
        return b"D" + bytes([x[0]]) + struct.pack(">I", x[1])
    if kind == "V":
        return b"V"
    if kind == "F":
        return b"F" + table(x)
    if kind == "A":
        body = b"".join(value(e) for e in x)
        return b"A" + struct.pack(">I", len(body)) + body
    raise ValueError(kind)


def table(entries):
    body = b"".join(shortstr(k) + value(v) for k, v in entries)
    return struct.pack(">I", len(body)) + body


# Basic property flags, in wire order.
FLAGS = [
    ("content_type", 0x8000, "s"), ("content_encoding", 0x4000, "s"), ("headers", 0x2000, "F"),
    ("delivery_mode", 0x1000, "o"), ("priority", 0x0800, "o"), ("correlation_id", 0x0400, "s"),
    ("reply_to", 0x0200, "s"), ("expiration", 0x0100, "s"), ("message_id", 0x0080, "s"),
    ("timestamp", 0x0040, "T"), ("type", 0x0020, "s"), ("user_id", 0x0010, "s"),
    ("app_id", 0x0008, "s"), ("cluster_id", 0x0004, "s"),
]


def props(**kw):
    flags, out = 0, b""
    for name, bit, kind in FLAGS:
        if name not in kw:
            continue
        flags |= bit
        v = kw[name]
        out += {"s": lambda: shortstr(v), "F": lambda: table(v), "o": lambda: bytes([v]),
                "T": lambda: struct.pack(">Q", v)}[kind]()
    return struct.pack(">H", flags) + out


def death(queue, reason, count, t, rks, **extra):
    e = [("count", ("l", count)), ("reason", ("S", reason)), ("queue", ("S", queue)),
         ("time", ("T", t)), ("exchange", ("S", "")), ("routing-keys", ("A", [("S", k) for k in rks]))]
    for k, v in extra.items():
        e.append((k.replace("_", "-"), ("S", v)))
    return ("F", e)


DEAD_LETTERS = {
    # 3.10.8: a rejected message, dead-lettered once.
    "rejected_310": props(content_type="application/json", delivery_mode=2, message_id="order-17",
                          timestamp=1700000000, headers=[
                              ("x-death", ("A", [death("vibey.orders", "rejected", 1, 1700000100,
                                                       ["vibey.orders"])])),
                              ("x-first-death-exchange", ("S", "")),
                              ("x-first-death-queue", ("S", "vibey.orders")),
                              ("x-first-death-reason", ("S", "rejected")),
                              ("app-header", ("I", 42))]),
    # 4.0.5: expired twice through two queues, with x-last-death-* too.
    "expired_40": props(delivery_mode=2, expiration="60000", headers=[
        ("x-death", ("A", [death("vibey.retry", "expired", 2, 1700000300, ["vibey.retry"],
                                 original_expiration="5000"),
                           death("vibey.work", "rejected", 1, 1700000200, ["vibey.work"])])),
        ("x-first-death-exchange", ("S", "vibey.x")),
        ("x-first-death-queue", ("S", "vibey.work")),
        ("x-first-death-reason", ("S", "rejected")),
        ("x-last-death-exchange", ("S", "")),
        ("x-last-death-queue", ("S", "vibey.retry")),
        ("x-last-death-reason", ("S", "expired")),
        ("nested", ("F", [("a", ("A", [("d", 1.5), ("D", (2, 12345)), ("V", None), ("t", True)])),
                          ("b", ("x", b"\x00\xff"))]))]),
    # A quorum queue's delivery limit.
    "delivery_limit": props(message_id="", headers=[
        ("x-delivery-count", ("l", 20)),
        ("x-death", ("A", [death("vibey.q", "delivery_limit", 1, 1700000400, ["vibey.q"])])),
        ("x-first-death-queue", ("S", "vibey.q")), ("x-first-death-reason", ("S", "delivery_limit"))]),
    # Hostile: wrong types where strings belong, a death that is not a table.
    "wrong_types": props(headers=[
        ("x-death", ("A", [("S", "not a table"), ("F", [("count", ("S", "9")), ("time", ("l", -1))])])),
        ("x-first-death-queue", ("I", 7)), ("x-first-death-reason", ("x", b"\x1b[2J"))]),
    "no_headers": props(content_type="text/plain", correlation_id="c1", reply_to="amq.rabbitmq.reply-to"),
}

EVENTS = {  # routing key index (fuzz_events.c) -> headers as 3.10.8 sends them
    0: [("name", ("S", "vibey.orders")), ("vhost", ("S", "/")), ("durable", ("t", True)),
        ("auto_delete", ("t", False)), ("exclusive", ("t", False)), ("owner_pid", ("S", "")),
        ("arguments", ("A", [])), ("user_who_performed_action", ("S", "reaper")),
        ("timestamp_in_ms", ("l", 1700000000123))],
    1: [("name", ("S", "vibey.orders")), ("vhost", ("S", "/")),
        ("user_who_performed_action", ("S", "reaper")), ("timestamp_in_ms", ("l", 1700000000456))],
    2: [("consumer_tag", ("S", "amq.ctag-abc")), ("queue", ("S", "vibey.orders")), ("vhost", ("S", "/")),
        ("channel", ("S", "<rabbit@host.1.2.3>")), ("ack_required", ("t", True)),
        ("exclusive", ("t", False)), ("prefetch_count", ("l", 10)), ("arguments", ("A", [])),
        ("user_who_performed_action", ("S", "worker")), ("timestamp_in_ms", ("l", 1700000000789))],
    3: [("consumer_tag", ("S", "amq.ctag-abc")), ("queue", ("S", "vibey.orders")), ("vhost", ("S", "/")),
        ("channel", ("S", "<rabbit@host.1.2.3>"))],
    4: [("pid", ("S", "<rabbit@host.1.2.3>")), ("timestamp_in_ms", ("l", 1700000001000))],
    5: [("pid", ("S", "<rabbit@host.1.2>")), ("name", ("S", "127.0.0.1:5000 -> 127.0.0.1:5672"))],
    6: [("name", ("S", "fz-dlx")), ("vhost", ("S", "/")), ("pattern", ("S", "^vibey\\.fz\\.")),
        ("apply-to", ("S", "queues")), ("priority", ("l", 1)),
        ("definition", ("A", [("F", [("dead-letter-exchange", ("S", "fz.dlx"))])])),
        ("user_who_performed_action", ("S", "admin"))],
    7: [("name", ("S", "fz-dlx")), ("vhost", ("S", "/"))],
    8: [("source_name", ("S", "fz.dlx")), ("source_kind", ("S", "exchange")),
        ("destination_name", ("S", "vibey.fz.work.dlq")), ("destination_kind", ("S", "queue")),
        ("routing_key", ("S", "")), ("arguments", ("A", [])), ("vhost", ("S", "/"))],
    10: [("name", ("S", "fz.dlx")), ("vhost", ("S", "/")), ("type", ("S", "fanout")),
         ("durable", ("t", True)), ("auto_delete", ("t", False)), ("internal", ("t", False))],
}


def capture(version, name):
    with open(os.path.join(HERE, "captured", version, name), "rb") as f:
        return f.read()


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def answer(code_index, body):
    return bytes([code_index]) + struct.pack("<H", len(body)) + body


def deliver_args(tag, exchange, rk):
    return shortstr(tag) + struct.pack(">Q", tag_no[0]) + b"\x00" + shortstr(exchange) + shortstr(rk)


tag_no = [1]


def frames(channel, exchange, rk, p, body, chunk):
    args = deliver_args("amq.ctag-1", exchange, rk)
    out = bytes([0 | channel << 2]) + struct.pack("<H", len(args)) + args
    out += bytes([1 | channel << 2]) + struct.pack("<Q", len(body)) + struct.pack("<H", len(p)) + p
    for i in range(0, len(body), chunk):
        part = body[i:i + chunk]
        out += bytes([2 | channel << 2]) + struct.pack("<H", len(part)) + part
    return out


def main():
    for name, p in DEAD_LETTERS.items():
        write("amqp_table", name, b"\x01" + p)
        write("capture", name, p)
    for k, h in EVENTS.items():
        write("events", "key%d" % k, bytes([k]) + props(headers=h, timestamp=1700000000))
    write("events", "other_key", b"\xff" + shortstr("alarm.set") + props(headers=[]))
    dl = DEAD_LETTERS["expired_40"]
    write("amqp_msg", "one_delivery", b"\x10\x04" + frames(1, "fz.dlx", "vibey.work", dl, b"x" * 300, 128))
    write("amqp_msg", "two_channels", b"\x02\x00" + frames(1, "", "q", DEAD_LETTERS["no_headers"], b"{}", 64)
          + frames(2, "amq.rabbitmq.event", "queue.deleted", props(headers=EVENTS[1]), b"", 64)
          + b"\x03")
    selectors = {"page.json": 0, "page_dlx.json": 0, "queue.json": 1, "queue_404.json": 2,
                 "page_oor.json": 3, "overview.json": 5}
    for v in ("3.10.8", "4.0.5"):
        for fname, sel in selectors.items():
            write("mgmt_parse", "%s-%s" % (v, fname), bytes([sel]) + capture(v, fname))
        write("mgmt_parse", v + "-version", bytes([4]) + v.encode())
        ok = 0  # 200
        dlx = (answer(ok, capture(v, "policies_vh.json")) + answer(ok, capture(v, "page_dlx.json"))
               + answer(ok, capture(v, "bindings_source.json")) + answer(4, b'{"error":"Object Not Found"}')
               + answer(ok, capture(v, "queue_bindings.json")) + answer(1, b"") + answer(1, b""))
        write("mgmt_api", v + "-dlx", b"\x00\x00" + dlx)
        pol = (answer(ok, capture(v, "overview.json")) + answer(ok, capture(v, "page.json"))
               + answer(ok, capture(v, "policies.json")) + answer(ok, capture(v, "op_policies.json"))
               + answer(1, b"") + answer(ok, capture(v, "policies.json"))
               + answer(ok, capture(v, "page.json")) + answer(ok, capture(v, "page.json")))
        write("mgmt_api", v + "-policy", b"\x01\x00" + pol)
        write("mgmt_api", v + "-policy-dry", b"\x01\x01" + pol)
        write("mgmt_api", v + "-seed", b"\x02\x00" + answer(ok, capture(v, "page.json"))
              + answer(ok, capture(v, "page.json")) + answer(3, capture(v, "page_oor.json")))
    eff = capture("4.0.5", "effective.txt")
    write("mgmt_parse", "4.0.5-effective", b"\x06" + eff)
    write("mgmt_api", "4.0.5-timeout", b"\x03\x00" + answer(0, eff) + answer(0, capture("4.0.5", "overview.json")))
    write("mgmt_api", "3.10.8-timeout", b"\x03\x00" + answer(4, capture("3.10.8", "effective_404.json"))
          + answer(0, capture("3.10.8", "overview.json")))


if __name__ == "__main__":
    main()
