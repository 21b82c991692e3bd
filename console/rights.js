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
