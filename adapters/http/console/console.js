// reaper console: reads and answers through reaperd's /console/api, which
// sends each as a control request as the signed-in broker user.
// Every value shown comes from the store or a dead letter: it is put into
// the page as text (textContent, never markup), so a body holding
// <script> shows as those characters.
"use strict";

const POLL_MS = 3000;
let creds = sessionStorage.getItem("reaper.console.auth"); // "Basic ..." or null
let signedAs = sessionStorage.getItem("reaper.console.user") || "";
const GATES_SHOWN = 200; // the newest open gates listed (of the chosen group, or all)
let filter = null;     // the chosen group: {key, kind, origin, reason} (origin, reason as stored), or null
let openGate = null;   // the gate shown in detail
let lastGates = [];
let lastGroups = { groups: [], groups_total: 0, open_gates: 0 };
let bulkJob = null;    // the answer set started from a group, followed until it ends

const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(cells, cls) {
  const tr = el("tr", undefined, cls);
  for (const c of cells) tr.appendChild(el("td", c === null || c === undefined ? "" : c));
  return tr;
}

function fill(tableId, rows) {
  const tb = $(tableId).tBodies[0];
  tb.replaceChildren(...rows);
}

function show(v) {
  if (v === null || v === undefined) return "";
  return typeof v === "string" ? v : JSON.stringify(v);
}

function age(iso) {
  if (!iso) return "";
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 120) return s + " s";
  if (s < 7200) return Math.round(s / 60) + " min";
  if (s < 172800) return Math.round(s / 3600) + " h";
  return Math.round(s / 86400) + " d";
}

function problem(text) {
  const p = $("problem");
  p.hidden = !text;
  p.textContent = text || "";
}

async function call(path, body) {
  const headers = {};
  const sent = creds;
  if (sent) headers["Authorization"] = sent;
  const init = { method: body ? "POST" : "GET", headers, cache: "no-store" };
  if (body) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  let j = null;
  try { j = await r.json(); } catch (e) { j = null; }
  if (!r.ok) {
    const why = j && j.console_error ? j.console_error : r.status + " " + r.statusText;
    const err = new Error(why);
    err.status = r.status;
    err.creds = sent; // what was refused (a sign-in made since is not)
    throw err;
  }
  return j;
}

async function ask(req) {
  const rep = await call("/console/api/ask", Object.assign({ v: 1 }, req));
  if (!rep || rep.ok !== true) {
    const e = rep && rep.error ? rep.error.code + ": " + rep.error.message : "no reply";
    throw new Error(e);
  }
  return rep.result;
}

function renderSignin() {
  $("signed-as").textContent = creds ? "signed in as " + signedAs : "not signed in";
  $("signin-user").hidden = !!creds;
  $("signin-password").hidden = !!creds;
  $("signin-go").hidden = !!creds;
  $("signout").hidden = !creds;
}

// A group's origin and reason are stored rendered (quoted, escaped: a
// JSON string when the value was valid UTF-8 and not cut). The filters of
// the gates and answer_many ops take the value itself: read it back, or
// null when it cannot be (cut, or bytes that are not UTF-8).
function unrender(v) {
  try {
    const x = JSON.parse(v);
    return typeof x === "string" && x.length > 0 ? x : null;
  } catch (e) {
    return null;
  }
}

// The control filters naming exactly a group's gates, or null.
function groupFilters(o) {
  const f = { kind: o.kind };
  for (const k of ["origin", "reason"]) {
    if (o[k] === null || o[k] === undefined) continue; // no dead letter: the kind says it
    const raw = unrender(o[k]);
    if (raw === null) return null;
    f[k] = raw;
  }
  return f;
}

function groupKey(o) {
  return JSON.stringify([o.kind, o.origin, o.reason]);
}

function renderGroups(fg) {
  lastGroups = fg;
  const rows = [];
  for (const o of fg.groups) {
    const tr = row([o.origin === null ? "(job table)" : o.origin, o.reason === null ? "" : o.reason,
      o.count, age(o.oldest), age(o.newest)], "pick");
    const key = groupKey(o);
    tr.dataset.group = key;
    if (filter && filter.key === key) tr.classList.add("chosen");
    tr.addEventListener("click", () => {
      filter = { key, kind: o.kind, origin: o.origin, reason: o.reason };
      refreshGates();
      renderGroups(lastGroups);
    });
    const cell = el("td", undefined, "bulk");
    const choices = o.kind === "bus_dead_lettered" ? ["replay", "dismiss"] : ["dismiss"];
    for (const choice of choices) {
      const b = el("button", choice === "replay" ? "Replay all" : "Dismiss all");
      b.type = "button";
      b.dataset.bulk = choice;
      b.addEventListener("click", (ev) => { ev.stopPropagation(); bulkAsk(o, choice); });
      cell.appendChild(b);
    }
    tr.appendChild(cell);
    rows.push(tr);
  }
  fill("groups", rows);
  const more = fg.groups_total > fg.groups.length
    ? ", the largest " + fg.groups.length + " of " + fg.groups_total + " groups" : "";
  $("groups-note").textContent = "(" + fg.open_gates + " open" + more + ")";
}

// capped: the reply's total_capped (more than total match: shown "10,000+").
function renderGates(total, capped) {
  const rows = lastGates.map((g) => {
    const tr = row([g.id, g.kind, g.vhost, g.queue, g.origin_queue, g.reason, age(g.created_at)], "pick");
    tr.dataset.gate = String(g.id);
    if (openGate === g.id) tr.classList.add("chosen");
    tr.addEventListener("click", () => openDetail(g.id));
    return tr;
  });
  fill("gates", rows);
  if (total !== undefined) {
    const all = capped ? total.toLocaleString("en") + "+" : String(total);
    const of = capped || total > lastGates.length ? "the newest " + lastGates.length + " of " + all : all;
    $("gates-note").textContent = "(" + of + (filter ? " in the chosen group" : "") + ")";
  }
  $("filter-clear").hidden = !filter;
}

// The bulk answer of one group: a dry run first (how many, to which
// queues), then a confirm, then answer_many with the group's filters, sent
// as the signed-in user the way a single answer is.
async function bulkAsk(o, choice) {
  const box = $("bulk-box");
  const out = $("bulk-result");
  box.replaceChildren();
  out.textContent = "";
  if (!creds) {
    out.textContent = "Sign in to answer: answers are sent as your broker user.";
    return;
  }
  const f = groupFilters(o);
  if (f === null) {
    out.textContent = "This group's origin or reason was cut or is not UTF-8 when parked: it cannot be named as a filter; use reaperctl answer ID ID...";
    return;
  }
  let dry;
  try {
    dry = await ask(Object.assign({ op: "answer_many", choice, dry_run: true }, f));
  } catch (e) {
    out.textContent = choice + " all: " + e.message;
    return;
  }
  const where = dry.queues.map((q) => (q.queue === "" ? "(job table)" : q.queue) + " " + q.count).join(", ");
  const rate = el("input");
  rate.type = "number";
  rate.min = "1";
  rate.max = "10000";
  rate.value = "100";
  rate.id = "bulk-rate";
  const yes = el("button", "Yes, " + choice + " " + dry.total + " gates");
  yes.type = "button";
  yes.id = "bulk-confirm";
  yes.addEventListener("click", () => bulkSend(f, choice, Number(rate.value) || 100));
  const no = el("button", "Cancel");
  no.type = "button";
  no.addEventListener("click", () => { box.replaceChildren(); out.textContent = ""; });
  box.append(el("span", choice.charAt(0).toUpperCase() + choice.slice(1) + " " + dry.total +
    " open gates (" + where + (dry.other_queues ? ", " + dry.other_queues + " more queues" : "") +
    ") as " + (signedAs || "?") + ", at "), rate, el("span", " a second? "), yes, no);
  box.dataset.total = String(dry.total);
}

async function bulkSend(f, choice, rate) {
  const box = $("bulk-box");
  const out = $("bulk-result");
  box.replaceChildren();
  try {
    const r = await ask(Object.assign({ op: "answer_many", choice, rate, by: "console" }, f));
    bulkJob = r.job;
    out.textContent = "answer set " + r.job + ": " + choice + " " + r.total + " gates at " + r.rate + " a second";
    await refresh();
  } catch (e) {
    out.textContent = choice + " all: " + e.message;
  }
}

async function followBulk() {
  if (bulkJob === null || !creds) return;
  let r;
  try {
    r = await ask({ op: "answer_set", job: bulkJob });
  } catch (e) {
    $("bulk-result").textContent = "answer set " + bulkJob + ": " + e.message;
    bulkJob = null; // said once, not every poll
    return;
  }
  const j = r.job;
  $("bulk-result").textContent = "answer set " + j.id + " (" + j.choice + "): " + j.state + ", " +
    j.answered + " of " + j.total + " answered, " + j.failed + " failed" +
    (j.stop_reason ? " (" + j.stop_reason + ")" : "");
  if (["done", "cancelled", "stopped"].includes(j.state)) bulkJob = null;
}

function renderFeed(feed) {
  const s = feed.status;
  if (s && s.ok) {
    const r = s.result;
    $("status").textContent = "reaperd " + r.version + " · broker " + r.broker + " · store " + r.store +
      " · " + r.open_sightings + " open sightings";
  }
  const f = Object.assign({ sightings: [], events: [] }, feed.feed || {});
  fill("sightings", f.sightings.map((x) => {
    const tr = row(["", x.key, age(x.opened_at) + " ago"]);
    tr.cells[0].appendChild(el("span", x.condition, "cond"));
    return tr;
  }));
  fill("events", f.events.map((e) => {
    let what = show(e.payload);
    if (what.length > 240) what = what.slice(0, 240) + "…";
    return row([e.seq, String(e.at || "").replace("T", " ").slice(0, 19), e.kind, e.project, what]);
  }));
}

function bytesOf(b64) {
  const bin = atob(b64 || "");
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function hexdump(bytes, offset) {
  const lines = [];
  for (let i = 0; i < bytes.length; i += 16) {
    const chunk = bytes.slice(i, i + 16);
    const hex = [...chunk].map((b) => b.toString(16).padStart(2, "0")).join(" ");
    const asc = [...chunk].map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : ".")).join("");
    lines.push((offset + i).toString(16).padStart(8, "0") + "  " + hex.padEnd(48) + " " + asc);
  }
  return lines.join("\n");
}

function renderBody(body) {
  const pre = $("body-preview");
  if (!body) {
    pre.textContent = "";
    $("body-note").textContent = "(no stored dead letter)";
    return;
  }
  const bytes = bytesOf(body.base64);
  let text = null;
  try { text = new TextDecoder("utf-8", { fatal: true }).decode(bytes); } catch (e) { text = null; }
  // Control characters (an escape sequence) are shown, not obeyed.
  pre.textContent = text !== null
    ? text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (c) => "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0"))
    : hexdump(bytes, body.offset || 0);
  $("body-note").textContent = "(" + body.size + " bytes" + (body.truncated ? ", cut when parked" : "") +
    (body.length < body.size ? ", the first " + body.length + " shown" : "") + (text === null ? ", hex" : ", text") + ")";
}

function renderDetail(look) {
  const g = look.gate;
  $("detail").hidden = false;
  $("detail-id").textContent = String(g.id);
  const facts = $("detail-facts");
  facts.replaceChildren();
  const add = (k, v) => { facts.appendChild(el("dt", k)); facts.appendChild(el("dd", show(v))); };
  add("kind", g.kind);
  add("state", g.state + (g.answer ? " (" + g.answer + " by " + g.answered_by + ")" : ""));
  add("question", g.question);
  add("queue", g.queue);
  add("origin queue", g.origin_queue);
  add("reason", g.reason);
  add("opened", g.created_at + " (" + age(g.created_at) + " ago)");
  if (look.job) add("job", look.job.id + " " + look.job.kind + " " + look.job.state + " (" + look.job.attempts + "/" + look.job.max_attempts + ")");
  add("replay", look.replay.possible ? "possible" : "not possible: " + look.replay.why);
  const dl = look.dead_letter;
  if (dl) {
    add("vhost", dl.vhost);
    add("parked", dl.parked_at);
    add("first death", dl.first_death_at);
  }
  const box = $("answer-box");
  box.replaceChildren();
  if (g.state === "open") {
    for (const choice of g.choices) {
      const b = el("button", choice.charAt(0).toUpperCase() + choice.slice(1));
      b.type = "button";
      b.dataset.choice = choice;
      b.addEventListener("click", () => confirmAnswer(g.id, choice));
      box.appendChild(b);
    }
  }
  const props = dl ? Object.entries(dl.properties || {}) : [];
  fill("detail-properties", props.map(([k, v]) => row([k, show(v)])));
  const headers = dl ? Object.entries(dl.headers || {}).filter(([k]) => k !== "x-death") : [];
  fill("detail-headers", headers.map(([k, v]) => row([k, show(v)])));
  const xd = dl && Array.isArray((dl.headers || {})["x-death"]) ? dl.headers["x-death"] : [];
  fill("detail-xdeath", xd.map((d) => row([show(d.count), show(d.reason), show(d.queue), show(d.exchange),
    show(d["routing-keys"]), show(d.time)])));
  renderBody(dl ? dl.body : null);
}

async function openDetail(id) {
  openGate = id;
  $("answer-result").textContent = "";
  renderGates();
  try {
    renderDetail(await ask({ op: "gate", gate: id }));
    problem("");
  } catch (e) {
    problem("gate " + id + ": " + e.message);
  }
}

function confirmAnswer(id, choice) {
  const box = $("answer-box");
  box.replaceChildren();
  const yes = el("button", "Yes, " + choice + " gate " + id);
  yes.type = "button";
  yes.id = "answer-confirm";
  yes.addEventListener("click", () => answer(id, choice));
  const no = el("button", "Cancel");
  no.type = "button";
  no.addEventListener("click", () => openDetail(id));
  box.append(el("span", "Answer " + choice + " as " + (signedAs || "?") + "? "), yes, no);
}

async function answer(id, choice) {
  // A bulk answer (issue 20 item 3) goes here too: the same ask with its own op.
  const out = $("answer-result");
  if (!creds) {
    out.textContent = "Sign in to answer: answers are sent as your broker user.";
    return;
  }
  try {
    const r = await ask({ op: "answer", gate: id, choice, by: "console" });
    const said = "gate " + r.gate + ": " + r.outcome + (r.note ? " (" + r.note + ")" : "");
    await refresh();
    await openDetail(id); // the gate as it is now (answered); it clears the line
    out.textContent = said;
  } catch (e) {
    out.textContent = "gate " + id + ": " + e.message;
  }
}

// The open gates listed: the chosen group's (by its filters) or all, newest first.
async function refreshGates() {
  const req = { op: "gates", state: "open", limit: GATES_SHOWN };
  if (filter) {
    const f = groupFilters(filter);
    if (f === null) {
      lastGates = [];
      renderGates(0);
      $("gates-note").textContent = "(this group's origin or reason cannot be named as a filter)";
      return;
    }
    Object.assign(req, f);
  }
  const res = await ask(req);
  lastGates = res.gates;
  renderGates(res.total, res.total_capped === true);
}

async function refresh() {
  try {
    const feed = await call("/console/api/feed");
    renderFeed(feed);
    const f = feed.feed || {};
    renderGroups({ groups: f.groups || [], groups_total: f.groups_total || 0, open_gates: f.open_gates || 0 });
    await refreshGates();
    await followBulk();
    $("refreshed").textContent = new Date().toLocaleTimeString();
    problem("");
  } catch (e) {
    if (e.status === 401 && e.creds && e.creds === creds) {
      // A refused sign-in is not sent again every poll (each one counts
      // against this address: after five a minute reaperd answers 429).
      creds = null;
      signedAs = "";
      sessionStorage.removeItem("reaper.console.auth");
      sessionStorage.removeItem("reaper.console.user");
      renderSignin();
    }
    problem(e.status === 401 ? "Sign in with a broker user and password: " + e.message
      : e.status === 429 ? "Signing in is paused: " + e.message : e.message);
  }
}

function start() {
  $("signin").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const u = $("signin-user").value, p = $("signin-password").value;
    const bytes = new TextEncoder().encode(u + ":" + p);
    let bin = "";
    for (const b of bytes) bin += String.fromCharCode(b);
    creds = "Basic " + btoa(bin);
    signedAs = u;
    sessionStorage.setItem("reaper.console.auth", creds);
    sessionStorage.setItem("reaper.console.user", u);
    $("signin-password").value = "";
    renderSignin();
    refresh();
  });
  $("signout").addEventListener("click", () => {
    creds = null;
    signedAs = "";
    bulkJob = null;
    sessionStorage.removeItem("reaper.console.auth");
    sessionStorage.removeItem("reaper.console.user");
    renderSignin();
    refresh();
  });
  $("detail-close").addEventListener("click", () => { openGate = null; $("detail").hidden = true; renderGates(); });
  $("filter-clear").addEventListener("click", () => { filter = null; refresh(); });
  renderSignin();
  refresh();
  setInterval(refresh, POLL_MS);
}

document.addEventListener("DOMContentLoaded", start);
