import { describe, expect, it } from 'vitest';
import { Agent, type BackendDto } from '../ipc';
import {
  agentDraft,
  agentInput,
  installHint,
  installNote,
  personaDraft,
  personaInput,
  validateAgent,
  validatePersona,
} from './agents';

const backend = (over: Partial<BackendDto>): BackendDto => ({
  name: Agent.Aider,
  program: 'aid',
  installed: false,
  path: null,
  read_only: false,
  custom: false,
  command: [],
  ...over,
});

describe('install hints', () => {
  it('name the command a user runs for each known agent', () => {
    expect(installHint(Agent.ClaudeCode)).toBe('npm install -g @anthropic-ai/claude-code');
    expect(installHint(Agent.Aider)).toBe('pipx install aider-chat');
    expect(installHint(Agent.Native)).toBeNull();
    expect(installNote(backend({ name: Agent.Goose, program: 'gse' }))).toContain('CLI');
    expect(installNote(backend({ name: 'mine', custom: true, program: 'mine' }))).toContain(
      'mine',
    );
    expect(installNote(backend({ installed: true }))).toBeNull();
  });
});

describe('the agent form', () => {
  it('takes one argument per line and needs {prompt}', () => {
    const draft = agentDraft({ name: 'x', command: ['my', '--task', '{prompt}'] });
    expect(draft.command).toBe('my\n--task\n{prompt}');
    expect(validateAgent(draft, [])).toEqual({ name: null, command: null });
    expect(agentInput({ name: ' y ', command: ' a \n\n{prompt}\n' }, 'x')).toEqual({
      previous: 'x',
      name: 'y',
      command: ['a', '{prompt}'],
    });
    expect(validateAgent({ name: 'a b', command: 'a' }, []).name).not.toBeNull();
    expect(validateAgent({ name: 'X', command: 'a' }, ['x']).name).toContain('already');
    expect(validateAgent({ name: 'x', command: 'a' }, []).command).toContain('{prompt}');
  });
});

describe('the persona form', () => {
  it('checks the knobs and the prompt, and converts blanks to null', () => {
    const draft = { ...personaDraft(), name: 'Terse', systemPrompt: 'Be short.' };
    expect(Object.values(validatePersona(draft, ['critic'])).every((e) => e === null)).toBe(true);
    expect(validatePersona({ ...draft, temperature: '3' }, []).temperature).not.toBeNull();
    expect(validatePersona({ ...draft, maxTokens: '1.5' }, []).maxTokens).not.toBeNull();
    expect(validatePersona({ ...draft, systemPrompt: '## x' }, []).systemPrompt).not.toBeNull();
    expect(validatePersona(draft, ['terse']).name).toContain('already');
    const input = personaInput({ ...draft, tools: 'a, ,b', temperature: '0.3' }, null);
    expect(input).toMatchObject({
      previous: null,
      name: 'Terse',
      description: null,
      tools: ['a', 'b'],
      temperature: 0.3,
      top_p: null,
      max_tokens: null,
    });
  });
});
