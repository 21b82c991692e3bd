// System: what `GET /svc/` says of this server — device, version, listeners, storage, and
// whether Python processes run here and inside which fences.

import { call } from "../api.js";
import { errorNotice, textRow } from "../dom.js";

export const title = "System";

export function render(main) {
  main.innerHTML = `
    <h1>System</h1>
    <p class="notice error" role="alert" hidden></p>
    <dl class="facts" id="device"></dl>
    <h2>Listeners</h2>
    <table><thead><tr><th>Listener</th><th>Address</th><th>State</th></tr></thead><tbody id="listeners"></tbody></table>
    <h2>Python processes</h2>
    <dl class="facts" id="python"></dl>`;
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
        ["Storage", `${info.storage.engine}, ${info.storage.path}`],
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
  return null;
}
