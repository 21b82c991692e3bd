// What the user may do in the current domain (`GET /auth/permission`), so that the console
// greys out what the API would refuse. The API still decides: this only spares the user a
// refusal.

import { call } from "./api.js";

let grants = [];

/** Loads the user's effective grants in the session's domain. */
export async function load() {
  grants = (await call("GET", "/auth/permission")).permissions ?? [];
}

/** Whether `feature` at `scope` may be written (`read-write`) or read. */
export function may(feature, scope, access = "read") {
  return grants.some(
    (g) =>
      g.name === feature &&
      (g.scope === "*" || g.scope === scope) &&
      (g.action === "read-write" || (access === "read" && g.action === "read")),
  );
}

/**
 * Whether the custom action `action` (e.g. `ack` on `alarms`) may be taken in the whole domain:
 * granted itself or through `read-write` at scope `*`, as the server checks it.
 */
export function mayAct(feature, action) {
  return grants.some(
    (g) => g.name === feature && g.scope === "*" && (g.action === action || g.action === "read-write"),
  );
}
