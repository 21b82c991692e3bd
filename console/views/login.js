// Login: username and password to a token, kept for this browser tab only.

import { ApiError } from "../api.js";

export function render(main, { reason, done }) {
  const form = document.createElement("form");
  form.className = "login";
  form.innerHTML = `
    <h1>Log in to svc</h1>
    <p class="notice error" role="alert" hidden></p>
    <label>Username <input name="username" autocomplete="username" required></label>
    <label>Password <input name="password" type="password" autocomplete="current-password" required></label>
    <button class="primary" type="submit">Log in</button>`;
  const notice = form.querySelector(".notice");
  const say = (text) => {
    notice.textContent = text;
    notice.hidden = !text;
  };
  say(reason);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {
      username: form.elements.username.value,
      password: form.elements.password.value,
    };
    try {
      const resp = await fetch("/auth/login", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      const text = await resp.text();
      if (!resp.ok) throw new ApiError(resp.status, text);
      done(JSON.parse(text).tkn);
    } catch (e) {
      say(e.message || "The server could not be reached.");
    }
  });
  main.replaceChildren(form);
  form.elements.username.focus();
  return null;
}
