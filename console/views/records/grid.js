// The records grid: one column per field seen (schema fields first, the server's timestamps
// last), sortable by a click on the header, columns hidden and shown from a menu (remembered
// per table in this browser), file fields as download buttons, and per row Edit and Delete.

import { call, download } from "../../api.js";
import { confirmCell } from "../../dom.js";

const SYSTEM_FIELDS = ["created_dt", "updated_dt"];

function hiddenKey(domain, table) {
  return `svc.hidden.${domain}.${table}`;
}

/** The columns the user hid for this table. */
export function hiddenColumns(domain, table) {
  try {
    return new Set(JSON.parse(localStorage.getItem(hiddenKey(domain, table)) ?? "[]"));
  } catch {
    return new Set();
  }
}

/** Every column: `id`, schema fields, other fields in order of appearance, timestamps. */
export function columnsOf(records, schema) {
  const fields = new Set(["id", ...(schema?.fields ?? []).map((f) => f.name)]);
  for (const record of records) for (const key of Object.keys(record)) fields.add(key);
  return [...fields].filter((f) => !SYSTEM_FIELDS.includes(f)).concat(SYSTEM_FIELDS);
}

/** The "Columns" menu: a checkbox per column; `changed()` after a column is hidden or shown. */
export function columnMenu(menu, columns, { domain, table, changed }) {
  const hidden = hiddenColumns(domain, table);
  const list = menu.querySelector(".choices");
  list.replaceChildren(
    ...columns.map((column) => {
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = !hidden.has(column);
      box.dataset.column = column;
      box.addEventListener("change", () => {
        if (box.checked) hidden.delete(column);
        else hidden.add(column);
        localStorage.setItem(hiddenKey(domain, table), JSON.stringify([...hidden]));
        changed();
      });
      label.append(box, ` ${column}`);
      return label;
    }),
  );
}

function fileButtons(record, field, fail) {
  const td = document.createElement("td");
  for (const name of [record[field]].flat().filter((n) => typeof n === "string" && n)) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "file";
    button.textContent = name;
    button.title = `Download ${name}`;
    const path = `/svc/file/${encodeURIComponent(record.id)}/${encodeURIComponent(field)}/${encodeURIComponent(name)}`;
    button.addEventListener("click", () => download(path, name).catch(fail));
    td.append(button);
  }
  return td;
}

/**
 * Draws `records` into `table`'s head and body; `view` holds the sort, the schema, whether
 * the user may write, and `edit(record)` / `reload()`.
 */
export function drawGrid(table, records, view, fail) {
  const hidden = hiddenColumns(view.domain, view.table);
  const columns = columnsOf(records, view.schema).filter((c) => !hidden.has(c));
  const fileFields = new Set((view.schema?.fields ?? []).filter((f) => f.type === "file").map((f) => f.name));
  const headRow = document.createElement("tr");
  headRow.append(
    ...columns.map((field) => {
      const th = document.createElement("th");
      th.dataset.column = field;
      const button = document.createElement("button");
      button.type = "button";
      const dir = view.sort?.field === field ? view.sort.dir : null;
      button.textContent = field + (dir === "asc" ? " ▲" : dir === "desc" ? " ▼" : "");
      button.addEventListener("click", () => {
        view.sort = { field, dir: dir === "asc" ? "desc" : "asc" };
        view.offset = 0;
        view.reload().catch(fail);
      });
      th.append(button);
      return th;
    }),
    document.createElement("th"),
    document.createElement("th"),
  );
  table.tHead.replaceChildren(headRow);
  table.tBodies[0].replaceChildren(
    ...records.map((record) => {
      const tr = document.createElement("tr");
      tr.dataset.id = record.id;
      for (const field of columns) {
        if (fileFields.has(field)) {
          tr.append(fileButtons(record, field, fail));
          continue;
        }
        const td = document.createElement("td");
        const value = record[field];
        td.textContent = value === undefined ? "" : typeof value === "string" ? value : JSON.stringify(value);
        tr.append(td);
      }
      const edit = document.createElement("button");
      edit.type = "button";
      edit.textContent = view.writable ? "Edit" : "View";
      edit.addEventListener("click", () => view.edit(record));
      const td = document.createElement("td");
      td.append(edit);
      const remove = async () => {
        await call("DELETE", `/svc/${encodeURIComponent(record.id)}`);
        await view.reload();
      };
      tr.append(td, confirmCell("Delete", `Delete ${record.id}?`, remove, fail, { disabled: !view.writable }));
      return tr;
    }),
  );
  return columns;
}
