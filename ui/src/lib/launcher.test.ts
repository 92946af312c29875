import { describe, expect, it } from 'vitest';
import {
  Agent,
  BattleType,
  type BackendDto,
  type PersonaDto,
  type ProviderModelsDto,
} from '../ipc';
import {
  contestantCountError,
  examinerChoices,
  examinerError,
  identityChoices,
  initialForm,
  modelGroups,
  newRow,
  problemCount,
  remember,
  toRequest,
  validate,
  type Available,
  type LauncherForm,
} from './launcher';

const anything: Available = { identities: null, models: null };

function form(over: Partial<LauncherForm> = {}): LauncherForm {
  return {
    battleType: BattleType.Qa,
    project: '/home/me/project',
    prompt: 'Explain monads',
    contestants: {
      [BattleType.Qa]: [newRow('critic', 'qwen3'), newRow('poet', 'qwen3')],
      [BattleType.Coding]: [newRow(), newRow()],
    },
    checkCommand: '',
    blind: false,
    tags: '',
    base: 'head',
    ...over,
  };
}

function qaRows(n: number): LauncherForm {
  const rows = Array.from({ length: n }, (_, i) => newRow(`persona${String(i)}`, 'qwen3'));
  return form({ contestants: { [BattleType.Qa]: rows, [BattleType.Coding]: [] } });
}

function provider(
  name: string,
  models: string[],
  over: Partial<ProviderModelsDto> = {},
): ProviderModelsDto {
  return {
    name,
    kind: 'openai',
    base_url: `http://127.0.0.1/${name}`,
    lane: 'local',
    reachable: true,
    error: null,
    models,
    ...over,
  };
}

describe('validate: contestant count', () => {
  it.each([1, 7])('%i contestants give the count error', (n) => {
    const errors = validate(qaRows(n), anything);
    expect(errors.contestants).toMatch(/A battle needs 2 to 6 contestants/);
    expect(errors.rows).toHaveLength(n);
    expect(errors.rows.every((e) => e === null)).toBe(true);
  });

  it.each([2, 6])('%i contestants are fine', (n) => {
    const errors = validate(qaRows(n), anything);
    expect(errors).toEqual({
      project: null,
      prompt: null,
      contestants: null,
      rows: Array<null>(n).fill(null),
    });
    expect(problemCount(errors)).toBe(0);
  });

  it('says how many to add or remove', () => {
    expect(contestantCountError(0)).toBe('A battle needs 2 to 6 contestants — add 2 more');
    expect(contestantCountError(1)).toBe('A battle needs 2 to 6 contestants — add 1 more');
    expect(contestantCountError(7)).toBe('A battle needs 2 to 6 contestants — remove 1');
    expect(contestantCountError(9)).toBe('A battle needs 2 to 6 contestants — remove 3');
  });

  it('counts the rows of the chosen battle type only', () => {
    const f = form({
      battleType: BattleType.Coding,
      contestants: {
        [BattleType.Qa]: qaRows(2).contestants[BattleType.Qa],
        [BattleType.Coding]: [newRow(Agent.ClaudeCode, 'sonnet')],
      },
    });
    expect(validate(f, anything).contestants).toMatch(/add 1 more/);
  });
});

describe('validate: fields', () => {
  it('asks for the project and the prompt, blank or whitespace alike', () => {
    const errors = validate(form({ project: '  ', prompt: '\n\t' }), anything);
    expect(errors.project).toBe(
      'Choose a project folder — results are written to PROJECT/Arena/',
    );
    expect(errors.prompt).toBe('Write the prompt every contestant gets');
    expect(problemCount(errors)).toBe(2);
  });

  it('asks Coding battles for a git repository', () => {
    const f = form({
      battleType: BattleType.Coding,
      project: '',
      contestants: {
        [BattleType.Qa]: [],
        [BattleType.Coding]: [newRow(Agent.ClaudeCode, 'sonnet'), newRow(Agent.Codex, 'gpt-5')],
      },
    });
    expect(validate(f, anything).project).toBe(
      'Choose the project folder (a git repository) the agents work on',
    );
  });

  it('says what an incomplete row lacks', () => {
    const f = form({
      contestants: {
        [BattleType.Qa]: [newRow(), newRow('critic', ''), newRow('', 'qwen3'), newRow('  ', '  ')],
        [BattleType.Coding]: [],
      },
    });
    expect(validate(f, anything).rows).toEqual([
      'Pick a persona and a model',
      'Pick a model',
      'Pick a persona',
      'Pick a persona and a model',
    ]);
  });

  it('names a backend, not a persona, in a Coding row', () => {
    const f = form({
      battleType: BattleType.Coding,
      contestants: { [BattleType.Qa]: [], [BattleType.Coding]: [newRow(), newRow()] },
    });
    expect(validate(f, anything).rows).toEqual([
      'Pick a backend and a model',
      'Pick a backend and a model',
    ]);
  });

  it('flags a repeated identity@model on the later row, whatever the identity’s case', () => {
    const f = form({
      contestants: {
        [BattleType.Qa]: [
          newRow('critic', 'qwen3'),
          newRow('poet', 'qwen3'),
          newRow('Critic ', 'qwen3'),
          newRow('critic', 'llama'),
        ],
        [BattleType.Coding]: [],
      },
    });
    expect(validate(f, anything).rows).toEqual([
      null,
      null,
      'Critic@qwen3 is already row 1 — pick another persona or model',
      null,
    ]);
  });

  it('flags identities and models that are no longer available', () => {
    const available: Available = {
      identities: new Set(['critic', 'poet']),
      models: new Set(['qwen3']),
    };
    const f = form({
      contestants: {
        [BattleType.Qa]: [
          newRow('critic', 'qwen3'),
          newRow('ghost', 'qwen3'),
          newRow('poet', 'gone'),
        ],
        [BattleType.Coding]: [],
      },
    });
    expect(validate(f, available).rows).toEqual([
      null,
      'There is no persona “ghost” in AGENTS.md any more — pick another',
      'No reachable provider serves “gone” — reload the models or pick another',
    ]);
  });

  it('lets a CLI agent use a model no provider lists, but not the built-in agent', () => {
    const available: Available = {
      identities: new Set([Agent.ClaudeCode, Agent.Native]),
      models: new Set(['qwen3']),
    };
    const f = form({
      battleType: BattleType.Coding,
      contestants: {
        [BattleType.Qa]: [],
        [BattleType.Coding]: [
          newRow(Agent.ClaudeCode, 'opus'),
          newRow(Agent.Native, 'opus'),
          newRow(Agent.Aider, 'qwen3'),
        ],
      },
    });
    expect(validate(f, available).rows).toEqual([
      null,
      'No reachable provider serves “opus” — reload the models or pick another',
      `The backend “${Agent.Aider}” is not installed here — install it or pick another`,
    ]);
  });
});

describe('modelGroups', () => {
  it('names a model PROVIDER/MODEL when two reachable providers serve it', () => {
    const groups = modelGroups([
      provider('llama-swap', ['qwen3', 'gemma']),
      provider('openrouter', ['qwen3', 'gpt-5'], { lane: 'cloud' }),
    ]);
    expect(groups.map((g) => [g.provider, g.lane, g.options.map((o) => o.value)])).toEqual([
      ['llama-swap', 'local', ['llama-swap/qwen3', 'gemma']],
      ['openrouter', 'cloud', ['openrouter/qwen3', 'gpt-5']],
    ]);
    const shared = groups[0]?.options[0];
    expect(shared).toEqual({
      value: 'llama-swap/qwen3',
      label: 'qwen3',
      disabled: false,
      title: 'qwen3 as served by llama-swap',
    });
    expect(groups[0]?.options[1]?.title).toBeNull();
  });

  it('keeps the bare id when the other provider is unreachable, and lists nothing for it', () => {
    const groups = modelGroups([
      provider('llama-swap', ['qwen3']),
      provider('ollama', ['qwen3'], { reachable: false, error: 'connection refused' }),
    ]);
    expect(groups[0]?.options.map((o) => o.value)).toEqual(['qwen3']);
    expect(groups[1]).toEqual({
      provider: 'ollama',
      lane: 'local',
      reachable: false,
      error: 'connection refused',
      options: [],
    });
  });

  it('does not count a model twice when one provider lists it twice', () => {
    const groups = modelGroups([provider('llama-swap', ['qwen3', 'qwen3'])]);
    expect(groups[0]?.options.map((o) => o.value)).toEqual(['qwen3']);
  });
});

describe('identityChoices', () => {
  const personas: PersonaDto[] = [
    {
      name: 'critic',
      description: 'Finds the flaw',
      system_prompt: 'Be critical.',
      tools: [],
      temperature: null,
      top_p: null,
      max_tokens: null,
    },
  ];
  const backends: BackendDto[] = [
    {
      name: Agent.ClaudeCode,
      program: 'claude',
      installed: true,
      path: '/usr/bin/claude',
      read_only: true,
      custom: false,
      command: [],
    },
    {
      name: Agent.Codex,
      program: 'codex-cli',
      installed: false,
      path: null,
      read_only: true,
      custom: false,
      command: [],
    },
  ];

  it('offers personas for Q&A', () => {
    expect(identityChoices(BattleType.Qa, personas, backends)).toEqual([
      { value: 'critic', label: 'critic', disabled: false, title: 'Finds the flaw' },
    ]);
  });

  it('offers backends for Coding, listing missing ones as not selectable', () => {
    expect(identityChoices(BattleType.Coding, personas, backends)).toEqual([
      {
        value: Agent.ClaudeCode,
        label: Agent.ClaudeCode,
        disabled: false,
        title: '/usr/bin/claude',
      },
      {
        value: Agent.Codex,
        label: `${Agent.Codex} — not installed`,
        disabled: true,
        title: 'codex-cli was not found on PATH',
      },
    ]);
  });
});

describe('toRequest', () => {
  it('sends identity@model per row of the chosen type, trimmed', () => {
    const f = form({
      project: ' /home/me/project ',
      contestants: {
        [BattleType.Qa]: [newRow(' critic ', ' qwen3 '), newRow('poet', 'llama-swap/qwen3')],
        [BattleType.Coding]: [newRow(Agent.ClaudeCode, 'sonnet')],
      },
      checkCommand: 'cargo test',
    });
    expect(toRequest(f)).toEqual({
      battle_type: BattleType.Qa,
      project: '/home/me/project',
      prompt: 'Explain monads',
      contestants: ['critic@qwen3', 'poet@llama-swap/qwen3'],
      check_command: null,
      blind: false,
      tags: [],
      base: 'head',
    });
  });

  it('sends the blind switch and the tags, trimmed, without blanks or repeats', () => {
    const request = toRequest(form({ blind: true, tags: ' rust, , math ,Rust,  ' }));
    expect(request.blind).toBe(true);
    expect(request.tags).toEqual(['rust', 'math']);
    expect(toRequest(form()).blind).toBe(false);
  });

  it('sends the check command for Coding only when there is one', () => {
    const coding = (checkCommand: string): LauncherForm =>
      form({
        battleType: BattleType.Coding,
        contestants: {
          [BattleType.Qa]: [],
          [BattleType.Coding]: [newRow(Agent.ClaudeCode, 'sonnet'), newRow(Agent.Codex, 'gpt-5')],
        },
        checkCommand,
      });
    expect(toRequest(coding('  cargo test ')).check_command).toBe('cargo test');
    expect(toRequest(coding('   ')).check_command).toBeNull();
  });
});

/** A Storage kept in memory. */
class MemoryStorage implements Storage {
  readonly items = new Map<string, string>();
  get length(): number {
    return this.items.size;
  }
  clear(): void {
    this.items.clear();
  }
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  key(index: number): string | null {
    return [...this.items.keys()][index] ?? null;
  }
  removeItem(key: string): void {
    this.items.delete(key);
  }
  setItem(key: string, value: string): void {
    this.items.set(key, value);
  }
}

describe('remembering the launcher', () => {
  const rows = (f: LauncherForm): { identity: string; model: string }[][] =>
    [f.contestants[BattleType.Qa], f.contestants[BattleType.Coding]].map((list) =>
      list.map(({ identity, model }) => ({ identity, model })),
    );

  it('opens with two empty Q&A rows the first time', () => {
    const f = initialForm(new MemoryStorage());
    expect(f.battleType).toBe(BattleType.Qa);
    expect(f.project).toBe('');
    expect(f.blind).toBe(false);
    expect(f.tags).toBe('');
    expect(rows(f)).toEqual([
      [
        { identity: '', model: '' },
        { identity: '', model: '' },
      ],
      [
        { identity: '', model: '' },
        { identity: '', model: '' },
      ],
    ]);
    expect(initialForm(null).contestants[BattleType.Qa]).toHaveLength(2);
  });

  it('reopens with what was last started, except the prompt', () => {
    const storage = new MemoryStorage();
    const started = form({
      battleType: BattleType.Coding,
      project: ' /srv/repo ',
      contestants: {
        [BattleType.Qa]: [
          newRow('critic', 'qwen3'),
          newRow('poet', 'qwen3'),
          newRow('sage', 'gemma'),
        ],
        [BattleType.Coding]: [newRow(Agent.ClaudeCode, 'sonnet'), newRow(Agent.Codex, 'gpt-5')],
      },
      checkCommand: ' make test ',
    });
    remember(storage, started);
    const f = initialForm(storage);
    expect(f).toMatchObject({
      battleType: BattleType.Coding,
      project: '/srv/repo',
      prompt: '',
      checkCommand: 'make test',
    });
    expect(rows(f)).toEqual(rows(started));
    const keys = [...f.contestants[BattleType.Qa], ...f.contestants[BattleType.Coding]].map(
      (r) => r.key,
    );
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('ignores a saved value it cannot read', () => {
    const storage = new MemoryStorage();
    storage.setItem('arena.launcher.v1', '{not json');
    expect(initialForm(storage).battleType).toBe(BattleType.Qa);

    storage.setItem(
      'arena.launcher.v1',
      JSON.stringify({
        battleType: 'chess',
        project: 42,
        contestants: {
          [BattleType.Qa]: [{ identity: 'critic', model: 'qwen3' }, { identity: 1 }, null],
        },
      }),
    );
    const f = initialForm(storage);
    expect(f.battleType).toBe(BattleType.Qa);
    expect(f.project).toBe('');
    expect(rows(f)[0]).toEqual([{ identity: 'critic', model: 'qwen3' }]);
    expect(rows(f)[1]).toHaveLength(2);
  });

  it('starts blank when storage refuses to save', () => {
    const full = new MemoryStorage();
    full.setItem = () => {
      throw new Error('QuotaExceededError');
    };
    expect(() => {
      remember(full, form());
    }).not.toThrow();
    expect(initialForm(full).project).toBe('');
  });
});

describe('the examiner', () => {
  const persona: PersonaDto = {
    name: 'critic',
    description: 'finds faults',
    system_prompt: 'You find faults.',
    tools: [],
    temperature: null,
    top_p: null,
    max_tokens: null,
  };
  const agent = (name: string, installed: boolean, readOnly: boolean): BackendDto => ({
    name,
    program: name,
    installed,
    path: installed ? `/bin/${name}` : null,
    read_only: readOnly,
    custom: false,
    command: [],
  });

  it('is a persona or an installed agent that can examine', () => {
    const choices = examinerChoices(
      [persona],
      [
        agent(Agent.Native, true, true),
        agent(Agent.Qwen, true, true),
        agent(Agent.Codex, false, true),
        agent('x', true, false),
      ],
    );
    expect(choices.map((c) => [c.value, c.disabled])).toEqual([
      ['critic', false],
      [Agent.Qwen, false],
      [Agent.Codex, true],
    ]);
    expect(choices.map((c) => c.label)).toEqual([
      'critic',
      `${Agent.Qwen} (agent)`,
      `${Agent.Codex} (agent) — not installed`,
    ]);
  });

  it('needs both an identity and a model', () => {
    expect(examinerError('', '')).toBe('Pick a persona or agent and a model');
    expect(examinerError('', 'm')).toBe('Pick the persona or agent that examines');
    expect(examinerError('critic', ' ')).toBe('Pick the examiner’s model');
    expect(examinerError('critic', 'm')).toBeNull();
  });
});
