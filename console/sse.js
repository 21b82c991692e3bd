// Server-Sent Events over fetch: EventSource cannot send an Authorization header, and the
// console never puts a credential in a URL. Parses `event:`/`data:` lines as they arrive.

import { failure, headers } from "./api.js";

/**
 * Streams `path`, calling `onEvent(name, data)` for each event, until `signal` aborts or the
 * server ends the stream; rejects with the server's error when the stream cannot start.
 */
export async function stream(path, onEvent, signal) {
  const resp = await fetch(path, { headers: headers({ Accept: "text/event-stream" }), signal });
  if (!resp.ok) throw await failure(resp);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let name = "message";
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end).replace(/\r$/, "");
      buffer = buffer.slice(end + 1);
      if (line === "") {
        if (data.length) onEvent(name, data.join("\n"));
        name = "message";
        data = [];
      } else if (line.startsWith("event:")) {
        name = line.slice(6).trim();
      } else if (line.startsWith("data:")) {
        data.push(line.slice(5).replace(/^ /, ""));
      }
    }
  }
}
