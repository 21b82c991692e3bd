// Alarms (issue 37): the summary of the domain's standing alarms, live from the alarm feed
// (console/alarm_feed.js: the stream's snapshot, then its changes), most urgent first, with
// the operator's buttons; the journal below it; and, at `#/<domain>/alarms/<name>`, one
// alarm's page with its tag's trend (views/alarms/detail.js). Definitions are records of the
// `alarms` table, edited in Collections.

import * as feed from "../alarm_feed.js";
import { session } from "../api.js";
import { errorNotice } from "../dom.js";
import { NO_RIGHT, mayOperate, shelveForm } from "./alarms/actions.js";
import { renderAlarm } from "./alarms/detail.js";
import { journal } from "./alarms/journal.js";
import { noteRow, summaryRow } from "./alarms/summary.js";
import { may } from "../rights.js";

export const title = "Alarms";

export function render(main, { rest }) {
  const base = `#/${session.domain}`;
  if (!may("alarms", "*")) {
    main.innerHTML = `<h1>Alarms</h1><p class="notice">Reading alarms needs the right to read the
      <code>alarms</code> feature in this domain.</p>`;
    return null;
  }
  if (rest[0]) {
    const fail = (e) => errorNotice(main)(e);
    return renderAlarm(main, decodeURIComponent(rest.join("/")), base, fail);
  }
  main.innerHTML = `
    <h1>Alarms <span class="muted" id="alarm-counts"></span></h1>
    <p class="notice error" role="alert" hidden></p>
    <p class="notice" id="rights-note" hidden></p>
    <div class="row">
      <span class="status" id="feed-status"></span>
      <label>Comment for the journal <input id="comment" size="32" placeholder="optional"></label>
      <a id="definitions">Alarm definitions (the alarms table)</a>
    </div>
    <form id="shelve-form"></form>
    <table class="alarms">
      <thead><tr><th>Priority</th><th>Alarm</th><th>Tag</th><th>State</th><th>Value</th>
        <th>Message</th><th>Since</th><th>Actions</th></tr></thead>
      <tbody id="summary"></tbody>
    </table>
    <h2>Journal</h2>
    <section id="alarm-journal"></section>`;
  main.querySelector("#definitions").href = `${base}/records/alarms`;
  const fail = errorNotice(main);
  if (!mayOperate()) {
    const note = main.querySelector("#rights-note");
    note.textContent = `You may follow these alarms but not act on them. ${NO_RIGHT}`;
    note.hidden = false;
  }
  const comment = main.querySelector("#comment");
  comment.disabled = !mayOperate();
  const context = {
    comment: () => comment.value,
    shelve: (name) => openShelve(name),
    done: () => {
      comment.value = "";
      main.querySelector(".notice.error").hidden = true;
    },
    fail,
  };
  const openShelve = shelveForm(main.querySelector("#shelve-form"), context);
  const log = journal(main.querySelector("#alarm-journal"));
  const body = main.querySelector("#summary");
  let frame = 0;
  let latest = null;
  let seen = -1;
  // A flood of changes is painted once per animation frame.
  const paint = () => {
    frame = 0;
    const { list, unacknowledged, status } = latest;
    main.querySelector("#feed-status").textContent = status;
    main.querySelector("#alarm-counts").textContent = `${list.length} standing, ${unacknowledged} unacknowledged`;
    body.replaceChildren(
      ...(list.length ? list.map((alarm) => summaryRow(alarm, base, context)) : [noteRow("No alarm is standing.")]),
    );
  };
  const unsubscribe = feed.subscribe((now) => {
    latest = now;
    frame ||= requestAnimationFrame(paint);
    if (seen >= 0 && now.changes !== seen) log.changed();
    seen = now.changes;
  });
  return () => {
    unsubscribe();
    cancelAnimationFrame(frame);
    log.stop();
  };
}
