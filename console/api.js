// The REST API as the console calls it: the user's token and the chosen domain go with every
// request, exactly as any other client sends them; the console can do nothing the API would
// refuse. A token the server no longer accepts sends the user back to the login page.

const TOKEN_KEY = "svc.token";

export const session = {
  get token() {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  set token(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  },
  /** The domain's name (`acme`); sent as `Domain: domains:acme`. */
  domain: null,
};

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let expired = () => {};

/** `handler(reason)` runs when the server refuses the session's token. */
export function onExpired(handler) {
  expired = handler;
}

/** The credential and domain headers, plus `extra`. */
export function headers(extra = {}) {
  const all = { ...extra };
  if (session.token) all.Authorization = `Bearer ${session.token}`;
  if (session.domain) all.Domain = `domains:${session.domain}`;
  return all;
}

/** Fails the way the server said: status and its one-sentence text. */
export async function failure(resp) {
  const text = (await resp.text()).trim();
  if (resp.status === 401 && session.token && /token/i.test(text)) expired(text);
  return new ApiError(resp.status, text || resp.statusText);
}

/** `method path` with an optional JSON body; resolves to the JSON answer (or null). */
export async function call(method, path, body) {
  const extra = body === undefined ? {} : { "Content-Type": "application/json" };
  const init = { method, headers: headers(extra) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const resp = await fetch(path, init);
  if (!resp.ok) throw await failure(resp);
  const text = await resp.text();
  return text ? JSON.parse(text) : null;
}

/** `method path` with a multipart body (a record's JSON in `record` plus file parts). */
export async function callForm(method, path, form) {
  const resp = await fetch(path, { method, headers: headers(), body: form });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

/** Saves `blob` as the file `name` through the browser's download. */
export function saveAs(blob, name) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

/** Downloads `path` (which needs the credential, so a plain link would not do) as `name`. */
export async function download(path, name) {
  const resp = await fetch(path, { headers: headers() });
  if (!resp.ok) throw await failure(resp);
  saveAs(await resp.blob(), name);
}
