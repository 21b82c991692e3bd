// The console's shell: who is logged in, which domain and view the address names
// (`#/<domain>/<view>`, so a link carries its domain), the header, and the views. The header's
// Alarms link carries the count of alarms waiting for acknowledgement, on every page.

import * as alarmFeed from "./alarm_feed.js";
import { call, onExpired, session } from "./api.js";
import * as rights from "./rights.js";
import * as login from "./views/login.js";
import * as admin from "./views/admin.js";
import * as alarms from "./views/alarms.js";
import * as flows from "./views/flows.js";
import * as functions from "./views/functions.js";
import * as keys from "./views/keys.js";
import * as records from "./views/records.js";
import * as system from "./views/system.js";
import * as tag from "./views/tag.js";
import * as tags from "./views/tags.js";

/** Views by address name, in the order of the navigation (those with a title). */
const VIEWS = { tags, alarms, records, functions, flows, keys, admin, system, tag };

const main = document.getElementById("view");
let cleanup = null;
let domains = [];
let reason = "";

/** `#/<domain>/<view>/<rest…>`. */
function address() {
  const [, domain, view, ...rest] = location.hash.split("/");
  return { domain, view, rest };
}

/** The domains the user works in: every domain for an administrator, else their groups'. */
async function loadDomains() {
  const me = await call("GET", "/auth/me");
  if (me.admin) return (await call("GET", "/auth/domains")).map((d) => d.name);
  const names = me.group_ids.map((id) => id.split(".")[0]);
  return [...new Set(names)].sort();
}

async function route() {
  if (cleanup) cleanup();
  cleanup = null;
  if (!session.token) {
    document.getElementById("bar").hidden = true;
    cleanup = login.render(main, { reason, done: loggedIn });
    main.dataset.route = location.hash;
    return;
  }
  try {
    if (!domains.length) domains = await loadDomains();
  } catch (e) {
    return logout(e.message);
  }
  let { domain, view, rest } = address();
  if (!domains.includes(domain)) domain = domains[0] ?? "";
  if (!VIEWS[view]) view = "tags";
  const wanted = [`#/${domain}/${view}`, ...rest].join("/");
  if (location.hash !== wanted) {
    location.replace(wanted);
    return;
  }
  if (session.domain !== domain) {
    session.domain = domain;
    try {
      await rights.load();
    } catch (e) {
      return logout(e.message);
    }
  }
  alarmFeed.start(domain);
  showBar(domain, view);
  main.replaceChildren();
  cleanup = VIEWS[view].render(main, { rest }) ?? null;
  // Which address the shown view belongs to: until it matches the address bar, the
  // page still shows the previous view (a domain change loads its rights first).
  main.dataset.route = location.hash;
  main.focus();
}

function showBar(domain, view) {
  document.getElementById("bar").hidden = false;
  const nav = document.getElementById("nav");
  nav.replaceChildren(
    ...Object.entries(VIEWS)
      .filter(([, module]) => module.title)
      .map(([name, module]) => {
      const link = document.createElement("a");
      link.href = `#/${domain}/${name}`;
      link.textContent = module.title;
      if (name === view) link.setAttribute("aria-current", "page");
      if (name === "alarms") {
        const badge = document.createElement("span");
        badge.id = "alarm-badge";
        badge.className = "badge";
        badge.hidden = true;
        link.append(badge);
      }
      return link;
    }),
  );
  paintBadge(alarmFeed.unacknowledgedNow());
  const select = document.getElementById("domain");
  select.replaceChildren(
    ...domains.map((name) => {
      const option = new Option(name, name, false, name === domain);
      return option;
    }),
  );
}

/** Shows how many alarms wait for acknowledgement beside the Alarms link (none: no badge). */
function paintBadge(count) {
  const badge = document.getElementById("alarm-badge");
  if (!badge) return;
  badge.textContent = String(count);
  badge.title = `${count} alarm${count === 1 ? "" : "s"} waiting for acknowledgement`;
  badge.hidden = count === 0;
}

function loggedIn(token) {
  session.token = token;
  reason = "";
  domains = [];
  route();
}

function logout(why = "") {
  alarmFeed.stop();
  session.token = null;
  session.domain = null;
  domains = [];
  reason = why;
  route();
}

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  localStorage.setItem("svc.theme", theme);
}

document.getElementById("domain").addEventListener("change", (e) => {
  location.hash = `#/${e.target.value}/${address().view || "tags"}`;
});
document.getElementById("logout").addEventListener("click", () => logout());
document.getElementById("theme").addEventListener("click", () => {
  applyTheme(document.documentElement.dataset.theme === "dark" ? "light" : "dark");
});
onExpired((why) => logout(why));
alarmFeed.subscribe(({ unacknowledged }) => paintBadge(unacknowledged));
window.addEventListener("hashchange", route);
applyTheme(
  localStorage.getItem("svc.theme") ??
    (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"),
);
route();
