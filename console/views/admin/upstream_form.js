// The form of an upstream (Administration → Upstreams): create one, or edit a stored one by
// sending only what the form says (an update keeps what it does not mention). The password is
// write-only: never shown, sent only when typed (or cleared on purpose). Bindings are one per
// line, `<in|out|both> <local> <remote or -> [filter]`. A group, node and branch make the
// upstream a Sparkplug B edge node publishing that branch; clearing all three turns it off.

import { wireRecordForm } from "./record_form.js";

const FIELDS = `
  <div class="row">
    <label>Name <input name="name" required maxlength="128" placeholder="corp"></label>
    <label>Protocol <select name="protocol">
      <option>mqtt</option><option>mqtts</option><option>ws</option><option>wss</option></select></label>
    <label>Host <input name="host" required placeholder="broker.example.com"></label>
    <label>Port <input name="port" type="number" min="1" max="65535" placeholder="default"></label>
    <label><input name="enabled" type="checkbox" checked> Connected</label>
  </div>
  <div class="row">
    <label>Username <input name="username" autocomplete="off"></label>
    <label>Password <input name="password" type="password" autocomplete="new-password"></label>
    <label class="clear-password" hidden><input name="clear" type="checkbox"> Clear the password</label>
    <label>Description <input name="description" maxlength="256"></label>
  </div>
  <label class="bindings">Bindings, one a line: in|out|both, local topic, remote topic (or -), filter
    <textarea name="bindings" rows="3" cols="70" placeholder="both acme/site1 corp/acme/site1"></textarea></label>
  <fieldset class="row sparkplug-edge"><legend>Sparkplug B edge node (optional)</legend>
    <label>Group <input name="spb_group" placeholder="PlantA"></label>
    <label>Edge node <input name="spb_node" placeholder="svc-site1"></label>
    <label>Branch <input name="spb_branch" placeholder="acme/site1"></label>
  </fieldset>
  <div class="row">
    <button class="primary" type="submit">Save upstream</button>
    <button type="button" class="test">Test without saving</button>
    <button type="button" class="cancel" hidden>Cancel editing</button>
  </div>`;

/**
 * Fills `form` with the upstream fields; `saved()` runs after a save, `tested(probe)` after a
 * test, `fail(e)` on a refusal. Returns `edit(record)` (null: a new upstream).
 */
export function upstreamForm(form, { writable, saved, tested, fail }) {
  form.innerHTML = FIELDS;
  const el = form.elements;
  const heading = document.createElement("h3");
  form.prepend(heading);
  let editing = null;

  const edit = (record) => {
    editing = record;
    form.reset();
    heading.textContent = record ? `Edit “${record.name}”` : "New upstream";
    form.querySelector(".cancel").hidden = !record;
    form.querySelector(".clear-password").hidden = !record?.password_set;
    el.password.placeholder = record?.password_set ? "set; type to replace" : "";
    form.dataset.editing = record ? record.name : "";
    if (!record) return;
    for (const name of ["name", "protocol", "host", "port", "username", "description"]) {
      el[name].value = record[name] ?? "";
    }
    el.enabled.checked = record.enabled;
    el.spb_group.value = record.sparkplug?.group ?? "";
    el.spb_node.value = record.sparkplug?.node ?? "";
    el.spb_branch.value = record.sparkplug?.branch ?? "";
    el.bindings.value = (record.bindings ?? [])
      .map((b) => [b.direction, b.local, b.remote || "-", b.filter === "#" ? "" : b.filter].join(" ").trim())
      .join("\n");
    form.scrollIntoView({ block: "nearest" });
  };

  /** The record the form describes. */
  const body = () => {
    const fields = {
      name: el.name.value.trim(),
      protocol: el.protocol.value,
      host: el.host.value.trim(),
      enabled: el.enabled.checked,
      bindings: bindings(el.bindings.value),
    };
    // Empty means "the default" (null on an update, where leaving it out would keep the old).
    for (const name of ["port", "username", "description"]) {
      const value = name === "port" ? (el.port.value ? Number(el.port.value) : null) : el[name].value.trim() || null;
      if (value !== null || editing) fields[name] = value;
    }
    const sparkplug = { group: el.spb_group.value.trim(), node: el.spb_node.value.trim(), branch: el.spb_branch.value.trim() };
    if (sparkplug.group || sparkplug.node || sparkplug.branch) fields.sparkplug = sparkplug;
    else if (editing?.sparkplug) fields.sparkplug = false; // null would keep the stored role
    if (el.password.value) fields.password = el.password.value;
    else if (el.clear.checked) fields.password = "";
    return fields;
  };

  wireRecordForm(form, {
    table: "upstreams",
    body,
    editing: () => editing,
    edit,
    saved,
    tested,
    nameOf: () => el.name.value,
    fail,
  });
  for (const control of el) control.disabled = !writable;
  edit(null);
  return edit;
}

/** The bindings of the textarea's lines; a malformed one is left for the API to name. */
function bindings(text) {
  return text
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter((words) => words[0])
    .map(([direction, local, remote, filter]) => {
      const binding = { direction, local: local ?? "" };
      if (remote && remote !== "-") binding.remote = remote;
      if (filter) binding.filter = filter;
      return binding;
    });
}
