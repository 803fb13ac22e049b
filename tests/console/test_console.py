#!/usr/bin/env python3
"""The browser console (http.console, adapters/http/rp_http_console.h) in a
real browser: Debian's chromium, headless, driven over the DevTools protocol
(cdp.py). Against a real reaperd, PostgreSQL and RabbitMQ:

  - signed out, with anonymous reads off, the page says to sign in and shows
    no gate; a wrong password is refused (401 from the broker's login);
  - signed in as a broker user of its own (listed in control.allowed_users),
    the open gates render, grouped by origin queue and reason with their
    counts (server-side, over every open gate);
  - a gate opens: its x-death history, headers, properties, body preview;
  - a hostile dead letter (markup in its body, queue, origin and reason)
    stays text: no element or script of its making exists, nothing ran;
  - a dismiss from the page reaches the ledger: the gate is answered by the
    signed-in user (broker-validated), a GateAnswered event names them;
  - 1,200 more gates in one group: the group counts all of them (more than
    the 200 listed, more than the 1,000 a gates reply holds) with their
    ages; its "Dismiss all" shows the dry run's count, and once confirmed
    every one of them is answered by the signed-in user (an answer set:
    requested_by and each GateAnswered event name them);
  - with http.console_read_anonymous the list renders signed out, and an
    answer still asks for a sign-in;
  - five refused sign-ins from one address, then the right password is
    refused too (429, Retry-After) without asking the broker; reads
    without a sign-in still go.

The screenshots it takes stay in CONSOLE_TEST_OUT (the test's output dir).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402

PID = os.getpid()
SCHEMA = f"itest_console_{PID}"
CONTROL = f"reaper.control.itest.console{PID}"
OP_USER = f"console-op-{PID}"
OP_PASSWORD = f"pw-{PID}-console"
OUT = os.environ.get("CONSOLE_TEST_OUT") or tempfile.mkdtemp(prefix="console-test-")
os.makedirs(OUT, exist_ok=True)

HOSTILE_BODY = ("<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">"
                "\u00e9t\u00e9 \x1b[2J done")


def env(name):
    v = os.environ.get(name)
    if not v:
        sys.exit(f"test_console: {name} is not set (run it through scripts/test)")
    return v


def psql(query):
    r = subprocess.run(["psql", env("REAPER_STORE_DSN"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1",
                        "-c", f"SET search_path TO {SCHEMA}", "-c", query],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise AssertionError(f"psql failed: {r.stderr}")
    return r.stdout.strip()


def lit(s):
    return "'" + s.replace("'", "''") + "'"


def plant(queue, origin, reason, body):
    """A parked dead letter as the tap parks one: job, gate (with the dead letter's
    queue, origin and reason: migration 0013), stored message."""
    headers = {"x-death": [{"count": 2, "reason": reason, "queue": origin, "exchange": "",
                            "routing-keys": [origin]}],
               "x-first-death-queue": origin, "x-tenant": "<i>acme</i>"}
    props = {"content_type": "text/plain", "delivery_mode": 2, "message_id": "<b>m-1</b>"}
    return int(psql(
        "WITH j AS (INSERT INTO job (project_id, kind, state, attempts, max_attempts, payload)"
        " VALUES ('bus', 'bus.dead_letter', 'awaiting_human', 0, 1, '{\"vhost\": \"/\"}')"
        " RETURNING id),"
        " g AS (INSERT INTO gate (job_id, kind, question, choices, queue, origin_queue, reason,"
        " vhost) SELECT id, 'bus_dead_lettered', 'replay or dismiss?', ARRAY['replay', 'dismiss'],"
        f" {lit(queue)}, {lit(json.dumps(origin))}, {lit(json.dumps(reason))}, '/'"
        " FROM j RETURNING id, job_id)"
        " INSERT INTO dead_letter (identity, death, job_id, gate_id, queue, origin_queue, reason,"
        f" headers, properties, body, vhost) SELECT {lit('id:' + queue + body[:8] + str(time.time()))},"
        f" 'd1', job_id, id, {lit(queue)}, {lit(json.dumps(origin))}, {lit(json.dumps(reason))},"
        f" {lit(json.dumps(headers))}, {lit(json.dumps(props))},"
        f" convert_to({lit(body)}, 'UTF8'), '/' FROM g RETURNING gate_id"))


BULK = 1200


def plant_many(n, origin, reason):
    """n parked dead letters of one (origin, reason), two hours old."""
    psql("WITH j AS (INSERT INTO job (project_id, kind, state, attempts, max_attempts, payload)"
         " SELECT 'bus', 'bus.dead_letter', 'awaiting_human', 0, 1, '{\"vhost\": \"/\"}'"
         f" FROM generate_series(1, {n}) RETURNING id),"
         " g AS (INSERT INTO gate (job_id, kind, question, choices, created_at, queue,"
         " origin_queue, reason) SELECT id, 'bus_dead_lettered', 'replay or dismiss?',"
         " ARRAY['replay', 'dismiss'], now() - interval '2 hours', 'vibey.bulk.dlq',"
         f" {lit(json.dumps(origin))}, {lit(json.dumps(reason))} FROM j RETURNING id, job_id)"
         " INSERT INTO dead_letter (identity, death, job_id, gate_id, queue, origin_queue, reason,"
         " headers, properties, body, vhost) SELECT 'id:bulk-' || id, 'd1', job_id, id, 'vibey.bulk.dlq',"
         f" {lit(json.dumps(origin))}, {lit(json.dumps(reason))}, '{{}}', '{{}}',"
         " convert_to('{}', 'UTF8'), '/' FROM g")


def console_get(url, auth=None):
    """(status, headers) of a GET to the console's API."""
    req = urllib.request.Request(url)
    if auth is not None:
        import base64
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()
            return r.status, r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.headers


def mgmt(method, path, body=None):
    url = env("REAPER_BROKER_MANAGEMENT_URL") + path
    pw = open(env("REAPER_BROKER_PASSWORD_FILE")).read().strip()
    req = urllib.request.Request(url, method=method,
                                 data=json.dumps(body).encode() if body is not None else None)
    req.add_header("Content-Type", "application/json")
    import base64
    req.add_header("Authorization", "Basic " + base64.b64encode(f"reaper:{pw}".encode()).decode())
    try:
        urllib.request.urlopen(req, timeout=30).read()
    except urllib.error.HTTPError as e:
        if not (method == "DELETE" and e.code == 404):
            raise


class Reaperd:
    def __init__(self, name, extra):
        e = dict(os.environ)
        e.update({"REAPER_STORE_SCHEMA": SCHEMA, "REAPER_BROKER_CONTROL_QUEUE": CONTROL,
                  "REAPER_HTTP_LISTEN": "127.0.0.1:0", "REAPER_LOG_FORMAT": "json",
                  "REAPER_REAP_INTERVAL_SECONDS": "3600", "REAPER_HTTP_CONSOLE": "true",
                  "REAPER_CONTROL_ALLOWED_USERS": "reaper," + OP_USER})
        e.update(extra)
        self.log_path = os.path.join(OUT, f"reaperd-{name}.log")
        self.log = open(self.log_path, "w+")
        self.proc = subprocess.Popen([env("REAPERD")], env=e, stdout=subprocess.DEVNULL,
                                     stderr=self.log)
        self.port = None
        deadline = time.time() + 60
        ready = False
        while time.time() < deadline and not (self.port and ready):
            time.sleep(0.2)
            self.log.seek(0)
            for line in self.log:
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                if j.get("msg") == "http listening":
                    self.port = int(j["listen"].rsplit(":", 1)[1])
                if j.get("msg") == "pass finished":
                    ready = True
            if self.proc.poll() is not None:
                break
        if not (self.port and ready):
            self.stop()
            raise AssertionError("reaperd did not start; its log:\n" + open(self.log_path).read())
        self.url = f"http://127.0.0.1:{self.port}/console"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        self.log.close()
        text = open(self.log_path).read()
        # No credentials in logs: neither the console user's password nor
        # the Basic header it travels in.
        assert OP_PASSWORD not in text, "the console user's password is in reaperd's log"
        assert "Basic " not in text


def sign_in(b, user, password):
    b.eval(f"""(() => {{
        document.getElementById('signin-user').value = {json.dumps(user)};
        document.getElementById('signin-password').value = {json.dumps(password)};
        document.getElementById('signin-go').click(); return true; }})()""")


def gate_rows(b):
    return b.eval("[...document.querySelectorAll('#gates tbody tr')].map(r => r.dataset.gate)")


def main():
    if shutil.which(os.environ.get("CHROMIUM", "chromium")) is None:
        sys.exit("test_console: chromium is not installed (scripts/install-deps installs it)")
    r = subprocess.run([env("REAPERD"), "--migrate"], env=dict(os.environ, REAPER_STORE_SCHEMA=SCHEMA),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    mgmt("PUT", f"/api/users/{OP_USER}", {"password": OP_PASSWORD, "tags": ""})
    mgmt("PUT", f"/api/permissions/%2F/{OP_USER}", {"configure": ".*", "write": ".*", "read": ".*"})
    plain1 = plant("vibey.orders.dlq", "vibey.orders", "rejected", "{\"order\": 17}")
    plain2 = plant("vibey.orders.dlq", "vibey.orders", "rejected", "{\"order\": 18}")
    hostile = plant("vibey.mail.dlq", "<b>vibey.mail</b>", "<img src=x onerror=\"window.__pwned=3\">",
                    HOSTILE_BODY)
    # An open sighting, as a pass surfaces one: its ledger event, its row.
    psql("WITH ev AS (INSERT INTO ledger (kind, project_id, payload) VALUES ('QueueReaped', NULL,"
         " '{\"source\": \"queue\", \"subject\": \"vibey.orders\", \"condition\": \"STALLED\","
         " \"action\": \"SURFACED\", \"reason\": \"<b>no ack for 600 s</b>\"}') RETURNING seq, at)"
         " INSERT INTO sighting (key, condition, opened_seq, opened_at)"
         " SELECT 'queue:/:vibey.orders', 'STALLED', seq, at FROM ev")
    profile = tempfile.mkdtemp(prefix="console-chromium-")
    profile2 = None  # the anonymous part's browser profile
    d = Reaperd("signed-in", {})
    b = None
    try:
        b = Browser(profile)
        # 1. Signed out, anonymous reads off: a sign-in is asked for, no gate shows.
        b.goto(d.url)
        b.wait("!document.getElementById('problem').hidden", what="the sign-in notice")
        assert "Sign in" in b.eval("document.getElementById('problem').textContent")
        assert gate_rows(b) == []
        # A wrong password: the broker refuses the login.
        sign_in(b, OP_USER, "not-the-password")
        b.wait("document.getElementById('problem').textContent.includes('refused')",
               what="the refused login")
        assert gate_rows(b) == []
        b.eval("document.getElementById('signout').click(), true")

        # 2. Signed in: the gates render, grouped by queue and reason.
        sign_in(b, OP_USER, OP_PASSWORD)
        b.wait("document.querySelectorAll('#gates tbody tr').length === 3", what="three gate rows",
               show="document.getElementById('problem').textContent")
        assert sorted(gate_rows(b)) == sorted(str(g) for g in (plain1, plain2, hostile))
        # Each gate says its vhost (issue #19), in its own column.
        heads = b.eval("[...document.querySelectorAll('#gates thead th')].map(c => c.textContent)")
        assert heads[2] == "vhost", heads
        vhosts = b.eval("[...document.querySelectorAll('#gates tbody tr')].map(r => r.cells[2].textContent)")
        assert vhosts == ["/", "/", "/"], vhosts
        groups = b.eval("[...document.querySelectorAll('#groups tbody tr')]"
                        ".map(r => [...r.cells].slice(0, 3).map(c => c.textContent))")
        assert ["\"vibey.orders\"", "\"rejected\"", "2"] in groups, groups
        assert [json.dumps("<b>vibey.mail</b>"), json.dumps("<img src=x onerror=\"window.__pwned=3\">"),
                "1"] in groups, groups
        b.wait("document.querySelectorAll('#sightings tbody tr').length === 1", what="the sighting")
        sighting = b.eval("[...document.querySelector('#sightings tbody tr').cells].map(c => c.textContent)")
        assert sighting[0] == "STALLED" and sighting[1] == "queue:/:vibey.orders", sighting
        assert "<b>no ack for 600 s</b>" in b.eval("document.getElementById('events').textContent")
        assert b.eval("document.getElementById('signed-as').textContent") == "signed in as " + OP_USER
        b.screenshot(os.path.join(OUT, "console-gates.png"))

        # 3. The hostile gate opens: its bytes are text, nothing of theirs runs.
        b.eval(f"document.querySelector('#gates tbody tr[data-gate=\"{hostile}\"]').click(), true")
        b.wait("document.getElementById('body-preview').textContent.length > 0", what="the body preview")
        shown = b.eval("document.getElementById('body-preview').textContent")
        assert shown.startswith("<script>window.__pwned=1</script><img src=x"), shown
        assert "\u00e9t\u00e9" in shown and "\\x1b[2J" in shown and "\x1b" not in shown, shown
        assert b.eval("document.scripts.length") == 1  # the console's own app.js only
        assert b.eval("document.querySelectorAll('main img, main b, main i').length") == 0
        time.sleep(1)  # an onerror would have fired by now
        assert b.eval("window.__pwned === undefined"), "a dead letter's markup ran"
        xdeath = b.eval("[...document.querySelectorAll('#detail-xdeath tbody tr')]"
                        ".map(r => [...r.cells].map(c => c.textContent))")
        assert xdeath and xdeath[0][0] == "2" and xdeath[0][2] == "<b>vibey.mail</b>", xdeath
        headers = b.eval("[...document.querySelectorAll('#detail-headers tbody tr')]"
                         ".map(r => r.cells[0].textContent + '=' + r.cells[1].textContent)")
        assert "x-tenant=<i>acme</i>" in headers, headers
        assert "replay" in b.eval("document.getElementById('detail-facts').textContent")
        b.screenshot(os.path.join(OUT, "console-gate.png"))

        # 4. Dismiss from the page: two clicks (the choice, then the confirm).
        seq0 = int(psql("SELECT COALESCE(max(seq), 0) FROM ledger"))
        b.eval("document.querySelector('#answer-box button[data-choice=\"dismiss\"]').click(), true")
        b.wait("document.getElementById('answer-confirm') !== null", what="the confirm button")
        b.eval("document.getElementById('answer-confirm').click(), true")
        b.wait("document.getElementById('answer-result').textContent.includes('dismissed')",
               what="the answer's outcome",
               show="document.getElementById('answer-result').textContent + ' / ' + "
                    "document.getElementById('problem').textContent")
        row = psql(f"SELECT answer || '|' || answered_by FROM gate WHERE id = {hostile}")
        assert row == f"dismiss|{OP_USER}", row
        ev = psql(f"SELECT payload->>'by' || '|' || (payload->>'outcome') FROM ledger WHERE"
                  f" kind = 'GateAnswered' AND seq > {seq0} AND (payload->>'gate')::bigint = {hostile}")
        assert ev == f"{OP_USER}|dismissed", ev
        # The list follows (polling): the dismissed gate leaves it; the event shows.
        b.wait("document.querySelectorAll('#gates tbody tr').length === 2", what="two gates left")
        b.wait("document.getElementById('events').textContent.includes('GateAnswered')",
               what="the GateAnswered event in the feed")
        b.screenshot(os.path.join(OUT, "console-answered.png"), full=True)

        # 4b. More than 1,000 open gates in one group: counted server-side
        # (the list shows the newest 200), then dismissed all at once.
        plant_many(BULK, "vibey.bulk", "expired")
        bulk_row = ("[...document.querySelectorAll('#groups tbody tr')].find(r => r.cells[0].textContent"
                    " === '\"vibey.bulk\"')")
        b.wait(f"(({bulk_row}) || {{cells: [0, 0, {{textContent: ''}}]}}).cells[2].textContent === '{BULK}'",
               what=f"the bulk group's count of {BULK}")
        cells = b.eval(f"[...({bulk_row}).cells].map(c => c.textContent)")
        assert cells[:3] == ["\"vibey.bulk\"", "\"expired\"", str(BULK)], cells
        assert cells[3] == "2 h" and cells[4] == "2 h", cells  # oldest, newest
        b.wait(f"document.getElementById('groups-note').textContent.includes('{BULK + 2} open')",
               what="the open gates' total")
        # The list follows the groups within the same poll: the newest 200 of them all.
        b.wait("document.querySelectorAll('#gates tbody tr').length === 200", what="200 gate rows")
        assert "the newest 200 of 1202" in b.eval("document.getElementById('gates-note').textContent")
        b.screenshot(os.path.join(OUT, "console-groups.png"), full=True)
        seq0 = int(psql("SELECT COALESCE(max(seq), 0) FROM ledger"))
        b.eval(f"({bulk_row}).querySelector('button[data-bulk=\"dismiss\"]').click(), true")
        b.wait("document.getElementById('bulk-confirm') !== null", what="the bulk confirm",
               show="document.getElementById('bulk-result').textContent")
        confirm = b.eval("document.getElementById('bulk-box').textContent")
        assert f"Dismiss {BULK} open gates (\"vibey.bulk\" {BULK})" in confirm, confirm
        assert f"as {OP_USER}" in confirm, confirm
        # The dry run made nothing.
        assert psql("SELECT count(*) FROM answer_set") == "0"
        assert psql("SELECT count(*) FROM gate WHERE answer IS NULL") == str(BULK + 2)
        b.screenshot(os.path.join(OUT, "console-bulk-confirm.png"))
        b.eval("document.getElementById('bulk-rate').value = '2000', true")
        b.eval("document.getElementById('bulk-confirm').click(), true")
        b.wait("document.getElementById('bulk-result').textContent.includes('answer set')",
               what="the answer set", show="document.getElementById('bulk-result').textContent")
        deadline = time.time() + 180
        while time.time() < deadline and psql(
                "SELECT count(*) FROM gate g JOIN dead_letter dl ON dl.gate_id = g.id"
                " WHERE dl.origin_queue = '\"vibey.bulk\"' AND g.answer IS NULL") != "0":
            time.sleep(1)
        answered = psql("SELECT answer || '|' || answered_by || '|' || count(*) FROM gate g"
                        " JOIN dead_letter dl ON dl.gate_id = g.id WHERE dl.origin_queue ="
                        " '\"vibey.bulk\"' GROUP BY answer, answered_by")
        assert answered == f"dismiss|{OP_USER}|{BULK}", answered
        aset = psql("SELECT requested_by || '|' || total || '|' || choice FROM answer_set")
        assert aset == f"{OP_USER}|{BULK}|dismiss", aset
        ev = psql(f"SELECT payload->>'by' || '|' || (payload->>'outcome') || '|' || count(*) FROM ledger"
                  f" WHERE kind = 'GateAnswered' AND seq > {seq0} GROUP BY payload->>'by', payload->>'outcome'")
        assert ev == f"{OP_USER}|dismissed|{BULK}", ev
        # The page follows: the set done, the group gone, the other two left.
        b.wait("document.getElementById('bulk-result').textContent.includes('done')",
               what="the answer set done", show="document.getElementById('bulk-result').textContent")
        b.wait(f"!({bulk_row})", what="the bulk group gone")
        assert b.eval("document.getElementById('groups-note').textContent") == "(2 open)"
        b.screenshot(os.path.join(OUT, "console-bulk-done.png"), full=True)
        b.close()
        b = None
        d.stop()

        # 5. Anonymous reads on: the list renders signed out; answers still need a sign-in.
        d = Reaperd("anonymous", {"REAPER_HTTP_CONSOLE_READ_ANONYMOUS": "true"})
        profile2 = tempfile.mkdtemp(prefix="console-chromium-")
        b = Browser(profile2)
        b.goto(d.url)
        b.wait("document.querySelectorAll('#gates tbody tr').length === 2", what="anonymous gate rows")
        assert b.eval("document.getElementById('signed-as').textContent") == "not signed in"
        b.eval(f"document.querySelector('#gates tbody tr[data-gate=\"{plain1}\"]').click(), true")
        b.wait("document.getElementById('answer-box').querySelector('button') !== null")
        b.eval("document.querySelector('#answer-box button[data-choice=\"dismiss\"]').click(), true")
        b.eval("document.getElementById('answer-confirm').click(), true")
        b.wait("document.getElementById('answer-result').textContent.includes('Sign in')",
               what="the sign-in refusal")
        assert psql(f"SELECT answer IS NULL FROM gate WHERE id = {plain1}") == "t"
        # The API itself refuses an anonymous answer, whatever the page does.
        req = urllib.request.Request(d.url + "/api/ask", method="POST",
                                     data=json.dumps({"v": 1, "op": "answer", "gate": plain1,
                                                      "choice": "dismiss"}).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=30)
            raise AssertionError("an anonymous answer was taken")
        except urllib.error.HTTPError as e:
            assert e.code == 401, e.code
        assert psql(f"SELECT answer IS NULL FROM gate WHERE id = {plain1}") == "t"

        # 6. The sign-in brake: five refused sign-ins from this address, then
        # the right password is refused too, without asking the broker.
        feed = d.url + "/api/feed"
        for i in range(5):
            code, _ = console_get(feed, f"{OP_USER}:wrong-{i}")
            assert code == 401, (i, code)
        code, headers = console_get(feed, f"{OP_USER}:{OP_PASSWORD}")
        assert code == 429, code
        assert 1 <= int(headers["Retry-After"]) <= 60, headers["Retry-After"]
        # Anonymous reads are no sign-in: they still go.
        code, _ = console_get(feed)
        assert code == 200, code
        print(f"test_console: ok; screenshots in {OUT}")
    finally:
        if b is not None:
            b.close()
        d.stop()
        shutil.rmtree(profile, ignore_errors=True)
        if profile2 is not None:
            shutil.rmtree(profile2, ignore_errors=True)
        mgmt("DELETE", f"/api/users/{OP_USER}")
        mgmt("DELETE", f"/api/queues/%2F/{urllib.request.quote(CONTROL, safe='')}")
        subprocess.run(["psql", env("REAPER_STORE_DSN"), "-X", "-q", "-c",
                        f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"], capture_output=True)


if __name__ == "__main__":
    main()
