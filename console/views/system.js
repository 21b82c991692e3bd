// System: what `GET /svc/` says of this server — device, version, listeners, storage, and
// whether Python processes run here and inside which fences — and the MQTT clients connected
// right now (`GET /svc/broker/clients`, every 2 s while the page is open).

import { call } from "../api.js";
import { errorNotice, textRow } from "../dom.js";
import { may } from "../rights.js";

/** How often the list of connected clients is read again. */
const CLIENTS_EVERY_MS = 2000;

export const title = "System";

export function render(main) {
  main.innerHTML = `
    <h1>System</h1>
    <p class="notice error" role="alert" hidden></p>
    <dl class="facts" id="device"></dl>
    <h2>Listeners</h2>
    <table><thead><tr><th>Listener</th><th>Address</th><th>State</th></tr></thead><tbody id="listeners"></tbody></table>
    <h2>Python processes</h2>
    <dl class="facts" id="python"></dl>
    <h2>Connected MQTT clients <span class="muted" id="client-count"></span></h2>
    <p class="notice error" role="alert" id="clients-error" hidden></p>
    <div id="clients-scroll">
      <table>
        <thead><tr><th>Client</th><th>User</th><th>Domains</th><th>Protocol</th><th>Transport</th>
          <th>Address</th><th>Connected since</th><th>Keep-alive</th><th>Session</th>
          <th>Subscriptions</th><th>In</th><th>Out</th></tr></thead>
        <tbody id="clients"></tbody>
      </table>
    </div>`;
  // Twelve columns may not fit a narrow window: the table scrolls, not the page. (Style
  // properties set from script: the CSP allows no style attribute.)
  main.querySelector("#clients-scroll").style.overflowX = "auto";
  for (const th of [...main.querySelectorAll("#clients-scroll th")].slice(9)) {
    th.style.textAlign = "right";
  }
  const facts = (dl, pairs) =>
    main.querySelector(dl).replaceChildren(
      ...pairs.flatMap(([name, value]) => {
        const dt = document.createElement("dt");
        dt.textContent = name;
        const dd = document.createElement("dd");
        dd.textContent = value;
        dd.dataset.fact = name;
        return [dt, dd];
      }),
    );
  call("GET", "/svc/")
    .then((info) => {
      facts("#device", [
        ["Device", info.device_name],
        ["Version", info.version],
        ["Storage", storagePlace(info.storage)],
        ["Size", `${(info.storage.size_bytes / 1048576).toFixed(1)} MiB`],
      ]);
      main.querySelector("#listeners").replaceChildren(
        ...Object.entries(info.uns.bind).map(([name, bind]) =>
          textRow([name, `${bind.host}:${bind.port}`, bind.enabled ? "listening" : "off"]),
        ),
      );
      const python = info.python ?? { available: false, reason: "not reported" };
      facts("#python", [
        ["Available", python.available ? `yes, Python ${python.version} (${python.interpreter})` : "no"],
        ...(python.reason ? [["Why not", python.reason]] : []),
        ["Fences", (python.sandbox ?? []).join(", ") || "—"],
        ["Missing", (python.missing ?? []).join(", ") || "none"],
      ]);
    })
    .catch(errorNotice(main));
  return clients(main);
}

/**
 * Keeps the table of connected clients current; returns the cleanup that stops it. Without the
 * right to see the domain's users (which the API asks for) it says so instead of asking.
 */
function clients(main) {
  const body = main.querySelector("#clients");
  const count = main.querySelector("#client-count");
  const error = main.querySelector("#clients-error");
  if (!may("users", "*")) {
    body.replaceChildren(
      note("Seeing who is connected needs the right to read this domain's users."),
    );
    return null;
  }
  let busy = false;
  const refresh = async () => {
    // A slow answer is not asked for again before it arrives.
    if (busy) return;
    busy = true;
    try {
      const list = await call("GET", "/svc/broker/clients");
      count.textContent = `(${list.length})`;
      body.replaceChildren(...(list.length ? list.map(clientRow) : [note("No client is connected.")]));
      error.hidden = true;
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
    } finally {
      busy = false;
    }
  };
  refresh();
  const timer = setInterval(refresh, CLIENTS_EVERY_MS);
  return () => clearInterval(timer);
}

function clientRow(client) {
  const since = new Date(client.connected_since);
  const session = client.session_expiry_secs
    ? `kept ${duration(client.session_expiry_secs)}`
    : "ends with the connection";
  const who = client.username ?? client.user ?? "anonymous";
  const tr = textRow([
    client.client_id,
    client.api_key ? `${who} (API key)` : who,
    client.admin ? "all (administrator)" : client.domains.join(", ") || "—",
    `MQTT ${client.protocol}`,
    client.transport,
    client.address,
    since.toLocaleString(),
    client.keep_alive_secs ? duration(client.keep_alive_secs) : "none",
    `${client.clean_start ? "clean start" : "continues its session"}, ${session}`,
    String(client.subscriptions),
    String(client.messages_in),
    String(client.messages_out),
  ]);
  tr.cells[6].title = client.connected_since;
  tr.cells[4].title = `listener ${client.listener}`;
  // Counts line up on the right; ids, addresses and times stay on one line.
  for (const cell of [...tr.cells].slice(9)) cell.style.textAlign = "right";
  for (const i of [0, 3, 5, 6]) tr.cells[i].style.whiteSpace = "nowrap";
  tr.dataset.client = client.client_id;
  return tr;
}

/** A row spanning the table, saying why it has no clients. */
function note(text) {
  const tr = textRow([text]);
  tr.cells[0].colSpan = 12;
  tr.cells[0].classList.add("muted");
  return tr;
}

/** Seconds as the largest whole unit that fits ("90 s", "2 h"). */
function duration(secs) {
  if (secs % 3600 === 0) return `${secs / 3600} h`;
  if (secs % 60 === 0) return `${secs / 60} min`;
  return `${secs} s`;
}

/** Where the data lives: SQLite's file, or PostgreSQL's database, host and version. */
function storagePlace(storage) {
  if (storage.engine === "postgres") {
    return `PostgreSQL ${storage.server_version}, ${storage.database} on ${storage.host}`;
  }
  return `SQLite, ${storage.path}`;
}
