// Administration → Upstreams of the active domain: each with its live connection status
// (`GET /svc/upstreams/status`, asked every 2 s while the page is open), connect and
// disconnect (the record's `enabled`), a reachability test, edit and delete; and a form for a
// new one. Controls need the `upstreams` feature read-write; listing needs read.

import { call } from "../../api.js";
import { may } from "../../rights.js";
import { confirmCell, errorNotice } from "../../dom.js";
import { upstreamForm } from "./upstream_form.js";
import { liveStatus } from "./live_status.js";

export const title = "Upstreams";

export function render(section) {
  section.innerHTML = `
    <h2>Upstreams of this domain</h2>
    <p class="status" id="polled">status: not yet asked</p>
    <p class="muted" id="upstreams-why" hidden></p>
    <p class="notice" id="probe" role="status" hidden></p>
    <p class="notice error" role="alert" hidden></p>
    <table>
      <thead><tr><th>Name</th><th>Address</th><th>State</th><th>Since</th><th>Last error</th>
        <th>Messages in / out</th><th></th><th></th><th></th><th></th></tr></thead>
      <tbody id="upstreams"></tbody>
    </table>
    <form id="upstream-form" class="admin-card"></form>`;
  const error = section.querySelector(".error");
  const probe = section.querySelector("#probe");
  const fail = (e) => {
    probe.hidden = true;
    errorNotice(section)(e);
  };
  const writable = may("upstreams", "*", "read-write");
  if (!writable) {
    const why = section.querySelector("#upstreams-why");
    why.textContent = "Changing upstreams needs the upstreams feature (read-write) in this domain.";
    why.hidden = false;
  }
  const tested = (result, name) => {
    error.hidden = true;
    probe.textContent = `${name}: reachable in ${result.latency_ms} ms (${result.protocol}).`;
    probe.hidden = false;
  };

  let records = [];
  /** Each listed upstream's `show(status)`, by record id. */
  const rows = new Map();
  const tbody = section.querySelector("#upstreams");
  const edit = upstreamForm(section.querySelector("#upstream-form"), {
    writable,
    saved: () => list(),
    tested,
    fail,
  });

  const act = async (work) => {
    error.hidden = true;
    probe.hidden = true;
    try {
      await work();
    } catch (e) {
      fail(e);
    }
  };

  const list = async () => {
    records = await call("GET", "/svc/upstreams/all");
    records.sort((a, b) => a.name.localeCompare(b.name));
    rows.clear();
    tbody.replaceChildren(
      ...records.map((record) => {
        const { tr, show } = row(record, { writable, act, edit, tested, refresh: list, fail });
        rows.set(record.id, show);
        return tr;
      }),
    );
    await live.poll();
  };

  const live = liveStatus({
    feature: "upstreams",
    rows,
    polled: section.querySelector("#polled"),
    list,
    fail,
  });
  list().catch(fail);
  return live.stop;
}

/** A row and its `show(status)`, which fills in the status cells as the polls answer. */
function row(record, { writable, act, edit, tested, refresh, fail }) {
  const tr = document.createElement("tr");
  tr.dataset.upstream = record.name;
  const cell = (text, className = "") => {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    tr.append(td);
    return td;
  };
  const path = `/svc/upstreams/${encodeURIComponent(record.id)}`;
  cell(record.name);
  cell(`${record.protocol}://${record.host}:${record.port}${record.path ?? ""}`);
  const state = cell("…", "upstream-state");
  const since = cell("");
  const lastError = cell("", "upstream-error");
  const traffic = cell("");
  const show = (status) => {
    state.textContent = status.state;
    state.dataset.state = status.state;
    since.textContent = status.since;
    const retry = status.next_retry ? ` (retry ${status.next_retry})` : "";
    // The sentence names its cause (`tcp: …`) already.
    lastError.textContent = status.last_error ? `${status.last_error.text}${retry}` : "—";
    const { in_messages: i = 0, out_messages: o = 0 } = status.counters ?? {};
    traffic.textContent = `${i} / ${o}`;
    switcher.textContent = status.state === "disabled" ? "Connect" : "Disconnect";
  };

  const button = (label, onClick, data) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.disabled = !writable;
    Object.assign(b.dataset, data);
    b.addEventListener("click", () => act(onClick));
    const td = document.createElement("td");
    td.append(b);
    tr.append(td);
    return b;
  };
  const switcher = button(
    record.enabled ? "Disconnect" : "Connect",
    async () => {
      const how = switcher.textContent === "Connect" ? "connect" : "disconnect";
      show(await call("POST", `${path}/${how}`));
    },
    { switch: record.name },
  );
  button("Test", async () => tested(await call("POST", `${path}/test`), record.name), { test: record.name });
  button("Edit", async () => edit(record), { edit: record.name });
  const remove = async () => {
    await call("DELETE", `/svc/${encodeURIComponent(record.id)}`);
    await refresh();
  };
  const question = `Delete the upstream “${record.name}”? Its link closes at once.`;
  tr.append(confirmCell("Delete", question, remove, fail, { disabled: !writable, data: { delete: record.name } }));
  return { tr, show };
}
