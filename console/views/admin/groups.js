// Administration → Groups of the active domain: each with its members and its grants
// (feature, scope, action); create and delete a group, add and remove a member, grant and
// revoke a permission (a revoke replaces the group's grants with the others).

import { call } from "../../api.js";
import { may } from "../../rights.js";
import { confirmCell, errorNotice, textRow } from "../../dom.js";

export const title = "Groups";

export function render(section, { me }) {
  section.innerHTML = `
    <h2>Groups of this domain</h2>
    <form class="row" id="create-group">
      <label>Name <input name="name" required maxlength="128" placeholder="operators"></label>
      <button class="primary" type="submit">Create group</button>
    </form>
    <p class="muted" id="groups-why" hidden></p>
    <p class="notice error" role="alert" hidden></p>
    <datalist id="features"></datalist>
    <datalist id="actions"><option value="read"></option><option value="read-write"></option></datalist>
    <div id="groups"></div>`;
  const error = section.querySelector(".error");
  const fail = errorNotice(section);
  const form = section.querySelector("#create-group");
  const writable = me.admin || may("groups", "*", "read-write");
  if (!writable) {
    for (const control of form.elements) control.disabled = true;
    const why = section.querySelector("#groups-why");
    why.textContent = "Changing groups needs the groups feature (read-write) in this domain.";
    why.hidden = false;
  }

  // The features this domain knows (an administrator's effective grants list every one),
  // offered as suggestions when granting.
  call("GET", "/auth/permission")
    .then(({ permissions }) => {
      const names = [...new Set(permissions.map((p) => p.name))].sort();
      section.querySelector("#features").replaceChildren(...names.map((n) => new Option(n)));
    })
    .catch(() => {});

  const act = async (work) => {
    error.hidden = true;
    try {
      await work();
      await list();
    } catch (e) {
      fail(e);
    }
  };

  const list = async () => {
    const [groups, users] = await Promise.all([
      call("GET", "/auth/group"),
      // Listing users needs the users feature; without it members show by id.
      call("GET", "/auth/user").catch(() => []),
    ]);
    groups.sort((a, b) => a.name.localeCompare(b.name));
    const names = new Map(users.map((u) => [u.id, u.username]));
    section.querySelector("#groups").replaceChildren(
      ...groups.map((group) => card(group, { users, names, writable, act, fail })),
    );
  };

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    act(async () => {
      await call("POST", "/auth/group", { name: form.elements.name.value });
      form.reset();
    });
  });
  list().catch(fail);
  return null;
}

/** One group: members with add and remove, grants with grant and revoke, and delete. */
function card(group, { users, names, writable, act, fail }) {
  const box = document.createElement("article");
  box.className = "admin-card";
  box.dataset.group = group.name;
  box.innerHTML = `
    <div class="row"><h3></h3><span class="delete-group"></span></div>
    <p class="muted group-id"></p>
    <h4>Members</h4>
    <table class="members"><tbody></tbody></table>
    <form class="row add-member">
      <label>User <select name="user" required></select></label>
      <button type="submit">Add member</button>
    </form>
    <h4>Permissions</h4>
    <table class="grants">
      <thead><tr><th>Feature</th><th>Scope</th><th>Action</th><th></th></tr></thead><tbody></tbody>
    </table>
    <form class="row grant">
      <label>Feature <input name="feature" required list="features" maxlength="64"></label>
      <label>Scope <input name="scope" required value="*" maxlength="64"></label>
      <label>Action <input name="action" required list="actions" value="read" maxlength="64"></label>
      <button type="submit">Grant</button>
    </form>`;
  box.querySelector("h3").textContent = group.name;
  box.querySelector(".group-id").textContent = group.id;

  const groupPath = `/auth/group/${encodeURIComponent(group.id)}`;
  const removing = (question, work) => confirmCell("Remove", question, () => act(work), fail, { disabled: !writable });
  const members = box.querySelector(".members tbody");
  members.replaceChildren(
    ...group.user_ids.map((id) => {
      const name = names.get(id) ?? id;
      const row = textRow([name]);
      row.dataset.member = name;
      const path = `${groupPath}/user/${encodeURIComponent(id)}`;
      row.append(removing(`Take ${name} out of ${group.name}?`, () => call("DELETE", path)));
      return row;
    }),
  );
  if (!group.user_ids.length) members.append(textRow(["no members"]));
  box.querySelector(".grants tbody").replaceChildren(
    ...group.grants.map((g, i) => {
      const row = textRow([g.feature, g.scope, g.action]);
      row.dataset.grant = `${g.feature} ${g.scope} ${g.action}`;
      const others = group.grants.filter((_, j) => j !== i);
      row.append(
        removing(`Revoke ${g.feature} ${g.action} at ${g.scope} from ${group.name}?`, () =>
          call("PUT", groupPath, { grants: others }),
        ),
      );
      return row;
    }),
  );
  const drop = confirmCell("Delete group", `Delete the group ${group.name}? Its members lose its grants.`,
    () => act(() => call("DELETE", groupPath)), fail, { disabled: !writable });
  box.querySelector(".delete-group").replaceWith(...drop.childNodes);

  const adding = box.querySelector(".add-member");
  const outside = users.filter((u) => !group.user_ids.includes(u.id));
  adding.elements.user.replaceChildren(...outside.map((u) => new Option(u.username, u.id)));
  adding.addEventListener("submit", (event) => {
    event.preventDefault();
    const uid = adding.elements.user.value;
    const path = `/auth/group/${encodeURIComponent(group.id)}/user/${encodeURIComponent(uid)}`;
    act(() => call("POST", path));
  });

  const granting = box.querySelector(".grant");
  granting.addEventListener("submit", (event) => {
    event.preventDefault();
    const { feature, scope, action } = granting.elements;
    const permission = { name: feature.value.trim(), scope: scope.value.trim(), action: action.value.trim() };
    act(() => call("POST", "/auth/permission", { group_id: group.id, permissions: [permission] }));
  });

  for (const form of [adding, granting]) {
    for (const control of form.elements) control.disabled = !writable;
  }
  if (!outside.length) for (const control of adding.elements) control.disabled = true;
  return box;
}
