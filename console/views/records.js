// Collections: the domain's tables; for one table its records in a grid (sortable, hideable
// columns, paged) under a filter built from conditions or typed as a raw query, a typed
// record editor, the schema editor, import and export, and the exact curl and `svc` commands
// that return what the grid shows.

import { call } from "../api.js";
import { may } from "../rights.js";
import { errorNotice, pickInAddress } from "../dom.js";
import { filterBuilder } from "./records/builder.js";
import { cliOptions, shellQuote } from "./records/filter.js";
import { columnMenu, columnsOf, drawGrid } from "./records/grid.js";
import { recordEditor } from "./records/editor.js";
import { schemaEditor } from "./records/schema.js";
import { exportRecords, fetchAll, importRecords, parseFile } from "./records/transfer.js";

export const title = "Collections";

const PAGE = 50;

export function render(main, { rest }) {
  const table = rest[0] ? decodeURIComponent(rest[0]) : null;
  main.innerHTML = `
    <h1>Collections</h1>
    <div class="row"><label>Table <select id="table"><option value="">choose…</option></select></label>
      <form id="open" class="row inline"><input name="name" placeholder="or a table by name" aria-label="Table name">
        <button type="submit">Open</button></form>
      <span class="status" id="count"></span></div>
    <p class="notice error" role="alert" hidden></p>
    <div id="work" hidden>
      <section class="filters" id="filters"></section>
      <div class="row">
        <details class="menu" id="columns"><summary>Columns</summary><div class="choices"></div></details>
        <button type="button" id="export-json">Export JSON</button>
        <button type="button" id="export-csv">Export CSV</button>
        <label class="button">Import JSON or CSV <input type="file" id="import" accept=".json,.jsonl,.csv,application/json,text/csv"></label>
        <span class="status" id="transfer"></span>
      </div>
      <table id="records"><thead></thead><tbody></tbody></table>
      <div class="row"><button type="button" id="prev">Previous</button>
        <button type="button" id="next">Next</button><span class="status" id="page"></span></div>
      <h2 id="editor-title">New record</h2>
      <form id="editor" class="editor"></form>
      <details id="schema-panel"><summary>Schema</summary><form id="schema" class="editor"></form></details>
      <h2>API</h2>
      <pre class="notice" id="preview"></pre>
    </div>`;
  const domain = location.hash.split("/")[1];
  const error = main.querySelector(".error");
  const fail = errorNotice(main);
  const select = main.querySelector("#table");
  pickInAddress(select);
  main.querySelector("#open").addEventListener("submit", (event) => {
    event.preventDefault();
    const name = event.target.elements.name.value.trim();
    if (name) location.hash = `#/${domain}/records/${encodeURIComponent(name)}`;
  });
  let collections = call("GET", "/svc/collections/all");
  // Without the right to read schemas, only tables opened by name are listed.
  collections
    .catch((e) => (e.status === 401 ? [] : Promise.reject(e)))
    .then((list) => {
      const names = list.map((c) => c.name);
      if (table && !names.includes(table)) names.push(table);
      for (const name of names.sort()) select.append(new Option(name, name, false, name === table));
    })
    .catch(fail);
  if (!table) return null;

  main.querySelector("#work").hidden = false;
  const writable = may("collections", table, "write");
  const view = { domain, table, offset: 0, sort: null, pairs: [], schema: null, writable, records: [] };
  const tableEl = main.querySelector("#records");
  const queryPairs = () => [...view.pairs, ...(view.sort ? [["sort", `[${view.sort.field}][${view.sort.dir}]`]] : [])];
  const path = () => {
    const params = new URLSearchParams([...queryPairs(), ["limit", String(PAGE)], ["offset", String(view.offset)]]);
    return `/svc/${encodeURIComponent(table)}/all?${params}`;
  };
  const builder = filterBuilder(
    main.querySelector("#filters"),
    (pairs) => {
      view.pairs = pairs;
      view.offset = 0;
      view.reload().catch(fail);
    },
    fail,
  );

  const redraw = () => {
    const columns = columnsOf(view.records, view.schema);
    drawGrid(tableEl, view.records, view, fail);
    columnMenu(main.querySelector("#columns"), columns, { domain, table, changed: redraw });
    builder.knownFields(columns);
  };
  view.reload = async () => {
    error.hidden = true;
    const countParams = new URLSearchParams(view.pairs);
    const [records, count] = await Promise.all([
      call("GET", path()),
      call("GET", `/svc/${encodeURIComponent(table)}/count?${countParams}`),
    ]);
    view.records = records;
    const total = typeof count === "number" ? count : count?.count;
    main.querySelector("#count").textContent = `${total} records`;
    main.querySelector("#page").textContent = records.length
      ? `${view.offset + 1}–${view.offset + records.length} of ${total}`
      : "no records";
    main.querySelector("#prev").disabled = view.offset === 0;
    main.querySelector("#next").disabled = view.offset + records.length >= total;
    redraw();
    main.querySelector("#preview").textContent = preview(domain, table, path(), view);
  };
  view.edit = (record) => openEditor(record);
  const openEditor = (record) => {
    main.querySelector("#editor-title").textContent = record ? `Record ${record.id}` : "New record";
    recordEditor(main.querySelector("#editor"), {
      table,
      schema: view.schema,
      record,
      writable,
      fail,
      saved: () => {
        openEditor(null);
        view.reload().catch(fail);
      },
    });
    if (record) main.querySelector("#editor").scrollIntoView();
  };
  const openSchema = () =>
    schemaEditor(main.querySelector("#schema"), {
      table,
      domain,
      schema: view.schema,
      writable: may("collections", "collections", "write"),
      fail,
      changed: () => {
        collections = call("GET", "/svc/collections/all");
        load().catch(fail);
      },
    });

  const page = (delta) => () => {
    view.offset = Math.max(0, view.offset + delta);
    view.reload().catch(fail);
  };
  main.querySelector("#prev").addEventListener("click", page(-PAGE));
  main.querySelector("#next").addEventListener("click", page(PAGE));
  const transfer = main.querySelector("#transfer");
  for (const format of ["json", "csv"]) {
    main.querySelector(`#export-${format}`).addEventListener("click", async () => {
      try {
        transfer.textContent = "exporting…";
        const records = await fetchAll(table, queryPairs());
        exportRecords(table, records, format);
        transfer.textContent = `exported ${records.length} records`;
      } catch (e) {
        fail(e);
      }
    });
  }
  const importInput = main.querySelector("#import");
  importInput.disabled = !writable;
  importInput.addEventListener("change", async () => {
    const [file] = importInput.files;
    if (!file) return;
    try {
      const records = parseFile(file.name, await file.text());
      const done = await importRecords(table, records, (n, total) => {
        transfer.textContent = `importing ${n} of ${total}…`;
      });
      const refused = done.refused.slice(0, 3).map((r) => `row ${r.row}: ${r.message}`);
      transfer.textContent = `imported ${done.created} of ${records.length}` +
        (done.refused.length ? `; refused ${done.refused.length} (${refused.join("; ")})` : "");
      importInput.value = "";
      await view.reload();
    } catch (e) {
      fail(e);
    }
  });

  const load = async () => {
    // Reading the records does not need the right to read schemas: without it the table is
    // shown as schemaless.
    const list = await collections.catch(() => []);
    view.schema = list.find((c) => c.name === table) ?? null;
    openEditor(null);
    openSchema();
    await view.reload();
  };
  load().catch(fail);
  return null;
}

/** The curl and `svc` commands that fetch exactly what the grid shows. */
function preview(domain, table, path, view) {
  const curl = `curl -s '${location.origin}${path}' \\\n  -H "Authorization: Bearer $TOKEN" -H 'Domain: domains:${domain}'`;
  const options = cliOptions(view.pairs);
  if (!options) return `${curl}\n\n# the raw query has parts that svc records list cannot send`;
  const sort = view.sort ? ["--sort", `${view.sort.field}:${view.sort.dir}`] : [];
  const cli = ["svc", "--domain", domain, "records", "list", shellQuote(table), ...options, ...sort,
    "--limit", String(PAGE), ...(view.offset ? ["--offset", String(view.offset)] : [])];
  return `${curl}\n\n${cli.join(" ")}`;
}
