// Administration → Connectors of the active domain (OPC UA servers, Modbus TCP devices): each
// with its live status (`GET /svc/connectors/status`, asked every 2 s while the page is open)
// and, unfolded, its points' quality; enable/disable (the record's `enabled`), a test, edit,
// delete and, for OPC UA, a browser of the address space; a form for a new one; and the server
// certificates to trust. Listing needs the `connectors` feature read; everything that changes
// something needs read-write, and without it is not offered at all.

import { call } from "../../api.js";
import { may } from "../../rights.js";
import { confirmCell, errorNotice } from "../../dom.js";
import { connectorForm } from "./connector_form.js";
import { browsePanel } from "./connector_browse.js";
import { certificatesPanel } from "./connector_certificates.js";
import { liveStatus } from "./live_status.js";

export const title = "Connectors";

export function render(section) {
  section.innerHTML = `
    <h2 id="connectors-title">Connectors of this domain</h2>
    <p class="status" id="connectors-polled">status: not yet asked</p>
    <p class="muted" id="connectors-why" hidden></p>
    <p class="notice" id="connector-probe" role="status" hidden></p>
    <p class="notice error" role="alert" hidden></p>
    <table class="connectors" aria-labelledby="connectors-title">
      <thead><tr><th>Name</th><th>Kind</th><th>State</th><th>Since</th><th>Last error</th>
        <th>Values in</th><th>Writes / errors</th><th>Actions</th></tr></thead>
      <tbody id="connectors"></tbody>
    </table>
    <section id="connector-browse" class="admin-card"></section>
    <form id="connector-form" class="admin-card"></form>
    <section id="connector-certificates" class="admin-card"></section>`;
  const error = section.querySelector(".error");
  const probe = section.querySelector("#connector-probe");
  const fail = (e) => {
    probe.hidden = true;
    errorNotice(section)(e);
  };
  const say = (text) => {
    error.hidden = true;
    probe.textContent = text;
    probe.hidden = false;
  };
  const writable = may("connectors", "*", "read-write");
  if (!writable) {
    const why = section.querySelector("#connectors-why");
    why.textContent = "Changing connectors needs the connectors feature (read-write) in this domain.";
    why.hidden = false;
  }
  const tested = (answer, name) => {
    const device = answer.device ? ` Device: ${JSON.stringify(answer.device)}` : "";
    say(`${name}: reached in ${answer.latency_ms} ms.${device}`);
  };
  const act = async (work) => {
    error.hidden = true;
    probe.hidden = true;
    try {
      await work();
    } catch (e) {
      fail(e);
    }
  };

  /** Each listed connector's `show(status)`, by record id. */
  const rows = new Map();
  /** The ids whose points are unfolded (kept when the list is read again). */
  const unfolded = new Set();
  const tbody = section.querySelector("#connectors");
  const form = connectorForm(section.querySelector("#connector-form"), {
    writable,
    saved: () => {
      probe.hidden = true;
      error.hidden = true;
      return list();
    },
    tested,
    fail,
  });
  const browse = browsePanel(section.querySelector("#connector-browse"), {
    addPoint: writable ? form.addPoint : null,
    fail,
  });
  const certificates = certificatesPanel(section.querySelector("#connector-certificates"), {
    writable,
    act,
    fail,
  });
  // The domain's namespaces (reading them may be refused: then none is proposed).
  const namespaces = call("GET", "/svc/namespaces/all").catch(() => []);
  namespaces.then((all) => form.useNamespace(all[0]?.path));
  /** A tag prefix for browsed points: the record's first point's folder, else a namespace. */
  const prefixFor = async (record) => {
    const tag = record.points?.[0]?.tag;
    if (tag?.includes("/")) return tag.slice(0, tag.lastIndexOf("/"));
    return (await namespaces)[0]?.path ?? "";
  };

  const list = async () => {
    const records = await call("GET", "/svc/connectors/all");
    records.sort((a, b) => a.name.localeCompare(b.name));
    rows.clear();
    const context = {
      writable,
      act,
      fail,
      say,
      tested,
      unfolded,
      refresh: () => list(),
      edit: (record) => {
        probe.hidden = true;
        form.edit(record);
      },
      browse: async (record) => {
        if (writable && form.editing()?.id !== record.id) form.edit(record);
        browse(record, await prefixFor(record));
      },
    };
    tbody.replaceChildren(
      ...records.flatMap((record) => {
        const { trs, show } = row(record, context);
        rows.set(record.id, show);
        return trs;
      }),
    );
    await live.poll();
  };

  const live = liveStatus({
    feature: "connectors",
    rows,
    polled: section.querySelector("#connectors-polled"),
    list,
    fail,
    after: certificates,
  });
  list().catch(fail);
  return live.stop;
}

/** A connector's row, its points row, and `show(status)`, which fills both in as polls answer. */
function row(record, { writable, act, fail, say, tested, unfolded, refresh, edit, browse }) {
  const tr = document.createElement("tr");
  tr.dataset.connector = record.name;
  const cell = (text, className = "") => {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    tr.append(td);
    return td;
  };
  cell(record.name);
  cell(record.kind === "opcua" ? "OPC UA" : record.kind === "modbus" ? "Modbus TCP" : record.kind);
  const state = cell("…", "connector-state");
  const since = cell("");
  const lastError = cell("", "connector-error");
  const valuesIn = cell("", "number");
  const writes = cell("", "number");
  const actions = cell("", "actions");

  // The points, one row below, unfolded by the Points button.
  const detail = document.createElement("tr");
  detail.className = "connector-points";
  detail.dataset.points = record.name;
  detail.id = `points-${record.id.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  detail.hidden = !unfolded.has(record.id);
  const holder = document.createElement("td");
  holder.colSpan = 8;
  holder.innerHTML = `
    <p class="muted device"></p>
    <table>
      <thead><tr><th>Tag</th><th>Quality</th><th>Last value time</th><th>Error</th></tr></thead>
      <tbody></tbody>
    </table>`;
  holder.querySelector("table").setAttribute("aria-label", `Points of ${record.name}`);
  detail.append(holder);
  const pointRows = holder.querySelector("tbody");
  const device = holder.querySelector(".device");

  const button = (label, onClick, data, aria) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.setAttribute("aria-label", aria);
    Object.assign(b.dataset, data);
    b.addEventListener("click", onClick);
    actions.append(b);
    return b;
  };
  const fold = button(`Points (${record.points?.length ?? 0})`, () => {
    detail.hidden = !detail.hidden;
    if (detail.hidden) unfolded.delete(record.id);
    else unfolded.add(record.id);
    fold.setAttribute("aria-expanded", String(!detail.hidden));
  }, { unfold: record.name }, `Points of ${record.name}`);
  fold.setAttribute("aria-controls", detail.id);
  fold.setAttribute("aria-expanded", String(!detail.hidden));
  let switcher = null;
  if (writable) {
    switcher = button(record.enabled ? "Disable" : "Enable", () => act(async () => {
      const enabled = switcher.textContent === "Enable";
      await call("PUT", `/svc/${encodeURIComponent(record.id)}`, { enabled });
      await refresh();
    }), { switch: record.name }, `${record.enabled ? "Disable" : "Enable"} ${record.name}`);
    button("Test", () => act(async () => {
      // The stored record with its stored password, which never leaves the server.
      say(`${record.name}: testing…`);
      tested(await call("POST", `/svc/connectors/${encodeURIComponent(record.id)}/test`), record.name);
    }), { test: record.name }, `Test ${record.name}`);
    button("Edit", () => edit(record), { edit: record.name }, `Edit ${record.name}`);
  }
  if (record.kind === "opcua") {
    button("Browse", () => act(() => browse(record)), { browse: record.name }, `Browse the address space of ${record.name}`);
  }
  if (writable) {
    const remove = async () => {
      await call("DELETE", `/svc/${encodeURIComponent(record.id)}`);
      await refresh();
    };
    const question = `Delete the connector “${record.name}”? Its device is no longer read; its tags stay.`;
    const del = confirmCell("Delete", question, remove, fail, { data: { delete: record.name } }).firstElementChild;
    del.setAttribute("aria-label", `Delete ${record.name}`);
    actions.append(del);
  }

  const show = (status) => {
    state.textContent = status.state;
    state.dataset.state = status.state;
    since.textContent = status.since;
    const retry = status.next_retry ? ` (retry ${status.next_retry}, attempt ${status.attempts})` : "";
    const e = status.last_error;
    lastError.textContent = e ? `${e.kind}: ${e.text}${e.status_code ? ` [${e.status_code}]` : ""}${retry}` : "—";
    valuesIn.textContent = String(status.values_in);
    writes.textContent = `${status.writes} / ${status.write_errors}`;
    if (switcher) {
      switcher.textContent = status.state === "disabled" ? "Enable" : "Disable";
      switcher.setAttribute("aria-label", `${switcher.textContent} ${record.name}`);
    }
    device.textContent = status.device ? `Device: ${JSON.stringify(status.device)}` : "";
    pointRows.replaceChildren(
      ...status.points.map((p) => {
        const pr = document.createElement("tr");
        pr.dataset.tag = p.tag;
        const texts = [p.tag, p.quality ?? "no value yet", p.last_value_time ?? "—", p.error ?? ""];
        texts.forEach((text, i) => {
          const td = document.createElement("td");
          td.textContent = text;
          if (i === 1) {
            td.className = "point-quality";
            td.dataset.quality = p.quality ?? "";
          }
          pr.append(td);
        });
        return pr;
      }),
    );
  };
  return { trs: [tr, detail], show };
}
