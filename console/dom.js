// Small pieces the views share: table rows of text, a button that asks before it acts, the
// view's error notice, and a picker whose choice is the last part of the address.

/** A `<tr>` of text cells. */
export function textRow(texts) {
  const tr = document.createElement("tr");
  for (const text of texts) {
    const td = document.createElement("td");
    td.textContent = text;
    tr.append(td);
  }
  return tr;
}

/**
 * A `<td>` holding a button `label` that asks `question` and then awaits `act()`, handing
 * an error to `fail`; `data` becomes the button's data attributes.
 */
export function confirmCell(label, question, act, fail, { disabled = false, data = {} } = {}) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = label;
  button.disabled = disabled;
  Object.assign(button.dataset, data);
  button.addEventListener("click", async () => {
    if (!confirm(question)) return;
    try {
      await act();
    } catch (e) {
      fail(e);
    }
  });
  const td = document.createElement("td");
  td.append(button);
  return td;
}

/** Shows an error's sentence in the view's `.error` notice. */
export function errorNotice(main) {
  const notice = main.querySelector(".error");
  return (e) => {
    notice.textContent = e.message;
    notice.hidden = false;
  };
}

/** Makes choosing in `select` open `#/<domain>/<view>/<choice>` (nothing chosen: the view). */
export function pickInAddress(select) {
  select.addEventListener("change", () => {
    const base = location.hash.split("/").slice(0, 3).join("/");
    location.hash = select.value ? `${base}/${encodeURIComponent(select.value)}` : base;
  });
}
