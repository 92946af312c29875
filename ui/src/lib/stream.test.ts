import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { streamText } from './stream';

/** Just enough of a DOM text node to see how it was changed. */
class FakeText {
  data: string;
  readonly appended: string[] = [];
  constructor(data: string) {
    this.data = data;
  }
  appendData(more: string): void {
    this.appended.push(more);
    this.data += more;
  }
}

/** Just enough of an element: what it contains. */
class FakeElement {
  children: FakeText[] = [];
  replaceChildren(...nodes: FakeText[]): void {
    this.children = nodes;
  }
}

function mount(initial: string): { node: FakeText; update: (text: string) => void } {
  const element = new FakeElement();
  const action = streamText(element as unknown as HTMLElement, initial);
  const node = element.children[0];
  if (!action?.update || element.children.length !== 1 || !node) {
    throw new Error('streamText should show one text node and return an update');
  }
  return { node, update: action.update };
}

describe('streamText', () => {
  beforeEach(() => {
    vi.stubGlobal('document', { createTextNode: (data: string) => new FakeText(data) });
  });

  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('shows the initial text as the element’s only content', () => {
    expect(mount('Hello').node.data).toBe('Hello');
  });

  it('appends only the new part while the text grows', () => {
    const { node, update } = mount('Hel');
    update('Hello');
    update('Hello, world');
    expect(node.appended).toEqual(['lo', ', world']);
    expect(node.data).toBe('Hello, world');
  });

  it('replaces the text when it changed rather than grew, then appends again', () => {
    const { node, update } = mount('half an answer');
    update('');
    expect(node.data).toBe('');
    update('A fresh start');
    expect(node.data).toBe('A fresh start');
    update('Another start');
    expect(node.data).toBe('Another start');
    update('Another start, continued');
    expect(node.data).toBe('Another start, continued');
    expect(node.appended).toEqual(['A fresh start', ', continued']);
  });
});
