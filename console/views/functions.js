// Functions (the SDK's processes): the domain's list, a function's code and versions (restore
// one), running it with an input to see its output and logs, and its run history.

import { call } from "../api.js";
import { may } from "../rights.js";
import { confirmCell, errorNotice, pickInAddress, textRow } from "../dom.js";

export const title = "Functions";

export function render(main, { rest }) {
  const name = rest[0] ? decodeURIComponent(rest[0]) : null;
  main.innerHTML = `
    <h1>Functions</h1>
    <div class="row"><label>Function <select id="function"><option value="">choose…</option></select></label>
      <span class="status" id="about"></span></div>
    <p class="notice error" role="alert" hidden></p>
    <div id="detail" hidden>
      <h2>Run</h2>
      <form id="run" class="row">
        <textarea name="input" rows="3" cols="60" aria-label="Input as JSON">null</textarea>
        <button class="primary" type="submit">Run</button>
      </form>
      <dl class="facts" id="result" hidden><dt>Output</dt><dd><pre id="output"></pre></dd>
        <dt>Logs</dt><dd><pre id="logs"></pre></dd><dt>Took</dt><dd id="took"></dd></dl>
      <h2>Code</h2>
      <pre class="notice" id="code"></pre>
      <h2>Versions</h2>
      <table><thead><tr><th>Version</th><th>Language</th><th>Saved</th><th></th></tr></thead><tbody id="versions"></tbody></table>
      <h2>Runs</h2>
      <table><thead><tr><th>Started</th><th>Trigger</th><th>Took</th><th>Result</th></tr></thead><tbody id="runs"></tbody></table>
    </div>`;
  const error = main.querySelector(".error");
  const fail = errorNotice(main);

  const select = main.querySelector("#function");
  call("GET", "/svc/processes/domain")
    .then((processes) => {
      for (const p of processes) select.append(new Option(p.name, p.name, false, p.name === name));
    })
    .catch(fail);
  pickInAddress(select);
  if (!name) return null;
  main.querySelector("#detail").hidden = false;
  const path = encodeURIComponent(name);
  const writable = may("processes", "*", "write");
  if (!writable) for (const control of main.querySelector("#run").elements) control.disabled = true;

  const loadRuns = async () => {
    const runs = await call("GET", `/svc/processes/runs/${path}?limit=20`);
    main.querySelector("#runs").replaceChildren(
      ...runs.map((run) =>
        textRow([
          run.started_dt,
          run.trigger,
          `${run.duration_ms} ms`,
          run.success ? "ok" : run.error ?? "failed",
        ]),
      ),
    );
  };
  const loadVersions = async () => {
    const versions = await call("GET", `/svc/code/${path}/versions`);
    const newest = versions.reduce((a, v) => (v.version > a.version ? v : a), versions[0] ?? { version: 0 });
    main.querySelector("#code").textContent = newest.code ?? "";
    main.querySelector("#about").textContent = newest.language ? `${newest.language}, version ${newest.version}` : "";
    main.querySelector("#versions").replaceChildren(
      ...versions.map((v) => {
        const tr = textRow([String(v.version), v.language, v.created_dt]);
        const restore = async () => {
          await call("POST", `/svc/code/${path}/restore/${v.version}`);
          await loadVersions();
        };
        const question = `Make version ${v.version} of ${name} the running code?`;
        const label = v === newest ? "current" : "Restore";
        const disabled = v === newest || !writable;
        tr.append(confirmCell(label, question, restore, fail, { disabled }));
        return tr;
      }),
    );
  };
  main.querySelector("#run").addEventListener("submit", async (event) => {
    event.preventDefault();
    error.hidden = true;
    try {
      const input = JSON.parse(event.target.elements.input.value);
      const result = await call("POST", "/svc/processes/execute", { name, input });
      main.querySelector("#output").textContent = JSON.stringify(result.output, null, 2);
      main.querySelector("#logs").textContent = (result.logs ?? []).join("\n");
      main.querySelector("#took").textContent = `${result.duration_ms} ms`;
      main.querySelector("#result").hidden = false;
    } catch (e) {
      fail(e);
    }
    loadRuns().catch(fail);
  });
  loadVersions().catch(fail);
  loadRuns().catch(fail);
  return null;
}
