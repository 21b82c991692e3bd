// One alarm's page (`#/<domain>/alarms/<name>`): its definition (the `alarms` record: read for
// the setpoint and deadband even while the alarm is normal, which the summary does not list),
// its state live from the alarm feed, the operator's buttons, the watched tag's trend on the
// historian chart with the setpoint (and where the alarm clears, the deadband) drawn across it,
// and the alarm's journal.

import { call } from "../../api.js";
import * as feed from "../../alarm_feed.js";
import { stream } from "../../sse.js";
import { trend } from "../tag/trend.js";
import { journal } from "./journal.js";
import { actionButtons, mayOperate, shelveForm } from "./actions.js";
import { priorityBadge, stateLabel, valueText } from "./summary.js";

/**
 * The horizontal lines of an alarm on its tag's trend: the setpoint, and for limit alarms the
 * value at which it clears (setpoint ∓ deadband). Kinds without a level on the value's axis
 * (rate of change, booleans, quality, staleness) draw none.
 */
export function limitsOf(definition) {
  const setpoint = Number(definition.setpoint);
  const band = Number(definition.deadband ?? 0);
  if (definition.setpoint === null || definition.setpoint === undefined || !Number.isFinite(setpoint)) return [];
  const limits = [{ value: setpoint, label: `setpoint ${setpoint}`, kind: "setpoint" }];
  const below = { high: true, high_high: true }[definition.kind];
  const above = { low: true, low_low: true }[definition.kind];
  if (!below && !above && !["equal", "not_equal"].includes(definition.kind)) return [];
  if (band > 0 && (below || above)) {
    const clears = below ? setpoint - band : setpoint + band;
    limits.push({ value: clears, label: `clears ${below ? "below" : "above"} ${clears}`, kind: "deadband" });
  }
  return limits;
}

/** Renders alarm `name`'s page into `main`; `base` is `#/<domain>`. Returns the cleanup. */
export function renderAlarm(main, name, base, fail) {
  main.innerHTML = `
    <p><a href="${base}/alarms">← All alarms</a></p>
    <h1 class="alarm-title"></h1>
    <p class="notice error" role="alert" hidden></p>
    <dl class="facts" id="alarm-facts"></dl>
    <div class="row"><label>Comment for the journal <input id="comment" size="40"></label>
      <span class="actions" id="alarm-actions"></span></div>
    <form id="shelve-form"></form>
    <p class="muted">The definition is the record <code></code> of the
      <a id="definitions">alarms table</a>.</p>
    <h2>Trend of the tag</h2>
    <section id="trend-section"><p class="muted">Reading the definition…</p></section>
    <h2>Journal</h2>
    <section id="alarm-journal"></section>`;
  main.querySelector(".alarm-title").textContent = name;
  main.querySelector("#definitions").href = `${base}/records/alarms`;
  const comment = main.querySelector("#comment");
  comment.disabled = !mayOperate();
  const log = journal(main.querySelector("#alarm-journal"), { alarm: name });
  const context = {
    comment: () => comment.value,
    shelve: (alarm) => openShelve(alarm),
    done: () => {
      comment.value = "";
    },
    fail,
  };
  const openShelve = shelveForm(main.querySelector("#shelve-form"), context);
  let definition = null;
  let chart = null;
  const abort = new AbortController();

  const paint = () => {
    const standing = feed.get(name);
    const status = standing ?? { name, state: "normal", ...(definition ?? {}) };
    const facts = [
      ["State", stateLabel(status.state)],
      ["Priority", status.priority ?? "—"],
      ["Tag", status.tag ?? "—"],
      ["Condition", definition ? `${definition.kind} ${JSON.stringify(definition.setpoint ?? null)}` : "—"],
      ["Deadband", String(definition?.deadband ?? status.deadband ?? 0)],
      ["Value", standing ? valueText(standing.value, standing.unit, standing.quality) : "—"],
      ["Message", standing?.message ?? "—"],
      ["Since", standing?.since ? new Date(standing.since).toLocaleString() : "—"],
      ["Description", status.description ?? "—"],
    ];
    if (standing?.shelved) {
      const s = standing.shelved;
      facts.push(["Shelved", `until ${new Date(s.until).toLocaleString()} by ${s.by}: ${s.reason}`]);
    }
    if (standing?.out_of_service) {
      const o = standing.out_of_service;
      facts.push(["Out of service", `by ${o.by}${o.comment ? `: ${o.comment}` : ""}`]);
    }
    main.querySelector("#alarm-facts").replaceChildren(
      ...facts.flatMap(([term, text]) => {
        const dt = document.createElement("dt");
        dt.textContent = term;
        const dd = document.createElement("dd");
        if (term === "Priority" && status.priority) {
          dd.append(priorityBadge(status.priority));
        } else if (term === "Tag" && status.tag) {
          const link = document.createElement("a");
          link.href = `${base}/tag/${encodeURIComponent(status.tag)}`;
          link.textContent = status.tag;
          dd.append(link);
        } else {
          dd.textContent = text;
        }
        dd.dataset.fact = term.toLowerCase();
        return [dt, dd];
      }),
    );
    main.querySelector("#alarm-actions").replaceChildren(...actionButtons(status, context));
  };

  const query = new URLSearchParams({ "filter[name][eq][string]": name });
  call("GET", `/svc/alarms/all?${query}`)
    .then((records) => {
      definition = records.find((r) => r.name === name) ?? null;
      const section = main.querySelector("#trend-section");
      if (!definition) {
        section.innerHTML = `<p class="muted">No alarm of this name is defined.</p>`;
        paint();
        return;
      }
      main.querySelector("p.muted code").textContent = definition.id ?? name;
      chart = trend(section, definition.tag, { limits: limitsOf(definition) });
      paint();
      // Live points for the chart, as on the tag's own page.
      stream(
        `/svc/tag/stream?topic=${encodeURIComponent(definition.tag)}`,
        (event, data) => {
          if (event === "value") chart.live(JSON.parse(data));
        },
        abort.signal,
      ).catch(() => {});
    })
    .catch(fail);

  let seen = -1;
  const unsubscribe = feed.subscribe((now) => {
    paint();
    if (seen >= 0 && now.changes !== seen) log.changed();
    seen = now.changes;
  });
  return () => {
    unsubscribe();
    abort.abort();
    log.stop();
    chart?.stop();
  };
}
