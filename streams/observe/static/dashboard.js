// Polls /dashboard/data.json every 2 s and renders it; text only through textContent.
"use strict";

const POLL_MS = 2000;
// The token is never in a URL: the person types it once, the page trades it for an HttpOnly
// session cookie (POST /dashboard/login with the bearer header) and forgets it.
async function signIn(token) {
  const response = await fetch("/dashboard/login", {
    method: "POST",
    headers: { Authorization: "Bearer " + token },
    cache: "no-store",
  });
  if (!response.ok) throw new Error("the token was not accepted (" + response.status + ")");
  return (await response.json()).scope;
}

function askForToken(show) {
  document.getElementById("signin").hidden = !show;
}

document.getElementById("signin_button").addEventListener("click", async () => {
  const input = document.getElementById("signin_token");
  const status = document.getElementById("signin_status");
  try {
    await signIn(input.value.trim());
    input.value = "";
    status.textContent = "";
    askForToken(false);
  } catch (e) {
    status.textContent = e.message;
  }
});

function fmtInt(n) {
  return n === null || n === undefined ? "–" : Math.round(n).toLocaleString("en-US");
}

function fmtMs(ms) {
  if (ms === null || ms === undefined) return "–";
  return ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : Math.round(ms) + " ms";
}

function fmtRate(r) {
  return r === null || r === undefined ? "–" : (r * 100).toFixed(1) + "%";
}

function rateClass(r) {
  if (r === null || r === undefined) return "";
  return r >= 0.95 ? "good" : r >= 0.8 ? "fair" : "poor";
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function sum(obj) {
  return Object.values(obj || {}).reduce((a, b) => a + b, 0);
}

function setKey(key, text) {
  document.querySelectorAll('[data-k="' + key + '"]').forEach((n) => { n.textContent = text; });
}

// A <dl> of label → count, sorted by count, each value tagged data-k="prefix.label".
function renderKv(id, prefix, values) {
  const dl = document.getElementById(id);
  dl.replaceChildren();
  const entries = Object.entries(values || {}).sort((a, b) => b[1] - a[1]);
  if (!entries.length) {
    dl.append(el("dt", "none yet"), el("dd", ""));
  }
  for (const [label, n] of entries) {
    const dd = el("dd", fmtInt(n), label);
    dd.dataset.k = prefix + "." + label;
    dl.append(el("dt", label.replace(/_/g, " ")), dd);
  }
  const total = el("dd", fmtInt(sum(values)));
  total.dataset.k = prefix + ".total";
  dl.append(el("dt", "total"), total);
}

function sparkline(series) {
  const ns = "http://www.w3.org/2000/svg";
  const w = 240, h = 24, bw = w / Math.max(1, series.length);
  const max = Math.max(1, ...series);
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  series.forEach((v, i) => {
    if (!v) return;
    const r = document.createElementNS(ns, "rect");
    const bh = Math.max(1, (v / max) * h);
    r.setAttribute("x", (i * bw).toFixed(1));
    r.setAttribute("y", (h - bh).toFixed(1));
    r.setAttribute("width", Math.max(1, bw - 1).toFixed(1));
    r.setAttribute("height", bh.toFixed(1));
    svg.append(r);
  });
  return svg;
}

function renderStages(data) {
  const body = document.querySelector("#stages tbody");
  body.replaceChildren();
  const inFlight = data.totals.in_flight || {};
  for (const s of data.stages) {
    const tr = el("tr");
    tr.dataset.stage = s.stage;
    const done = el("td", fmtInt(s.done), "num");
    done.dataset.k = "stage." + s.stage + ".done";
    const rate = el("td", fmtRate(s.success_rate), "num " + rateClass(s.success_rate));
    rate.dataset.k = "stage." + s.stage + ".success";
    const spark = el("td");
    spark.append(sparkline(s.series));
    const flight = s.stage in inFlight ? fmtInt(inFlight[s.stage]) : "–";
    tr.append(el("td", s.stage), done, rate, el("td", fmtMs(s.p50_ms), "num"),
      el("td", fmtMs(s.p95_ms), "num"), el("td", flight, "num"), spark);
    body.append(tr);
  }
}

function copyButton(text) {
  const b = el("button", "copy", "copy");
  b.type = "button";
  b.title = "copy the command";
  b.addEventListener("click", () => {
    if (navigator.clipboard) navigator.clipboard.writeText(text);
  });
  return b;
}

// The results of the chain's own stages: "priority: level=high, sentiment=angry".
function fmtResults(results) {
  const parts = [];
  for (const [stage, fields] of Object.entries(results || {})) {
    const shown = Object.entries(fields).map(([k, v]) => k + "=" + v).join(", ");
    parts.push(stage + (shown ? ": " + shown : ""));
  }
  return parts.length ? parts.join("; ") : "—";
}

function renderTickets(tickets) {
  const body = document.querySelector("#tickets tbody");
  body.replaceChildren();
  if (!tickets.length) {
    const td = el("td", "no replies yet", "muted");
    td.colSpan = 8;
    const tr = el("tr");
    tr.append(td);
    body.append(tr);
    return;
  }
  for (const t of tickets) {
    const tr = el("tr");
    const trace = el("td");
    if (t.ticket_id === undefined) {
      // Only the desk's token shows which ticket or session (BATON_DESK_TOKEN).
      trace.append(el("span", "ids need BATON_DESK_TOKEN", "muted"));
    } else {
      tr.dataset.ticket = t.ticket_id;
      trace.append(el("code", t.trace), copyButton(t.trace));
    }
    tr.append(el("td", t.ticket_id ?? "—"), el("td", t.session_id ?? "—"), el("td", t.status, t.status),
      el("td", fmtMs(t.end_to_end_ms), "num"), el("td", fmtInt(t.calls), "num"),
      el("td", "$" + (t.cost_usd || 0).toFixed(4), "num"), el("td", fmtResults(t.results)), trace);
    body.append(tr);
  }
}

function render(data) {
  const t = data.totals;
  document.getElementById("worker").textContent = data.worker.app_id + " · llm: " + data.worker.llm;
  const health = document.getElementById("health");
  health.textContent = data.health.ready ? "ready" : "not ready: " + data.health.reason;
  health.className = "badge " + (data.health.ready ? "ready" : "not_ready");
  document.getElementById("updated").textContent = new Date().toLocaleTimeString("en-GB");
  document.getElementById("window").textContent = Math.round(data.window_s / 60);
  document.getElementById("bucket").textContent = data.bucket_s;
  setKey("records_in.intake", fmtInt((t.records_in || {}).intake || 0));
  setKey("in_flight.total", fmtInt(sum(t.in_flight)));
  setKey("lag", fmtInt(t.lag));
  const ages = t.open_by_age || {};
  setKey("open.total", fmtInt(sum(ages)));
  setKey("open.ages", Object.keys(ages).filter((k) => ages[k]).map((k) => k + ": " + fmtInt(ages[k])).join(", ") || "none");
  setKey("past_deadline", fmtInt(t.past_deadline || 0));
  setKey("holding", fmtInt(t.holding || 0));
  setKey("model_calls", fmtInt(t.model_calls));
  setKey("reasks", fmtInt(t.reasks));
  setKey("retries.total", fmtInt(sum(t.retries)));
  setKey("cost_usd", "$" + t.cost_usd.toFixed(4));
  for (const kind of ["input", "output", "cache_read", "cache_write"]) {
    setKey("tokens." + kind, fmtInt((t.tokens || {})[kind] || 0));
  }
  renderKv("replies", "replies", t.replies);
  renderKv("dead_letters", "dead_letters", t.dead_letters);
  renderKv("context", "context", t.context);
  renderStages(data);
  renderTickets(data.tickets);
  document.body.dataset.loaded = "1";
}

async function poll() {
  const error = document.getElementById("error");
  try {
    const response = await fetch("/dashboard/data.json", { cache: "no-store" });
    askForToken(response.status === 401);
    if (!response.ok) throw new Error("data.json answered " + response.status);
    render(await response.json());
    error.hidden = true;
  } catch (e) {
    error.textContent = "cannot load figures: " + e.message;
    error.hidden = false;
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

poll();
