// What the record forms of Administration (upstreams, connectors) do alike with their buttons:
// save (create, or update the record being edited), test what the form says, cancel editing.

import { call } from "../../api.js";

/**
 * Wires `form`'s submit, `.test` and `.cancel` for records of `table`: `body()` is what the
 * form says, `editing()` the record being edited (or null), `edit(null)` leaves editing,
 * `saved()` runs after a save, `tested(result, name)` shows a test's answer under the name
 * `nameOf(fields)`, and `fail(e)` shows a refusal.
 */
export function wireRecordForm(form, { table, body, editing, edit, saved, tested, nameOf, fail }) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const record = editing();
      if (record) await call("PUT", `/svc/${encodeURIComponent(record.id)}`, body());
      else await call("POST", `/svc/${table}`, body());
      edit(null);
      await saved();
    } catch (e) {
      fail(e);
    }
  });
  form.querySelector(".test").addEventListener("click", async () => {
    try {
      const fields = body();
      tested(await call("POST", `/svc/${table}/test`, fields), nameOf(fields));
    } catch (e) {
      fail(e);
    }
  });
  form.querySelector(".cancel").addEventListener("click", () => edit(null));
}
