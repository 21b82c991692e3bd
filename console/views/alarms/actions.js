// An operator's actions on an alarm (`POST /svc/alarms/acknowledge|shelve|unshelve|
// out-of-service|in-service`): the buttons of one alarm, and the form that shelves one with a
// reason and a duration. Acting needs the `alarms` feature's `ack` action or `read-write`;
// without either the buttons stay, greyed, saying why, so an operator sees what exists. The
// stream brings the new state back, so nothing is redrawn from the answer here.

import { call } from "../../api.js";
import { NEEDS_ACK } from "../../alarm_feed.js";
import { mayAct } from "../../rights.js";

/** Shelve durations offered (any the server reads may be typed). */
const DURATIONS = ["15m", "1h", "2h", "8h", "24h", "7d"];
export const NO_RIGHT = "Acting on alarms needs the “ack” or “read-write” action on the “alarms” feature.";

/** Whether the user may act on this domain's alarms. */
export function mayOperate() {
  return mayAct("alarms", "ack");
}

/**
 * The buttons for `alarm` (an AlarmStatus, or `{name, state: "normal"}`). `context` gives
 * `comment()` (the journal comment typed, if any), `shelve(name)` (opens the shelve form),
 * `done()` (after an action succeeded) and `fail(error)`.
 */
export function actionButtons(alarm, context) {
  const allowed = mayOperate();
  const make = (action, label, enabled, act) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.dataset.action = action;
    button.dataset.alarm = alarm.name;
    button.disabled = !allowed || !enabled;
    if (!allowed) button.title = NO_RIGHT;
    button.addEventListener("click", act);
    return button;
  };
  const post = (action, extra = {}) => async () => {
    try {
      await act(action, { alarm: alarm.name, ...extra }, context.comment());
      context.done();
    } catch (e) {
      context.fail(e);
    }
  };
  const state = alarm.state;
  const buttons = [make("acknowledge", "Acknowledge", NEEDS_ACK.has(state), post("acknowledge"))];
  if (state === "shelved") {
    buttons.push(make("unshelve", "Unshelve", true, post("unshelve")));
  } else {
    buttons.push(make("shelve", "Shelve…", state !== "out_of_service", () => context.shelve(alarm.name)));
  }
  if (state === "out_of_service") {
    buttons.push(make("in-service", "In service", true, post("in-service")));
  } else {
    const out = post("out-of-service");
    buttons.push(
      make("out-of-service", "Out of service", true, () => {
        // Maintenance silences the alarm until someone returns it: worth a second thought.
        if (confirm(`Take ${alarm.name} out of service? It will not be annunciated until returned.`)) out();
      }),
    );
  }
  return buttons;
}

/** Posts `action` with `body` and the comment, if one was typed. */
export function act(action, body, comment) {
  const text = comment?.trim();
  return call("POST", `/svc/alarms/${action}`, text ? { ...body, comment: text } : body);
}

/**
 * Fills `form` with the shelve form (hidden until `open(name)`): reason (required), duration
 * and the journal comment of `context` (as for `actionButtons`). Returns `open`.
 */
export function shelveForm(form, context) {
  form.hidden = true;
  form.classList.add("shelve", "row");
  form.innerHTML = `
    <strong>Shelve <span class="alarm-name"></span></strong>
    <label>Reason <input name="reason" required placeholder="sensor being replaced"></label>
    <label>For <input name="duration" required list="shelve-durations" value="2h" size="6"></label>
    <datalist id="shelve-durations"></datalist>
    <button class="primary" type="submit">Shelve</button>
    <button type="button" data-cancel>Cancel</button>`;
  form.querySelector("datalist").replaceChildren(...DURATIONS.map((d) => new Option(d)));
  form.querySelector("[data-cancel]").addEventListener("click", () => {
    form.hidden = true;
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const { reason, duration } = form.elements;
    try {
      await act("shelve", { alarm: form.dataset.alarm, reason: reason.value, duration: duration.value.trim() }, context.comment());
      form.hidden = true;
      reason.value = "";
      context.done();
    } catch (e) {
      context.fail(e);
    }
  });
  return (name) => {
    form.dataset.alarm = name;
    form.querySelector(".alarm-name").textContent = name;
    for (const control of form.elements) control.disabled = !mayOperate();
    form.hidden = false;
    form.elements.reason.focus();
  };
}
