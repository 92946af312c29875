import { describe, expect, it } from 'vitest';
import { costView, showsModelLoad } from './numbers';

const cloud = { lane: 'cloud' as const, model: 'gpt-4.1', provider: 'cloud', worktree: null };
const local = { lane: 'local' as const, model: 'qwen3', provider: 'llama', worktree: null };

describe('a contestant cost', () => {
  it('is its amount when known, and free on a local model', () => {
    expect(costView(cloud, 0.0123, 'done')).toMatchObject({ text: '$0.0123', setPrice: false });
    expect(costView(local, 0, 'done')).toMatchObject({ text: '$0', note: 'free, local' });
    expect(costView(local, null, 'done')).toMatchObject({ text: '$0', note: 'free, local' });
  });

  it('asks for a price when a finished cloud model has none', () => {
    const v = costView(cloud, null, 'done');
    expect(v).toMatchObject({ text: 'set a price', setPrice: true });
    expect(v.title).toContain('model = "gpt-4.1"');
  });

  it('is a dash with why while running, after a failure, and for an agent', () => {
    expect(costView(cloud, null, 'running')).toMatchObject({ text: '—', setPrice: false });
    expect(costView(cloud, null, 'error').title).toMatch(/ended before its server reported/);
    const agent = { ...cloud, worktree: '/tmp/w' };
    expect(costView(agent, null, 'done')).toMatchObject({ text: '—', setPrice: false });
  });
});

describe('a model load', () => {
  it('is said beside a first token only', () => {
    expect(showsModelLoad(true, 1200)).toBe(true);
    expect(showsModelLoad(true, null)).toBe(false);
    expect(showsModelLoad(false, 1200)).toBe(false);
  });
});
