// Flows: the domain's flows (state and size), and one flow drawn as a graph (console/graph.js)
// whose nodes show their configuration when chosen; starting and stopping it, injecting a
// message by hand to see what reached its debug nodes, and its recent runs. Everything goes
// through the flow routes of the REST API (`/svc/flows/…`).

import { call } from "../api.js";
import { may } from "../rights.js";
import { errorNotice, pickInAddress, textRow } from "../dom.js";
import { drawFlow, edgesOf } from "../graph.js";

export const title = "Flows";

/** Runs are polled this often while a flow is shown, so timer- and tag-driven runs appear. */
const RUNS_EVERY_MS = 5000;

const stateOf = (flow) => (flow.running === true ? "running" : "stopped");

export function render(main, { rest }) {
  const name = rest[0] ? decodeURIComponent(rest[0]) : null;
  main.innerHTML = `
    <h1>Flows</h1>
    <div class="row"><label>Flow <select id="flow"><option value="">choose…</option></select></label>
      <span class="status" id="about"></span></div>
    <p class="notice error" role="alert" hidden></p>
    <table id="list" hidden><thead><tr><th>Flow</th><th>State</th><th>Nodes</th><th>Description</th></tr></thead>
      <tbody id="flows"></tbody></table>
    <div id="detail" hidden>
      <div class="row">
        <strong>State</strong> <span id="state" class="flow-state"></span>
        <button type="button" id="start">Start</button>
        <button type="button" id="stop">Stop</button>
      </div>
      <div class="flow-layout">
        <div class="flow-canvas"><svg class="flow" id="graph" role="group"></svg></div>
        <aside class="flow-panel" id="node" aria-live="polite">
          <p class="muted">Choose a node (click it, or Tab to it and press Enter) to see its configuration.</p>
        </aside>
      </div>
      <h2>Inject a message</h2>
      <form id="inject" class="row">
        <textarea name="input" rows="3" cols="50" aria-label="Message payload as JSON">null</textarea>
        <label>at <select name="node"><option value="">its inject (else tag-in) nodes</option></select></label>
        <button class="primary" type="submit">Inject</button>
      </form>
      <div id="result" hidden>
        <p class="status" id="outcome"></p>
        <table><thead><tr><th>Debug node</th><th>Message</th></tr></thead><tbody id="debug"></tbody></table>
      </div>
      <h2>Recent runs</h2>
      <table><thead><tr><th>Started</th><th>Trigger</th><th>Took</th><th>Result</th><th>Logs</th></tr></thead>
        <tbody id="runs"></tbody></table>
    </div>`;
  const error = main.querySelector(".error");
  const fail = errorNotice(main);
  const select = main.querySelector("#flow");
  pickInAddress(select);

  // The picker needs names only; the overview needs each flow's nodes to count them.
  const listed = call("GET", name ? "/svc/flows/all?fields=name" : "/svc/flows/all").then((flows) => {
    flows.sort((a, b) => a.name.localeCompare(b.name));
    for (const f of flows) select.append(new Option(f.name, f.name, false, f.name === name));
    return flows;
  });
  if (!name) {
    listed.then((flows) => showList(main, flows)).catch(fail);
    return null;
  }
  listed.catch(fail);

  const path = encodeURIComponent(name);
  // Starting, stopping and injecting all need read-write on flows at scope `*`, as the server checks.
  const writable = may("flows", "*", "write");
  const startButton = main.querySelector("#start");
  const stopButton = main.querySelector("#stop");
  const form = main.querySelector("#inject");
  if (!writable) for (const control of form.elements) control.disabled = true;

  const showState = (flow) => {
    const state = stateOf(flow);
    const badge = main.querySelector("#state");
    badge.textContent = state;
    badge.dataset.state = state;
    startButton.disabled = !writable || state === "running";
    stopButton.disabled = !writable || state === "stopped";
  };
  const setRunning = (verb) => async () => {
    error.hidden = true;
    try {
      showState(await call("POST", `/svc/flows/${path}/${verb}`));
    } catch (e) {
      fail(e);
    }
  };
  startButton.addEventListener("click", setRunning("start"));
  stopButton.addEventListener("click", setRunning("stop"));

  const loadRuns = async () => {
    const runs = await call("GET", `/svc/flows/${path}/runs?limit=20`);
    if (!runs.length) {
      main.querySelector("#runs").replaceChildren(textRow(["No runs yet.", "", "", "", ""]));
      return;
    }
    main.querySelector("#runs").replaceChildren(
      ...runs.map((run) => {
        const tr = textRow([
          run.started_dt,
          run.trigger,
          `${run.duration_ms} ms`,
          run.success ? "ok" : run.error ?? "failed",
          (run.logs ?? []).join("\n"),
        ]);
        tr.dataset.run = String(run.id);
        tr.lastChild.classList.add("logs");
        return tr;
      }),
    );
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.hidden = true;
    main.querySelector("#result").hidden = true;
    try {
      let input;
      try {
        input = JSON.parse(form.elements.input.value);
      } catch (e) {
        throw new Error(`The message is not JSON: ${e.message}`);
      }
      const body = { name, input };
      if (form.elements.node.value) body.node = form.elements.node.value;
      const result = await call("POST", "/svc/flows/execute", body);
      main.querySelector("#outcome").textContent =
        `${result.success ? "Done" : "Failed"} in ${result.duration_ms} ms; ` +
        `${result.debug.length} message(s) reached a debug node.`;
      main.querySelector("#debug").replaceChildren(
        ...result.debug.map((d) => textRow([d.node ?? "", JSON.stringify(d.msg ?? d)])),
      );
      main.querySelector("#result").hidden = false;
    } catch (e) {
      fail(e);
    }
    loadRuns().catch(fail);
  });

  call("GET", `/svc/flows/all?${new URLSearchParams({ "filter[name][eq]": name })}`)
    .then(([flow]) => {
      if (!flow) throw new Error(`There is no flow named ${name} in this domain.`);
      main.querySelector("#detail").hidden = false;
      const nodes = Array.isArray(flow.nodes) ? flow.nodes : [];
      main.querySelector("#about").textContent =
        `${nodes.length} nodes, ${edgesOf(nodes).length} connections` +
        (flow.description ? ` — ${flow.description}` : "");
      showState(flow);
      const svg = main.querySelector("#graph");
      svg.setAttribute("aria-label", `Graph of flow ${name}`);
      drawFlow(svg, nodes, (node) => showNode(main.querySelector("#node"), node));
      for (const node of nodes) form.elements.node.append(new Option(node.id, node.id));
      return loadRuns();
    })
    .catch(fail);
  const timer = setInterval(() => {
    if (!main.querySelector("#detail").hidden) loadRuns().catch(fail);
  }, RUNS_EVERY_MS);
  return () => clearInterval(timer);
}

/** The overview: each flow with its state and node count, linking to its graph. */
function showList(main, flows) {
  const base = location.hash.split("/").slice(0, 3).join("/");
  main.querySelector("#flows").replaceChildren(
    ...flows.map((flow) => {
      const nodes = Array.isArray(flow.nodes) ? flow.nodes.length : 0;
      const tr = textRow(["", stateOf(flow), String(nodes), flow.description ?? ""]);
      const link = document.createElement("a");
      link.href = `${base}/${encodeURIComponent(flow.name)}`;
      link.textContent = flow.name;
      tr.firstChild.append(link);
      tr.dataset.flow = flow.name;
      return tr;
    }),
  );
  main.querySelector("#list").hidden = false;
  if (!flows.length) main.querySelector("#about").textContent = "This domain has no flows yet.";
}

/** A node's type, id, wires and configuration, key by key; strings (code) as written. */
function showNode(panel, node) {
  const heading = document.createElement("h2");
  heading.textContent = node.name ? `${node.name}` : node.id;
  const facts = document.createElement("dl");
  facts.className = "facts";
  const fact = (term, value, pre = false) => {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    if (pre) {
      const block = document.createElement("pre");
      block.textContent = value;
      dd.append(block);
    } else {
      dd.textContent = value;
    }
    dd.dataset.key = term;
    facts.append(dt, dd);
  };
  fact("type", node.type);
  fact("id", node.id);
  (node.wires ?? []).forEach((targets, port) => fact(`port ${port + 1} →`, targets.join(", ") || "—"));
  const config = node.config && typeof node.config === "object" ? node.config : {};
  const keys = Object.keys(config);
  for (const key of keys) {
    const value = config[key];
    const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    fact(key, text, typeof value === "object" || text.includes("\n"));
  }
  const note = document.createElement("p");
  note.className = "muted";
  note.textContent = keys.length ? "" : "This node has no configuration.";
  panel.replaceChildren(heading, facts, ...(keys.length ? [] : [note]));
  panel.dataset.node = node.id;
}
