import { describe, expect, it } from 'vitest';
import { Agent, BattleType, type LaunchDto, type ProviderModelsDto } from '../ipc';
import { initialForm, modelGroups, newRow, toRequest } from './launcher';
import { launchForm, launchModel } from './rerun';

const provider = (
  name: string,
  lane: 'local' | 'cloud',
  models: string[],
  error: string | null = null,
): ProviderModelsDto => ({
  name,
  kind: 'openai',
  base_url: `http://127.0.0.1/${name}`,
  lane,
  reachable: error === null,
  error,
  models,
});
const groups = modelGroups([
  provider('local', 'local', ['qwen3', 'shared']),
  provider('cloud', 'cloud', ['gpt-4.1', 'shared']),
  provider('down', 'cloud', [], 'refused'),
]);

describe('launchModel', () => {
  it('names a model as the model list does', () => {
    expect(launchModel({ identity: 'x', model: 'qwen3', provider: 'local' }, groups)).toBe('qwen3');
    expect(launchModel({ identity: 'x', model: 'shared', provider: 'cloud' }, groups)).toBe(
      'cloud/shared',
    );
  });

  it('keeps the provider of a model that is not served now, and an agent’s own model as it is', () => {
    expect(launchModel({ identity: 'x', model: 'gone', provider: 'down' }, groups)).toBe(
      'down/gone',
    );
    expect(launchModel({ identity: 'claude', model: 'sonnet', provider: '' }, groups)).toBe(
      'sonnet',
    );
  });
});

describe('launchForm', () => {
  const launch: LaunchDto = {
    battle_id: 'b1',
    battle_type: BattleType.Coding,
    project: '/work/p',
    prompt: 'Fix add().',
    contestants: [
      { identity: Agent.Native, model: 'gpt-4.1', provider: 'cloud' },
      { identity: 'claude', model: 'sonnet', provider: '' },
    ],
    check_command: 'pytest -q',
    blind: true,
    tags: ['rust', 'refactor'],
    base: 'working_tree',
  };

  it('fills in every field the battle was started with', () => {
    const form = launchForm(initialForm(null), launch, groups);
    expect(toRequest(form)).toEqual({
      battle_type: BattleType.Coding,
      project: '/work/p',
      prompt: 'Fix add().',
      contestants: [`${Agent.Native}@gpt-4.1`, 'claude@sonnet'],
      check_command: 'pytest -q',
      blind: true,
      tags: ['rust', 'refactor'],
      base: 'working_tree',
    });
  });

  it('keeps the other battle type’s rows', () => {
    const before = initialForm(null);
    before.contestants.qa = [newRow('Explainer', 'qwen3'), newRow('Critic', 'qwen3')];
    const form = launchForm(before, launch, groups);
    expect(form.contestants.qa.map((r) => r.identity)).toEqual(['Explainer', 'Critic']);
  });
});
