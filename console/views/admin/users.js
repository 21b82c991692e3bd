// Administration → Users: every user (an administrator) or the domain's users (a holder of
// the `users` feature at `*`), with their groups; create one (into a group of the domain, as
// a domain manager must), delete one after confirming. Passwords are only ever sent.

import { call } from "../../api.js";
import { may } from "../../rights.js";
import { confirmCell, errorNotice, textRow } from "../../dom.js";

export const title = "Users";

export function render(section, { me }) {
  section.innerHTML = `
    <h2>Users</h2>
    <form class="row" id="create-user">
      <label>Username <input name="username" required maxlength="128" autocomplete="off"></label>
      <label>Password <input name="password" type="password" required minlength="8"
        autocomplete="new-password"></label>
      <label><input name="admin" type="checkbox"> Administrator</label>
      <label>Group <select name="group"><option value="">none</option></select></label>
      <button class="primary" type="submit">Create user</button>
    </form>
    <p class="muted" id="users-why" hidden></p>
    <p class="notice error" role="alert" hidden></p>
    <table>
      <thead><tr><th>Username</th><th>Administrator</th><th>Groups</th><th>Created</th><th></th></tr></thead>
      <tbody id="users"></tbody>
    </table>`;
  const error = section.querySelector(".error");
  const fail = errorNotice(section);
  const form = section.querySelector("#create-user");
  const writable = me.admin || may("users", "*", "read-write");
  if (!writable) {
    for (const control of form.elements) control.disabled = true;
    const why = section.querySelector("#users-why");
    why.textContent = "Creating and deleting users needs the users feature (read-write) in this domain.";
    why.hidden = false;
  }
  // Only an administrator makes administrators; the API refuses anyone else.
  form.elements.admin.disabled = !me.admin;

  // The domain's groups name the memberships a user has here; those of other domains are
  // shown by their id.
  let groupNames = new Map();
  const loadGroups = async () => {
    if (!me.admin && !may("groups", "*", "read")) return;
    const groups = await call("GET", "/auth/group");
    groupNames = new Map(groups.map((g) => [g.id, g.name]));
    const select = form.elements.group;
    select.replaceChildren(
      new Option("none", ""),
      ...groups.map((g) => new Option(g.name, g.id)),
    );
  };

  const list = async () => {
    const users = await call("GET", "/auth/user");
    users.sort((a, b) => a.username.localeCompare(b.username));
    section.querySelector("#users").replaceChildren(
      ...users.map((user) => row(user, { me, writable, groupNames, refresh: list, fail })),
    );
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.hidden = true;
    const { username, password, admin, group } = form.elements;
    const body = { username: username.value, password: password.value, admin: admin.checked };
    if (group.value) body.group_ids = [group.value];
    try {
      await call("POST", "/auth/user", body);
      form.reset();
      await list();
    } catch (e) {
      fail(e);
    }
  });
  loadGroups()
    .catch(() => {})
    .then(list)
    .catch(fail);
  return null;
}

function row(user, { me, writable, groupNames, refresh, fail }) {
  const groups = user.group_ids.map((id) => groupNames.get(id) ?? id).join(", ");
  const tr = textRow([user.username, user.admin ? "yes" : "no", groups || "—", user.created_dt]);
  tr.dataset.user = user.username;
  const remove = async () => {
    await call("DELETE", `/auth/user/${encodeURIComponent(user.id)}`);
    await refresh();
  };
  const question = `Delete the user “${user.username}”? They can no longer log in, and their keys stop working.`;
  // Nobody deletes themselves (the API refuses it too).
  const disabled = !writable || user.id === me.id;
  tr.append(confirmCell("Delete", question, remove, fail, { disabled, data: { delete: user.username } }));
  return tr;
}
