// Elements built from data with text nodes only: nothing from the server is ever parsed as HTML.

export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (name === "class") element.className = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export const $ = (selector) => document.querySelector(selector);

export function clear(element) {
  element.replaceChildren();
  return element;
}

/** Says something to screen-reader users without moving focus. */
export function announce(text) {
  const announcer = $("#announcer");
  announcer.textContent = "";
  setTimeout(() => (announcer.textContent = text), 50);
}

export const time = (ms) => new Date(ms).toLocaleString();

/** `text` with every case-insensitive occurrence of `query` wrapped in <mark>. */
export function highlighted(text, query) {
  if (!query) return [text];
  const parts = [];
  const lower = text.toLowerCase();
  const needle = query.toLowerCase();
  let at = 0;
  for (let found = lower.indexOf(needle); found !== -1; found = lower.indexOf(needle, at)) {
    parts.push(text.slice(at, found), h("mark", {}, text.slice(found, found + needle.length)));
    at = found + needle.length;
  }
  parts.push(text.slice(at));
  return parts;
}

/** A button that copies `text`, saying so. */
export function copyButton(text, label) {
  return h(
    "button",
    {
      type: "button",
      class: "small",
      "aria-label": label,
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(text);
          announce("Copied");
        } catch {
          announce("Copying is not allowed here: select the text instead");
        }
      },
    },
    "Copy",
  );
}

/** A value as indented JSON text (undefined as "undefined"). */
export const pretty = (value) => JSON.stringify(value, null, 2) ?? "undefined";

/**
 * Asks before something that cannot be undone, in place: the question and two buttons put in
 * `container` (ids `<id>-yes`, `<id>-no`), the focus on Cancel, Escape cancels. Resolves true
 * when confirmed; the container is emptied and hidden either way.
 */
export function confirmInline(container, { id, question, confirm }) {
  return new Promise((resolve) => {
    const done = (yes) => {
      clear(container);
      container.hidden = true;
      resolve(yes);
    };
    const cancel = h("button", { type: "button", class: "secondary", id: `${id}-no`, onclick: () => done(false) }, "Cancel");
    const box = h(
      "div",
      {
        class: "confirm",
        role: "group",
        "aria-labelledby": `${id}-question`,
        onkeydown: (event) => {
          if (event.key !== "Escape") return;
          event.preventDefault();
          done(false);
        },
      },
      h("p", { id: `${id}-question` }, question),
      h("button", { type: "button", class: "danger", id: `${id}-yes`, onclick: () => done(true) }, confirm),
      " ",
      cancel,
    );
    clear(container).append(box);
    container.hidden = false;
    cancel.focus();
  });
}
