// The address space of a stored OPC UA connector (Administration → Connectors), one level at a
// time (`GET /svc/connectors/{id}/browse?node=`): a node with children opens its level, the
// breadcrumb goes back up, and a variable can be added to the form's points as
// `{tag: <prefix>/<browse name>, address: {node_id}}`.

import { call } from "../../api.js";

/** A tag level from a browse name: its namespace index dropped, no `/ + #` left in it. */
export function tagLevel(browseName) {
  return browseName.replace(/^\d+:/, "").replace(/[/+#]/g, "_").trim() || "node";
}

/**
 * Fills `panel`; `addPoint(point)` (absent: read only) appends to the form, `fail(e)` shows a
 * refusal. Returns `open(record, prefix)`, which browses `record` from its Objects folder with
 * `prefix` proposed for the tags.
 */
export function browsePanel(panel, { addPoint, fail }) {
  panel.hidden = true;
  panel.innerHTML = `
    <h3 id="connector-browse-title"></h3>
    <div class="row">
      <label>Tag prefix for added points <input name="prefix" placeholder="acme/plant"></label>
      <button type="button" class="close">Close</button>
    </div>
    <nav class="breadcrumb" aria-label="Address space path"></nav>
    <p class="status" role="status" aria-live="polite"></p>
    <table aria-labelledby="connector-browse-title">
      <thead><tr><th>Display name</th><th>Browse name</th><th>Class</th><th>Data type</th>
        <th>Access</th><th>Node id</th><th></th></tr></thead>
      <tbody></tbody>
    </table>`;
  panel.setAttribute("aria-labelledby", "connector-browse-title");
  const title = panel.querySelector("h3");
  const crumbs = panel.querySelector(".breadcrumb");
  const status = panel.querySelector(".status");
  const tbody = panel.querySelector("tbody");
  const prefix = panel.querySelector("input[name=prefix]");
  prefix.closest("label").hidden = !addPoint;
  panel.querySelector(".close").addEventListener("click", () => {
    panel.hidden = true;
    panel.dataset.connector = "";
  });
  let record = null;
  /** The nodes walked down from the Objects folder: `{node_id, name}`. */
  let trail = [];

  const button = (label, onClick, aria) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    if (aria) b.setAttribute("aria-label", aria);
    b.addEventListener("click", onClick);
    return b;
  };

  const showCrumbs = () => {
    const levels = [{ node_id: null, name: "Objects" }, ...trail];
    crumbs.replaceChildren(
      ...levels.flatMap((level, i) => {
        const last = i === levels.length - 1;
        const item = last
          ? Object.assign(document.createElement("span"), { textContent: level.name })
          : button(level.name, () => {
              trail = trail.slice(0, i);
              load();
            });
        if (last) item.setAttribute("aria-current", "location");
        return i ? [document.createTextNode(" › "), item] : [item];
      }),
    );
  };

  const row = (node) => {
    const tr = document.createElement("tr");
    tr.dataset.node = node.node_id;
    const name = document.createElement("td");
    if (node.has_children) {
      name.append(
        button(node.display_name || node.browse_name, () => {
          trail = [...trail, { node_id: node.node_id, name: node.display_name || node.browse_name }];
          load();
        }, `Open ${node.display_name || node.browse_name}`),
      );
    } else {
      name.textContent = node.display_name || node.browse_name;
    }
    tr.append(name);
    for (const text of [node.browse_name, node.node_class, node.data_type ?? "", node.access_level ?? "", node.node_id]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    const action = document.createElement("td");
    if (addPoint && node.node_class === "Variable") {
      action.append(
        button("Add as point", () => {
          const base = prefix.value.trim().replace(/\/+$/, "");
          const tag = base ? `${base}/${tagLevel(node.browse_name)}` : tagLevel(node.browse_name);
          try {
            addPoint({ tag, address: { node_id: node.node_id } });
            status.textContent = `Added ${tag} to the form's points (save the connector to keep it).`;
          } catch (e) {
            fail(e);
          }
        }, `Add ${node.browse_name} as a point`),
      );
    }
    tr.append(action);
    return tr;
  };

  const load = async () => {
    showCrumbs();
    const node = trail.at(-1)?.node_id;
    const query = node ? `?node=${encodeURIComponent(node)}` : "";
    status.textContent = "Browsing…";
    tbody.replaceChildren();
    try {
      const children = await call("GET", `/svc/connectors/${encodeURIComponent(record.id)}/browse${query}`);
      tbody.replaceChildren(...children.map(row));
      status.textContent = children.length ? `${children.length} nodes` : "No nodes below this one.";
    } catch (e) {
      status.textContent = "";
      fail(e);
    }
  };

  return (chosen, proposed = "") => {
    record = chosen;
    trail = [];
    title.textContent = `Address space of “${chosen.name}”`;
    panel.dataset.connector = chosen.name;
    if (!prefix.value) prefix.value = proposed;
    panel.hidden = false;
    load();
    panel.scrollIntoView({ block: "nearest" });
  };
}
