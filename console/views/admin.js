// Administration: a shell whose sections — users, groups, domains, upstreams, connectors —
// live at `#/<domain>/admin/<section>`, each in its own module under `views/admin/`. What a
// section offers follows the user's rights; the API decides, and a refusal shows its sentence.

import { call } from "../api.js";
import * as users from "./admin/users.js";
import * as groups from "./admin/groups.js";
import * as domains from "./admin/domains.js";
import * as upstreams from "./admin/upstreams.js";
import * as connectors from "./admin/connectors.js";

export const title = "Administration";

/** Sections by address name, in the order of the tabs. */
const SECTIONS = { users, groups, domains, upstreams, connectors };

export function render(main, { rest }) {
  const name = SECTIONS[rest[0]] ? rest[0] : "users";
  const base = location.hash.split("/").slice(0, 3).join("/");
  main.innerHTML = `
    <h1>Administration</h1>
    <nav class="admin-tabs" aria-label="Administration sections"></nav>
    <section class="admin-section"></section>`;
  main.querySelector(".admin-tabs").replaceChildren(
    ...Object.entries(SECTIONS).map(([key, module]) => {
      const link = document.createElement("a");
      link.href = `${base}/${key}`;
      link.textContent = module.title;
      link.dataset.section = key;
      if (key === name) link.setAttribute("aria-current", "page");
      return link;
    }),
  );
  const section = main.querySelector(".admin-section");
  let cleanup = null;
  let gone = false;
  // Who the user is decides what the sections offer (administrators create administrators
  // and domains); asked afresh so that a change of rights shows on the next visit.
  call("GET", "/auth/me")
    .then((me) => {
      if (!gone) cleanup = SECTIONS[name].render(section, { me }) ?? null;
    })
    .catch((e) => {
      section.innerHTML = `<p class="notice error" role="alert"></p>`;
      section.firstElementChild.textContent = e.message;
    });
  return () => {
    gone = true;
    if (cleanup) cleanup();
  };
}
