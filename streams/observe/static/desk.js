// The hand-off queue: polls /dashboard/queue.json every 5 s. Approve, deny, done, failed and
// answer are same-origin POSTs carrying the CSRF token the queue hands out; text only through textContent.
const QUEUE_MS = 5000;
let csrf = "";

// The session cookie (signed in with the desk's token) authenticates; never a URL's token.
function deskHeaders(extra) {
  return Object.assign({}, extra || {});
}

function fmtWhen(iso) {
  return iso ? new Date(iso).toISOString().slice(0, 16).replace("T", " ") + " UTC" : "–";
}

function offerText(offer) {
  if (!offer) return "—";
  const lines = offer.lines.map((l) => l.kind + (l.amount ? " " + l.amount.toFixed(2) : ""));
  return lines.join(", ") + " · total " + offer.total.toFixed(2) + " " + (offer.currency || "");
}

function actionText(action) {
  const amount = action.amount != null ? " " + action.amount.toFixed(2) + " " + (action.currency || "") : "";
  return action.kind + amount + " · order " + action.order_id + (action.channel ? " · " + action.channel : "");
}

function moneyLine(offer) {
  return offer ? offer.lines.find((l) => l.amount) : undefined;
}

function button(label, action) {
  const b = el("button", label, "act " + action);
  b.type = "button";
  b.dataset.action = action;
  return b;
}

function setStatus(tr, text, cls) {
  const status = tr.querySelector(".desk-status");
  status.textContent = text;
  status.className = "desk-status " + (cls || "");
}

function setBusy(tr, busy) {
  tr.querySelectorAll("button.act").forEach((b) => { b.disabled = busy; });
}

async function act(tr, path, body) {
  setBusy(tr, true);
  setStatus(tr, "sending…", "muted");
  try {
    const response = await fetch(path, {
      method: "POST",
      headers: deskHeaders({ "Content-Type": "application/json", "X-Baton-CSRF": csrf }),
      body: JSON.stringify(body),
      cache: "no-store",
      credentials: "same-origin",
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(data.error || "answered " + response.status);
    tr.dataset.sent = data.decision_id;
    setStatus(tr, data.action + " sent (decision " + data.decision_id + "), waiting for the worker", "good");
  } catch (e) {
    setStatus(tr, "not sent: " + e.message, "poor");
    setBusy(tr, false);
  }
}

function actions(item, tr) {
  const td = el("td", null, "desk-actions");
  const by = () => document.getElementById("desk_by").value.trim() || null;
  const ids = { session_id: item.session_id, ticket_id: item.ticket_id };
  const offer = item.proposed_offer;
  if (offer) {
    const money = moneyLine(offer);
    const amount = el("input", null, "amount");
    amount.type = "number";
    amount.min = "0";
    amount.step = "0.01";
    amount.value = money ? String(money.amount) : "";
    amount.disabled = !item.amount_editable;
    amount.title = item.amount_editable ? "approve this amount (within the policy)" : "an offer of several money lines is approved as proposed";
    const approve = button("Approve", "approve");
    approve.addEventListener("click", () => {
      let changed = null;
      if (item.amount_editable && amount.value !== String(money.amount)) {
        changed = Number(amount.value);
        if (amount.value === "" || !Number.isFinite(changed)) {
          setStatus(tr, "not sent: the amount is not a number", "poor");
          return;
        }
      }
      act(tr, "/dashboard/decide", Object.assign({ verdict: "approve", amount: changed, by: by() }, ids));
    });
    const deny = button("Deny", "deny");
    deny.addEventListener("click", () => act(tr, "/dashboard/decide", Object.assign({ verdict: "deny", by: by() }, ids)));
    const row = el("div", null, "desk-offer");
    row.append(amount, approve, deny);
    td.append(row);
  }
  // An action handed to a person: closed as done (the system's reference) or failed.
  const action = item.action;
  if (action) {
    const named = Object.assign({ idempotency_key: action.idempotency_key }, ids);
    const reference = el("input", null, "reference");
    reference.type = "text";
    reference.maxLength = 200;
    reference.placeholder = "the system's reference";
    reference.title = "done: the shop's system's reference of what was done (the refund's id)";
    const done = button("Done", "done");
    done.addEventListener("click", () => {
      if (!reference.value.trim()) {
        setStatus(tr, "not sent: done needs the system's reference", "poor");
        return;
      }
      act(tr, "/dashboard/decide", Object.assign({ verdict: "done", reference: reference.value.trim(), by: by() }, named));
    });
    const failed = button("Failed", "failed");
    failed.addEventListener("click", () => act(tr, "/dashboard/decide", Object.assign({ verdict: "failed", by: by() }, named)));
    const row = el("div", null, "desk-offer");
    row.append(reference, done, failed);
    td.append(row);
  }
  const text = el("textarea", null, "answer");
  text.maxLength = 4000;
  text.rows = 2;
  text.placeholder = "write an answer to the customer";
  const send = button("Send answer", "answer");
  send.addEventListener("click", () => {
    if (!text.value.trim()) {
      setStatus(tr, "not sent: the answer is empty", "poor");
      return;
    }
    act(tr, "/dashboard/answer", Object.assign({ text: text.value, by: by() }, ids));
  });
  td.append(text, send, el("div", "", "desk-status"));
  return td;
}

// The reply's note for staff, as text (never a link: its links come inert), under a label
// saying who wrote it; a note flagged for instructions aimed at staff says so first.
function noteOf(item) {
  const note = item.note || { written_by: "model", text: item.internal_note || "", flagged: [] };
  const box = el("div", null, "desk-note small");
  const who = note.written_by === "baton" ? "note by baton" : "note written by the model (unverified, not an instruction)";
  box.append(el("span", who + ": ", "muted"));
  if (note.flagged && note.flagged.length) {
    box.append(el("strong", "flagged, asks staff to " + note.flagged.join(", ").replace(/_/g, " ") + ": ", "poor"));
  }
  box.append(el("span", note.text));
  return box;
}

function queueRow(item) {
  const tr = el("tr");
  tr.dataset.handoff = item.ticket_id;
  if (item.action) tr.dataset.action = item.action.idempotency_key;
  tr.dataset.session = item.session_id;
  const reason = el("td");
  reason.append(el("span", item.reason.replace(/_/g, " "), item.urgency === "high" ? "poor" : ""),
    el("div", item.reason_text, "muted small"));
  const ids = el("td");
  ids.append(el("code", item.session_id), el("div", item.ticket_id, "muted small"));
  const problem = el("td");
  const packet = el("details");
  packet.append(el("summary", "packet"), el("pre", JSON.stringify(item, null, 2)));
  problem.append(el("div", item.core_problem || item.text), noteOf(item), packet);
  const overdue = new Date(item.deadline) < new Date();
  tr.append(el("td", fmtWhen(item.handed_off_at)), el("td", fmtWhen(item.deadline), overdue ? "poor" : ""),
    reason, ids, problem, el("td", item.action ? actionText(item.action) : offerText(item.proposed_offer)), actions(item, tr));
  return tr;
}

// What became of the last decision on the row: sent and waiting, or refused by the worker
// (the buttons work again); a row keeps what the person typed either way.
function showDecided(tr, item) {
  if (item.sent) {
    if (tr.dataset.sent !== item.sent.decision_id) {
      tr.dataset.sent = item.sent.decision_id;
      setBusy(tr, true);
      setStatus(tr, item.sent.action + " sent (decision " + item.sent.decision_id + "), waiting for the worker", "good");
    }
    return;
  }
  const refused = item.refused;
  if (refused && (tr.dataset.sent || tr.dataset.refused !== refused.decision_id)) {
    tr.dataset.refused = refused.decision_id;
    setStatus(tr, refused.action + " refused by the worker (" + refused.reason + "): " + refused.error, "poor");
  }
  if (tr.dataset.sent) {
    delete tr.dataset.sent;
    setBusy(tr, false);
  }
}

const queueRows = new Map();

function renderQueue(data) {
  document.getElementById("queue_open").textContent = fmtInt(data.open);
  const body = document.querySelector("#queue tbody");
  const wanted = new Set(data.items.map((i) => i.packet_id));
  for (const [id, tr] of queueRows) {
    if (!wanted.has(id)) { tr.remove(); queueRows.delete(id); }
  }
  body.querySelectorAll("tr.empty").forEach((tr) => tr.remove());
  for (const item of data.items) {
    let tr = queueRows.get(item.packet_id);
    if (!tr) {
      tr = queueRow(item);
      queueRows.set(item.packet_id, tr);
    }
    showDecided(tr, item);
    body.append(tr);  // moves a kept row, its inputs as typed, into the queue's order
  }
  if (!data.items.length) {
    const td = el("td", "no open hand-offs", "muted");
    td.colSpan = 7;
    const tr = el("tr", null, "empty");
    tr.append(td);
    body.append(tr);
  }
}

async function pollQueue() {
  const error = document.getElementById("queue_error");
  try {
    const response = await fetch("/dashboard/queue.json", { headers: deskHeaders(), cache: "no-store" });
    const data = await response.json().catch(() => ({}));
    // 403: no token is configured, so there is no desk; a note, not an alarm.
    const noDesk = response.status === 403;
    document.getElementById("queue").hidden = noDesk;
    document.querySelector(".desk-who").hidden = noDesk;
    if (!response.ok) {
      error.className = noDesk ? "muted" : "error";
      throw new Error(data.error || "queue.json answered " + response.status);
    }
    csrf = data.csrf;
    renderQueue(data);
    error.hidden = true;
  } catch (e) {
    error.textContent = e.message;
    error.hidden = false;
  } finally {
    document.body.dataset.queue = String(Number(document.body.dataset.queue || 0) + 1);
    setTimeout(pollQueue, QUEUE_MS);
  }
}

pollQueue();
