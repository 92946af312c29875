import { describe, expect, it } from 'vitest';
import type { BattleDto, ContestantDto } from '../../ipc';
import { filterBattles, promptHeadline, type HistoryFilter } from './filter';

function contestant(identity: string, model: string, provider: string): ContestantDto {
  return {
    id: `${identity}-${model}`,
    position: 1,
    identity,
    model,
    provider,
    lane: 'local',
    status: 'done',
    error: null,
    attempts: 1,
    started_at: null,
    finished_at: null,
    duration_ms: null,
    ttft_ms: null,
    prompt_tokens: null,
    completion_tokens: null,
    tokens_per_sec: null,
    tokens_per_sec_source: null,
    cached_tokens: null,
    prompt_per_sec: null,
    model_switched: false,
    cost_usd: null,
    output: null,
    reasoning: null,
    truncated: false,
    result_path: null,
    worktree: null,
    diff: null,
    check: null,
    waiting: null,
    rounds: [],
  };
}

function battle(id: string, over: Partial<BattleDto>): BattleDto {
  return {
    id,
    battle_type: 'qa',
    status: 'done',
    prompt: '',
    project: '/p',
    results_path: `/p/Arena/${id}`,
    created_at: '2025-03-01T10:00:00Z',
    finished_at: null,
    winner: null,
    contestants: [],
    base_commit: null,
    check_command: null,
    series_id: null,
    ...over,
  };
}

const battles: BattleDto[] = [
  battle('old', {
    prompt: 'Explain Rust lifetimes',
    created_at: '2025-01-01T09:00:00Z',
    contestants: [contestant('critic', 'qwen3', 'llama-swap')],
  }),
  battle('new', {
    battle_type: 'coding',
    status: 'running',
    prompt: 'Fix the flaky test',
    created_at: '2025-03-01T09:00:00Z',
    contestants: [
      contestant('claude', 'sonnet', 'anthropic'),
      contestant('codex', 'gpt-5', 'openai'),
    ],
  }),
  battle('mid', {
    status: 'error',
    prompt: 'Write a haiku about Rust',
    created_at: '2025-02-01T09:00:00Z',
    contestants: [contestant('poet', 'gemma', 'ollama')],
  }),
];

const all: HistoryFilter = { search: '', battleType: '', status: '' };
const ids = (filter: Partial<HistoryFilter>): string[] =>
  filterBattles(battles, { ...all, ...filter }).map((b) => b.id);

describe('filterBattles', () => {
  it('lists every battle, newest first, without a filter', () => {
    expect(ids({})).toEqual(['new', 'mid', 'old']);
  });

  it('filters by type and by status', () => {
    expect(ids({ battleType: 'qa' })).toEqual(['mid', 'old']);
    expect(ids({ battleType: 'coding' })).toEqual(['new']);
    expect(ids({ status: 'error' })).toEqual(['mid']);
    expect(ids({ battleType: 'coding', status: 'done' })).toEqual([]);
  });

  it('searches the prompt, identities, models and providers, ignoring case', () => {
    expect(ids({ search: 'rust' })).toEqual(['mid', 'old']);
    expect(ids({ search: 'CODEX' })).toEqual(['new']);
    expect(ids({ search: 'gpt-5' })).toEqual(['new']);
    expect(ids({ search: 'llama-swap' })).toEqual(['old']);
    expect(ids({ search: 'critic@qwen3' })).toEqual(['old']);
  });

  it('needs every word of the search somewhere in the battle', () => {
    expect(ids({ search: '  rust   haiku ' })).toEqual(['mid']);
    expect(ids({ search: 'rust ollama' })).toEqual(['mid']);
    expect(ids({ search: 'rust anthropic' })).toEqual([]);
    expect(ids({ search: 'rust', status: 'done' })).toEqual(['old']);
  });

  it('leaves the list it was given in its order', () => {
    filterBattles(battles, all);
    expect(battles.map((b) => b.id)).toEqual(['old', 'new', 'mid']);
  });
});

describe('promptHeadline', () => {
  it('takes the first line with text, trimmed', () => {
    expect(promptHeadline('\n   \n  Fix the bug  \nin main.rs')).toBe('Fix the bug');
    expect(promptHeadline('')).toBe('');
    expect(promptHeadline(' \n ')).toBe('');
  });

  it('cuts a long line with an ellipsis', () => {
    const headline = promptHeadline('x'.repeat(200));
    expect(headline).toHaveLength(140);
    expect(headline.endsWith('…')).toBe(true);
    expect(promptHeadline('abcdefgh', 5)).toBe('abcd…');
  });
});
