// Account → Developer Keys: create a key (its secret shown once), list, revoke.

import { call } from "../api.js";
import { confirmCell, errorNotice, textRow } from "../dom.js";

export const title = "Developer keys";

export function render(main) {
  main.innerHTML = `
    <h1>Developer keys</h1>
    <p class="muted">An API key acts as you for scripts and devices: send it as
      <code>X-Svc-Api-Key</code> over HTTP, or as the MQTT password. A key is made in the
      domain chosen above: topics it publishes first, if no domain owns them, become its tags.</p>
    <form class="row" id="create">
      <label>Name <input name="name" required maxlength="64" placeholder="line1-gateway"></label>
      <button class="primary" type="submit">Create key</button>
    </form>
    <div id="created" hidden>
      <p class="notice"><strong>Copy this key now: it will not be shown again.</strong></p>
      <div class="secret"><code id="secret"></code><button type="button" id="copy">Copy</button></div>
    </div>
    <p class="notice error" role="alert" hidden></p>
    <table>
      <thead><tr><th>Name</th><th>Prefix</th><th>Created</th><th>Last used</th><th>Domain</th><th></th></tr></thead>
      <tbody id="keys"></tbody>
    </table>`;
  const error = main.querySelector(".error");
  const fail = errorNotice(main);

  const list = async () => {
    const keys = await call("GET", "/auth/keys");
    main.querySelector("#keys").replaceChildren(...keys.map((key) => row(key, list, fail)));
  };
  main.querySelector("#create").addEventListener("submit", async (event) => {
    event.preventDefault();
    error.hidden = true;
    const form = event.target;
    try {
      const created = await call("POST", "/auth/keys", { name: form.elements.name.value });
      main.querySelector("#secret").textContent = created.key;
      main.querySelector("#created").hidden = false;
      form.reset();
      await list();
    } catch (e) {
      fail(e);
    }
  });
  main.querySelector("#copy").addEventListener("click", async (event) => {
    await navigator.clipboard?.writeText(main.querySelector("#secret").textContent);
    event.target.textContent = "Copied";
  });
  list().catch(fail);
  return null;
}

function row(key, refresh, fail) {
  const domain = key.domain?.replace(/^domains:/, "") ?? "svc_admin";
  const tr = textRow([key.name, key.prefix, key.created_dt, key.last_used_dt ?? "never", domain]);
  const revoke = async () => {
    await call("DELETE", `/auth/keys/${encodeURIComponent(key.id)}`);
    await refresh();
  };
  const question = `Revoke the key “${key.name}”? Devices using it lose access at once.`;
  tr.append(confirmCell("Revoke", question, revoke, fail, { data: { key: key.id } }));
  return tr;
}
