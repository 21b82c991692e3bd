// The OPC UA server certificates the domain has met (Administration → Connectors):
// thumbprint, state (pending, trusted, rejected) and first seen, with Trust, Reject and
// Forget for users with the `connectors` feature read-write. Trusting restarts the domain's
// connectors, which then connect.

import { call } from "../../api.js";
import { confirmCell } from "../../dom.js";

/** Fills `panel`; returns `refresh()`, which redraws only when the list changed. */
export function certificatesPanel(panel, { writable, act, fail }) {
  panel.innerHTML = `
    <h3 id="certificates-title">OPC UA server certificates</h3>
    <p class="muted">A server the domain has not trusted is refused and listed here as pending.</p>
    <table aria-labelledby="certificates-title">
      <thead><tr><th>Thumbprint (SHA-1)</th><th>State</th><th>First seen</th>
        ${writable ? "<th></th><th></th><th></th>" : ""}</tr></thead>
      <tbody id="certificates"></tbody>
    </table>`;
  const tbody = panel.querySelector("tbody");
  let shown = null;

  const row = (cert) => {
    const tr = document.createElement("tr");
    tr.dataset.thumbprint = cert.thumbprint;
    const cell = (text, className = "") => {
      const td = document.createElement("td");
      td.textContent = text;
      td.className = className;
      tr.append(td);
      return td;
    };
    cell(cert.thumbprint, "thumbprint");
    cell(cert.state, "certificate-state").dataset.state = cert.state;
    cell(cert.first_seen);
    if (!writable) return tr;
    const path = `/svc/connectors/certificates/${cert.thumbprint}`;
    for (const [label, how] of [["Trust", "trust"], ["Reject", "reject"]]) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.dataset[how] = cert.thumbprint;
      b.setAttribute("aria-label", `${label} the certificate ${cert.thumbprint}`);
      b.disabled = cert.state === (how === "trust" ? "trusted" : "rejected");
      b.addEventListener("click", () => act(async () => {
        await call("POST", `${path}/${how}`);
        await refresh();
      }));
      const td = document.createElement("td");
      td.append(b);
      tr.append(td);
    }
    const question = `Forget the certificate ${cert.thumbprint}? The next connection to its server lists it as pending again.`;
    const forget = async () => {
      await call("DELETE", path);
      await refresh();
    };
    tr.append(confirmCell("Forget", question, forget, fail, { data: { forget: cert.thumbprint } }));
    return tr;
  };

  const refresh = async () => {
    const listed = await call("GET", "/svc/connectors/certificates");
    const key = JSON.stringify(listed.map(({ der, ...rest }) => rest));
    if (key === shown) return;
    shown = key;
    tbody.replaceChildren(...listed.map(row));
    if (!listed.length) {
      const tr = document.createElement("tr");
      const td = document.createElement("td");
      td.colSpan = writable ? 6 : 3;
      td.className = "muted";
      td.textContent = "None met yet.";
      tr.append(td);
      tbody.append(tr);
    }
  };
  return refresh;
}
