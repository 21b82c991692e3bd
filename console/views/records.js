// Collections: the domain's tables, a grid of a table's records (sortable by any column,
// paged), a JSON editor to create one, delete, and the exact curl command of the view.

import { call } from "../api.js";
import { may } from "../rights.js";
import { confirmCell, errorNotice, pickInAddress } from "../dom.js";

export const title = "Collections";

const PAGE = 50;
const SYSTEM_FIELDS = ["created_dt", "updated_dt"];

export function render(main, { rest }) {
  const table = rest[0] ? decodeURIComponent(rest[0]) : null;
  main.innerHTML = `
    <h1>Collections</h1>
    <div class="row"><label>Table <select id="table"><option value="">choose…</option></select></label>
      <span class="status" id="count"></span></div>
    <div id="grid" hidden>
      <table><thead><tr id="head"></tr></thead><tbody id="rows"></tbody></table>
      <div class="row"><button type="button" id="prev">Previous</button>
        <button type="button" id="next">Next</button><span class="status" id="page"></span></div>
      <h2>New record</h2>
      <form id="create" class="row">
        <textarea name="record" rows="4" cols="60" aria-label="New record as JSON">{}</textarea>
        <button class="primary" type="submit">Create</button>
      </form>
      <h2>API</h2>
      <pre class="notice" id="preview"></pre>
    </div>
    <p class="notice error" role="alert" hidden></p>`;
  const error = main.querySelector(".error");
  const fail = errorNotice(main);

  const select = main.querySelector("#table");
  call("GET", "/svc/collections/all")
    .then((collections) => {
      for (const { name } of collections) select.append(new Option(name, name, false, name === table));
      if (table && !collections.some((c) => c.name === table)) select.append(new Option(table, table, false, true));
    })
    .catch(fail);
  pickInAddress(select);
  if (!table) return null;

  const writable = may("collections", table, "write");
  if (!writable) {
    for (const control of main.querySelector("#create").elements) control.disabled = true;
  }
  const view = { offset: 0, sort: null, writable };
  const grid = main.querySelector("#grid");
  grid.hidden = false;
  const query = () => {
    const params = new URLSearchParams({ limit: String(PAGE), offset: String(view.offset) });
    if (view.sort) params.set("sort", `[${view.sort.field}][${view.sort.dir}]`);
    return params.toString();
  };
  const path = () => `/svc/${encodeURIComponent(table)}/all?${query()}`;
  const load = async () => {
    error.hidden = true;
    const [records, count] = await Promise.all([
      call("GET", path()),
      call("GET", `/svc/${encodeURIComponent(table)}/count`),
    ]);
    const total = typeof count === "number" ? count : count?.count;
    main.querySelector("#count").textContent = `${total} records`;
    main.querySelector("#page").textContent = records.length
      ? `${view.offset + 1}–${view.offset + records.length} of ${total}`
      : "no records";
    main.querySelector("#prev").disabled = view.offset === 0;
    main.querySelector("#next").disabled = view.offset + records.length >= total;
    drawGrid(main, records, view, load, fail);
    main.querySelector("#preview").textContent =
      `curl -s '${location.origin}${path()}' \\\n  -H "Authorization: Bearer $TOKEN" -H 'Domain: domains:${location.hash.split("/")[1]}'`;
  };
  main.querySelector("#prev").addEventListener("click", () => {
    view.offset = Math.max(0, view.offset - PAGE);
    load().catch(fail);
  });
  main.querySelector("#next").addEventListener("click", () => {
    view.offset += PAGE;
    load().catch(fail);
  });
  main.querySelector("#create").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const record = JSON.parse(event.target.elements.record.value);
      await call("POST", `/svc/${encodeURIComponent(table)}`, record);
      event.target.elements.record.value = "{}";
      await load();
    } catch (e) {
      fail(e);
    }
  });
  load().catch(fail);
  return null;
}

function drawGrid(main, records, view, reload, fail) {
  const fields = new Set(["id"]);
  for (const record of records) for (const key of Object.keys(record)) fields.add(key);
  const columns = [...fields].filter((f) => !SYSTEM_FIELDS.includes(f)).concat(SYSTEM_FIELDS);
  main.querySelector("#head").replaceChildren(
    ...columns.map((field) => {
      const th = document.createElement("th");
      const button = document.createElement("button");
      button.type = "button";
      const dir = view.sort?.field === field ? view.sort.dir : null;
      button.textContent = field + (dir === "asc" ? " ▲" : dir === "desc" ? " ▼" : "");
      button.addEventListener("click", () => {
        view.sort = { field, dir: dir === "asc" ? "desc" : "asc" };
        view.offset = 0;
        reload().catch(fail);
      });
      th.append(button);
      return th;
    }),
    document.createElement("th"),
  );
  main.querySelector("#rows").replaceChildren(
    ...records.map((record) => {
      const tr = document.createElement("tr");
      tr.dataset.id = record.id;
      for (const field of columns) {
        const td = document.createElement("td");
        const value = record[field];
        td.textContent = value === undefined ? "" : typeof value === "string" ? value : JSON.stringify(value);
        tr.append(td);
      }
      const remove = async () => {
        await call("DELETE", `/svc/${encodeURIComponent(record.id)}`);
        await reload();
      };
      tr.append(confirmCell("Delete", `Delete ${record.id}?`, remove, fail, { disabled: !view.writable }));
      return tr;
    }),
  );
}
