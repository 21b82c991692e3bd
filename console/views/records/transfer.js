// Import and export of a table's records in the formats `svc records import/export` use:
// JSON (an array, or one object per line) and typed CSV. Export takes every record the current
// filter and sort select, page by page; import creates each record through the API, a few at
// a time, and reports what it refused and why.

import { call, saveAs } from "../../api.js";
import { formatRecords, parseRecords } from "../../csv.js";

/** The largest page the server hands out. */
const PAGE = 10000;
const PARALLEL = 4;

/** Every record `GET /svc/<table>/all` returns for `pairs` (filters and sort), all pages. */
export async function fetchAll(table, pairs) {
  const records = [];
  for (let offset = 0; ; offset += PAGE) {
    const params = new URLSearchParams([...pairs, ["limit", String(PAGE)], ["offset", String(offset)]]);
    const page = await call("GET", `/svc/${encodeURIComponent(table)}/all?${params}`);
    records.push(...page);
    if (page.length < PAGE) return records;
  }
}

/** Saves the records as `<table>.json` or `<table>.csv`. */
export function exportRecords(table, records, format) {
  if (format === "csv") {
    saveAs(new Blob([formatRecords(records)], { type: "text/csv" }), `${table}.csv`);
  } else {
    saveAs(new Blob([JSON.stringify(records, null, 2) + "\n"], { type: "application/json" }), `${table}.json`);
  }
}

/** A file's records: typed CSV by its name, else a JSON array or JSON lines. */
export function parseFile(name, text) {
  if (/\.csv$/i.test(name)) return parseRecords(text);
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) {
    const records = JSON.parse(trimmed);
    if (!Array.isArray(records)) throw new Error("the file is not a JSON array");
    return records;
  }
  return trimmed
    .split("\n")
    .filter((line) => line.trim())
    .map((line, n) => {
      try {
        return JSON.parse(line);
      } catch {
        throw new Error(`line ${n + 1} is not JSON`);
      }
    });
}

/**
 * A record as it is sent again, as `svc records import` sends it: the server's timestamps
 * dropped and a full RecordID reduced to its key, so records move between tables and domains.
 */
export function prepare(record) {
  const { created_dt: _created, updated_dt: _updated, ...fields } = record;
  if (typeof fields.id === "string" && fields.id.includes(":")) fields.id = fields.id.slice(fields.id.lastIndexOf(":") + 1);
  return fields;
}

/**
 * Creates each record in `table`; `progress(done, total)` as it goes. Resolves to
 * `{ created, refused: [{ row, message }] }`.
 */
export async function importRecords(table, records, progress) {
  const refused = [];
  let created = 0;
  let next = 0;
  const worker = async () => {
    while (next < records.length) {
      const row = next++;
      const record = records[row];
      try {
        if (typeof record !== "object" || record === null || Array.isArray(record)) {
          throw new Error("not a JSON object");
        }
        await call("POST", `/svc/${encodeURIComponent(table)}`, prepare(record));
        created += 1;
      } catch (e) {
        refused.push({ row: row + 1, message: e.message });
      }
      progress(created + refused.length, records.length);
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  refused.sort((a, b) => a.row - b.row);
  return { created, refused };
}
