// A tag's settings — historized, unit, retention, description — read from its record in the
// domain's `tags` table and saved with `PUT` on that record; greyed out without `tags`
// read-write, which is what the API asks for.

import { call } from "../../api.js";
import { may } from "../../rights.js";

/** Fills `form` with the settings of `topic`; `loaded(tag)` runs once the record is read. */
export function tagSettings(form, topic, loaded = () => {}) {
  form.innerHTML = `
    <label class="field"><span>Historized</span><input type="checkbox" name="historize"></label>
    <label class="field"><span>Unit</span><input name="unit" maxlength="32" placeholder="degC"></label>
    <label class="field"><span>Retention</span><input name="retention" placeholder="30d (empty: the server's default)"
      pattern="\\d+(ms|s|m|h|d|w)"></label>
    <label class="field"><span>Description</span><input name="description" maxlength="500"></label>
    <div class="row"><button class="primary" type="submit">Save settings</button><span class="status"></span></div>`;
  const status = form.querySelector(".status");
  const writable = may("tags", "*", "write");
  for (const control of form.elements) control.disabled = true;
  let record = null;
  const params = new URLSearchParams({ "filter[path][eq]": topic });
  call("GET", `/svc/tags/all?${params}`)
    .then(([tag]) => {
      if (!tag) {
        status.textContent = "not a tag of this domain";
        return;
      }
      record = tag;
      form.elements.historize.checked = Boolean(tag.historize);
      for (const name of ["unit", "retention", "description"]) form.elements[name].value = tag[name] ?? "";
      for (const control of form.elements) control.disabled = !writable;
      if (!writable) form.title = "You may read this domain's tags but not change them.";
      loaded(tag);
    })
    .catch((e) => {
      status.textContent = e.message;
    });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = (name) => form.elements[name].value.trim() || null;
    const body = {
      historize: form.elements.historize.checked,
      unit: text("unit"),
      retention: text("retention"),
      description: text("description"),
    };
    try {
      record = await call("PUT", `/svc/${encodeURIComponent(record.id)}`, body);
      status.textContent = "saved";
      loaded(record);
    } catch (e) {
      status.textContent = e.message;
    }
  });
}
