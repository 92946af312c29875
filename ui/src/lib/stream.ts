// Streaming text into the DOM. `{text}` in a template replaces a text node's
// whole value on every change, and WebKit then lays the whole text out
// again; appending to the node (`appendData`) tells it where the change
// starts, so only the last lines are laid out. With six panes growing twenty
// times a second that is the difference between keeping up and falling
// behind.
import type { Action } from 'svelte/action';

/** Shows `text` as the element's only content, appending when it only grew. */
export const streamText: Action<HTMLElement, string> = (element, initial) => {
  const node = document.createTextNode(initial);
  element.replaceChildren(node);
  let shown = initial;
  return {
    update(text: string) {
      if (text.length >= shown.length && text.startsWith(shown)) {
        node.appendData(text.slice(shown.length));
      } else {
        node.data = text;
      }
      shown = text;
    },
  };
};
