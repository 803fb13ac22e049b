// reaper console: reads and answers through reaperd's /console/api, which
// sends each as a control request as the signed-in broker user.
// Every value shown comes from the store or a dead letter: it is put into
// the page as text (textContent, never markup), so a body holding
// <script> shows as those characters.
"use strict";

const POLL_MS = 3000;
let creds = sessionStorage.getItem("reaper.console.auth"); // "Basic ..." or null
let signedAs = sessionStorage.getItem("reaper.console.user") || "";
let filter = null;     // {queue, reason} of a chosen group, or null
let openGate = null;   // the gate shown in detail
let lastGates = [];

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
  if (creds) headers["Authorization"] = creds;
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

// capped: the reply's total_capped (more than total match: shown "10,000+").
function renderGroups(gates, total, capped) {
  const groups = new Map();
  for (const g of gates) {
    const key = JSON.stringify([g.queue, g.reason]);
    const o = groups.get(key) || { queue: g.queue, reason: g.reason, n: 0, oldest: null };
    o.n++;
    if (g.created_at && (!o.oldest || g.created_at < o.oldest)) o.oldest = g.created_at;
    groups.set(key, o);
  }
  const rows = [];
  for (const o of [...groups.values()].sort((a, b) => b.n - a.n)) {
    const tr = row([o.queue === null ? "(job table)" : o.queue, o.reason, o.n, age(o.oldest)], "pick");
    if (filter && filter.queue === o.queue && filter.reason === o.reason) tr.classList.add("chosen");
    tr.addEventListener("click", () => {
      filter = { queue: o.queue, reason: o.reason };
      renderGates();
      renderGroups(lastGates, total, capped);
    });
    rows.push(tr);
  }
  fill("groups", rows);
  const all = capped ? total.toLocaleString("en") + "+" : total;
  $("groups-note").textContent = capped || total > gates.length
    ? "(the newest " + gates.length + " of " + all + ")" : "(" + all + ")";
}

function renderGates() {
  const shown = lastGates.filter((g) => !filter || (g.queue === filter.queue && g.reason === filter.reason));
  const rows = shown.map((g) => {
    const tr = row([g.id, g.kind, g.queue, g.origin_queue, g.reason, age(g.created_at)], "pick");
    tr.dataset.gate = String(g.id);
    if (openGate === g.id) tr.classList.add("chosen");
    tr.addEventListener("click", () => openDetail(g.id));
    return tr;
  });
  fill("gates", rows);
  $("gates-note").textContent = filter ? "(" + shown.length + " in the chosen group)" : "";
  $("filter-clear").hidden = !filter;
}

function renderFeed(feed) {
  const s = feed.status;
  if (s && s.ok) {
    const r = s.result;
    $("status").textContent = "reaperd " + r.version + " · broker " + r.broker + " · store " + r.store +
      " · " + r.open_sightings + " open sightings";
  }
  const f = feed.feed || { sightings: [], events: [] };
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

async function refresh() {
  try {
    const res = await ask({ op: "gates", state: "open", limit: 1000 });
    lastGates = res.gates;
    renderGroups(res.gates, res.total, res.total_capped === true);
    renderGates();
    renderFeed(await call("/console/api/feed"));
    $("refreshed").textContent = new Date().toLocaleTimeString();
    problem("");
  } catch (e) {
    problem(e.status === 401 ? "Sign in with a broker user and password: " + e.message : e.message);
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
