// Administration → Domains: every domain with its id and creation time, and a form to create
// one. Both are administrators' work; anyone else sees the server's refusal.

import { call } from "../../api.js";
import { errorNotice, textRow } from "../../dom.js";

export const title = "Domains";

export function render(section, { me }) {
  section.innerHTML = `
    <h2>Domains</h2>
    <form class="row" id="create-domain">
      <label>Name <input name="name" required maxlength="63" pattern="[a-z][a-z0-9_]{0,62}"
        placeholder="acme" title="a lowercase letter, then lowercase letters, digits or _"></label>
      <button class="primary" type="submit">Create domain</button>
    </form>
    <p class="muted" id="domains-why" hidden></p>
    <p class="notice" id="domain-created" hidden></p>
    <p class="notice error" role="alert" hidden></p>
    <table>
      <thead><tr><th>Name</th><th>Id</th><th>Created</th></tr></thead>
      <tbody id="domains"></tbody>
    </table>`;
  const error = section.querySelector(".error");
  const fail = errorNotice(section);
  const form = section.querySelector("#create-domain");
  if (!me.admin) {
    for (const control of form.elements) control.disabled = true;
    const why = section.querySelector("#domains-why");
    why.textContent = "Only an administrator lists and creates domains.";
    why.hidden = false;
  }

  const list = async () => {
    const domains = await call("GET", "/auth/domains");
    domains.sort((a, b) => a.name.localeCompare(b.name));
    section.querySelector("#domains").replaceChildren(
      ...domains.map((d) => {
        const tr = textRow([d.name, d.id, d.created_dt]);
        tr.dataset.domain = d.name;
        return tr;
      }),
    );
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.hidden = true;
    try {
      const created = await call("POST", "/auth/domains", { name: form.elements.name.value });
      form.reset();
      // The domain switcher reads the domains when the console loads.
      const done = section.querySelector("#domain-created");
      done.textContent = `Domain “${created.name}” created; reload the console to switch to it.`;
      done.hidden = false;
      await list();
    } catch (e) {
      fail(e);
    }
  });
  list().catch(fail);
  return null;
}
