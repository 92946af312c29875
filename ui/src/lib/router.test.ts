import { describe, expect, it, vi } from 'vitest';
import { href, navigate, parse, router } from './router.svelte';

// The router reads the location hash and listens for its changes when it is
// imported: give it a window with just those (vi.hoisted runs before the imports).
const page = vi.hoisted(() => {
  const listeners: (() => void)[] = [];
  const fake = {
    location: { hash: '#/leaderboard' },
    addEventListener: (type: string, listener: () => void) => {
      if (type === 'hashchange') {
        listeners.push(listener);
      }
    },
  };
  vi.stubGlobal('window', fake);
  return {
    location: fake.location,
    /** Moves to `hash` as the back button would. */
    go(hash: string): void {
      fake.location.hash = hash;
      for (const listener of listeners) {
        listener();
      }
    },
  };
});

describe('parse', () => {
  it.each([
    ['#/new', { name: 'launcher' }],
    ['', { name: 'launcher' }],
    ['#', { name: 'launcher' }],
    ['#/nowhere', { name: 'launcher' }],
    ['#/history', { name: 'history' }],
    ['#history', { name: 'history' }],
    ['#/leaderboard', { name: 'leaderboard' }],
    ['#/settings', { name: 'settings' }],
    ['#/battle/01J9ZK', { name: 'battle', id: '01J9ZK' }],
    ['#/battle/a%2Fb%20c', { name: 'battle', id: 'a/b c' }],
    ['#/battle/', { name: 'history' }],
    ['#/battle', { name: 'history' }],
    ['#/battle/%', { name: 'history' }],
    ['#/series/0193a2b4', { name: 'series', id: '0193a2b4' }],
    ['#/series/', { name: 'history' }],
    ['#/packs', { name: 'packs', run: null }],
    ['#/packs/0193a2b4', { name: 'packs', run: '0193a2b4' }],
    ['#/packs/%', { name: 'packs', run: null }],
    ['#/new/from/01J9ZK', { name: 'launcher', from: '01J9ZK' }],
    ['#/new/from/', { name: 'launcher' }],
    ['#/new/from/%', { name: 'launcher' }],
  ])('%s shows %o', (hash, route) => {
    expect(parse(hash)).toEqual(route);
  });
});

describe('href', () => {
  it('gives the hash of each screen', () => {
    expect(href({ name: 'launcher' })).toBe('#/new');
    expect(href({ name: 'history' })).toBe('#/history');
    expect(href({ name: 'leaderboard' })).toBe('#/leaderboard');
    expect(href({ name: 'settings' })).toBe('#/settings');
    expect(href({ name: 'battle', id: '01J9ZK' })).toBe('#/battle/01J9ZK');
    expect(href({ name: 'series', id: 's/1' })).toBe('#/series/s%2F1');
    expect(href({ name: 'packs', run: null })).toBe('#/packs');
    expect(href({ name: 'packs', run: 's/1' })).toBe('#/packs/s%2F1');
    expect(href({ name: 'launcher', from: 'b/1' })).toBe('#/new/from/b%2F1');
  });

  it('round-trips through parse, even for an id that needs escaping', () => {
    const route = { name: 'battle', id: 'a/b c#?' } as const;
    expect(href(route)).toBe('#/battle/a%2Fb%20c%23%3F');
    expect(parse(href(route))).toEqual(route);
  });
});

describe('router', () => {
  it('starts on the route of the page’s hash', () => {
    expect(router.route).toEqual({ name: 'leaderboard' });
  });

  it('navigate shows the route and records it in the hash', () => {
    navigate({ name: 'battle', id: 'b1' });
    expect(page.location.hash).toBe('#/battle/b1');
    expect(router.route).toEqual({ name: 'battle', id: 'b1' });
  });

  it('follows the hash when it changes (back and forward)', () => {
    page.go('#/settings');
    expect(router.route).toEqual({ name: 'settings' });
    page.go('#/battle/b2');
    expect(router.route).toEqual({ name: 'battle', id: 'b2' });
  });
});
