// The alarm journal (`GET /svc/alarms/journal`), newest first: every state change and
// operator action with its value, time, who and comment. Filters by alarm, state, priority,
// who and a time range (local `datetime-local` inputs sent as RFC 3339); "Older entries" pages
// back with `before` (the last shown entry's id). While the first page is shown it follows the
// alarms: the view calls `changed()` on every change and the page is read again.

import { call } from "../../api.js";
import { PRIORITIES } from "../../alarm_feed.js";
import { stateLabel, timeCell, valueText } from "./summary.js";

/** Entries read per page. */
export const PAGE = 50;
/** A burst of changes reads the first page once. */
const FOLLOW_AFTER_MS = 400;
const STATES = [
  "normal",
  "active_unacknowledged",
  "active_acknowledged",
  "returned_unacknowledged",
  "latched",
  "shelved",
  "suppressed",
  "out_of_service",
];

/**
 * Fills `section`; `alarm` fixes the alarm filter (one alarm's page). Returns
 * `{ changed(), stop() }`.
 */
export function journal(section, { alarm = "" } = {}) {
  section.innerHTML = `
    <form class="row journal-filter" id="journal-filter">
      <label ${alarm ? "hidden" : ""}>Alarm <input name="alarm" size="12"></label>
      <label>State <select name="state"><option value="">any</option></select></label>
      <label>Priority <select name="priority"><option value="">any</option></select></label>
      <label>Who <input name="who" size="10" placeholder="user"></label>
      <label>From <input type="datetime-local" name="from"></label>
      <label>To <input type="datetime-local" name="to"></label>
      <button class="primary" type="submit">Apply</button>
      <button type="reset">Clear</button>
    </form>
    <p class="notice error" role="alert" id="journal-error" hidden></p>
    <table class="journal">
      <thead><tr><th>Time</th><th>Alarm</th><th>Change</th><th>Cause</th><th>Priority</th>
        <th>Value</th><th>Message</th><th>Who</th><th>Comment</th></tr></thead>
      <tbody id="journal"></tbody>
    </table>
    <div class="row"><button type="button" id="older" disabled>Older entries</button>
      <span class="status" id="journal-count"></span></div>`;
  const form = section.querySelector("#journal-filter");
  form.elements.state.append(...STATES.map((s) => new Option(stateLabel(s), s)));
  form.elements.priority.append(...PRIORITIES.map((p) => new Option(p, p)));
  const body = section.querySelector("#journal");
  const older = section.querySelector("#older");
  const count = section.querySelector("#journal-count");
  const error = section.querySelector("#journal-error");
  let entries = [];
  let more = false;
  let pagedBack = false;
  // Each read gets a number; an answer to an older read than the latest is dropped.
  let reads = 0;
  let timer = 0;

  const query = (before) => {
    const params = new URLSearchParams();
    const fixed = alarm || form.elements.alarm.value.trim();
    if (fixed) params.set("alarm", fixed);
    for (const name of ["state", "priority"]) {
      if (form.elements[name].value) params.set(name, form.elements[name].value);
    }
    if (form.elements.who.value.trim()) params.set("who", form.elements.who.value.trim());
    for (const name of ["from", "to"]) {
      const local = form.elements[name].value;
      if (local) params.set(name, new Date(local).toISOString());
    }
    if (before !== undefined) params.set("before", String(before));
    params.set("limit", String(PAGE));
    return `/svc/alarms/journal?${params}`;
  };

  const load = async (append) => {
    const read = ++reads;
    pagedBack = append;
    try {
      const page = await call("GET", query(append ? entries.at(-1)?.id : undefined));
      if (read !== reads) return;
      entries = append ? [...entries, ...page] : page;
      more = page.length === PAGE;
      error.hidden = true;
      paint();
    } catch (e) {
      if (read !== reads) return;
      error.textContent = e.message;
      error.hidden = false;
    }
  };

  const paint = () => {
    body.replaceChildren(...entries.map(row));
    if (!entries.length) {
      const tr = document.createElement("tr");
      const td = document.createElement("td");
      td.colSpan = 9;
      td.className = "muted";
      td.textContent = "No journal entries match.";
      tr.append(td);
      body.append(tr);
    }
    older.disabled = !more;
    count.textContent = `${entries.length} entr${entries.length === 1 ? "y" : "ies"}${more ? ", more before" : ""}`;
  };

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    load(false);
  });
  // After the reset has emptied the inputs.
  form.addEventListener("reset", () => setTimeout(() => load(false)));
  older.addEventListener("click", () => load(true));
  load(false);

  return {
    changed() {
      // Paged back: the user is reading history; new entries would push it away.
      if (pagedBack) return;
      clearTimeout(timer);
      timer = setTimeout(() => load(false), FOLLOW_AFTER_MS);
    },
    stop() {
      clearTimeout(timer);
      reads += 1;
    },
  };
}

function row(entry) {
  const tr = document.createElement("tr");
  tr.dataset.id = String(entry.id);
  tr.dataset.state = entry.state;
  const cells = [
    `${entry.alarm}`,
    `${stateLabel(entry.previous)} → ${stateLabel(entry.state)}`,
    entry.cause,
    entry.priority,
    valueText(entry.value),
    entry.message,
    entry.who ?? "",
    entry.comment ?? "",
  ].map((text) => {
    const td = document.createElement("td");
    td.textContent = text;
    return td;
  });
  cells[6].className = "who";
  tr.append(timeCell(entry.at), ...cells);
  return tr;
}
