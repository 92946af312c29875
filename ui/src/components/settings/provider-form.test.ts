import { describe, expect, it } from 'vitest';
import type { ProviderSettingsDto } from '../../ipc';
import {
  blankDraft,
  draftFrom,
  inputFrom,
  isLoopback,
  PRESETS,
  toInput,
  validateDraft,
  type ProviderDraft,
} from './provider-form';

const configured: ProviderSettingsDto = {
  name: 'openrouter',
  kind: 'openai',
  base_url: 'https://openrouter.example/api/v1',
  lane: 'cloud',
  api_key_env: 'OPENROUTER_API_KEY',
  api_key_set: true,
  key_source: 'env',
  models: ['qwen3', 'gpt-5'],
  max_concurrency: 3,
  requests_per_minute: 60,
};

function draft(over: Partial<ProviderDraft> = {}): ProviderDraft {
  return { ...blankDraft(), name: 'local', baseUrl: 'http://127.0.0.1:8080/v1', ...over };
}

const noErrors = {
  name: null,
  baseUrl: null,
  apiKeyEnv: null,
  maxConcurrency: null,
  requestsPerMinute: null,
};

describe('validateDraft', () => {
  it('accepts a complete draft and every preset', () => {
    expect(validateDraft(draft(), [])).toEqual(noErrors);
    for (const preset of PRESETS) {
      expect(validateDraft(preset.draft, []), preset.label).toEqual(noErrors);
    }
  });

  it('asks for a name that is new and has no slash', () => {
    expect(validateDraft(draft({ name: '  ' }), []).name).toBe('Give the provider a name');
    expect(validateDraft(draft({ name: ' ollama ' }), ['ollama', 'openai']).name).toBe(
      'Another provider is already called “ollama”',
    );
    expect(validateDraft(draft({ name: 'my/llama' }), []).name).toMatch(/without “\/”/);
  });

  it('asks for an http(s) base URL', () => {
    const urlError = (baseUrl: string): string | null =>
      validateDraft(draft({ baseUrl }), []).baseUrl;
    expect(urlError('')).toBe('Enter the API base URL, e.g. http://127.0.0.1:8080/v1');
    expect(urlError('localhost:8080')).toBe('Use an http:// or https:// address');
    expect(urlError('ftp://files.example')).toBe('Use an http:// or https:// address');
    expect(urlError('127.0.0.1:8080')).toBe('Not a URL; use e.g. http://127.0.0.1:8080/v1');
    expect(urlError('not a url')).toBe('Not a URL; use e.g. http://127.0.0.1:8080/v1');
    expect(urlError(' https://api.example/v1 ')).toBeNull();
  });

  it('wants the name of the key variable, not the key', () => {
    const envError = (apiKeyEnv: string): string | null =>
      validateDraft(draft({ apiKeyEnv }), []).apiKeyEnv;
    expect(envError('')).toBeNull();
    expect(envError(' MY_KEY_2 ')).toBeNull();
    expect(envError('_private')).toBeNull();
    expect(envError('sk-abc123')).toMatch(/the variable’s name, not the key/);
    expect(envError('2FAST')).not.toBeNull();
    expect(envError('MY KEY')).not.toBeNull();
  });
});

describe('lane limits', () => {
  it('wants whole numbers of at least 1, and no start limit when empty', () => {
    const errors = (maxConcurrency: string, requestsPerMinute: string) => {
      const e = validateDraft(draft({ maxConcurrency, requestsPerMinute }), []);
      return [e.maxConcurrency !== null, e.requestsPerMinute !== null];
    };
    expect(errors('8', '')).toEqual([false, false]);
    expect(errors(' 2 ', '60')).toEqual([false, false]);
    expect(errors('0', '0')).toEqual([true, true]);
    expect(errors('', 'x')).toEqual([true, true]);
    expect(errors('1.5', '-3')).toEqual([true, true]);
    const input = toInput(draft({ maxConcurrency: ' 2 ', requestsPerMinute: '' }));
    expect([input.max_concurrency, input.requests_per_minute]).toEqual([2, null]);
    expect(toInput(draft({ requestsPerMinute: '30' })).requests_per_minute).toBe(30);
  });
});

describe('toInput', () => {
  it('trims, drops an empty key variable and reads one model per line or comma', () => {
    expect(
      toInput(
        draft({
          name: ' local ',
          baseUrl: ' http://127.0.0.1:8080/v1 ',
          apiKeyEnv: '  ',
          models: 'qwen3\n gemma , llama\n\nqwen3,',
        }),
      ),
    ).toEqual({
      name: 'local',
      kind: 'openai',
      base_url: 'http://127.0.0.1:8080/v1',
      lane: 'local',
      api_key_env: null,
      models: ['qwen3', 'gemma', 'llama'],
      max_concurrency: 8,
      requests_per_minute: null,
    });
  });
});

describe('drafts of configured providers', () => {
  it('round-trips through the editor unchanged', () => {
    const d = draftFrom(configured);
    expect(d.models).toBe('qwen3\ngpt-5');
    expect(d.apiKeyEnv).toBe('OPENROUTER_API_KEY');
    expect(toInput(d)).toEqual(inputFrom(configured));
  });

  it('shows a provider without a key variable with an empty field', () => {
    expect(draftFrom({ ...configured, api_key_env: null }).apiKeyEnv).toBe('');
    expect(inputFrom({ ...configured, api_key_env: null }).api_key_env).toBeNull();
  });

  it('never carries the key status into an update', () => {
    expect(Object.keys(inputFrom(configured)).sort()).toEqual([
      'api_key_env',
      'base_url',
      'kind',
      'lane',
      'max_concurrency',
      'models',
      'name',
      'requests_per_minute',
    ]);
  });
});

describe('isLoopback', () => {
  it('knows this machine’s addresses', () => {
    expect(isLoopback('http://localhost:11434/v1')).toBe(true);
    expect(isLoopback(' http://127.0.0.1:8080/v1 ')).toBe(true);
    expect(isLoopback('http://127.1.2.3/v1')).toBe(true);
    expect(isLoopback('http://[::1]:8080/v1')).toBe(true);
  });

  it('says no for other hosts and for what is not a URL', () => {
    expect(isLoopback('https://api.openai.com/v1')).toBe(false);
    expect(isLoopback('http://192.168.1.5:8080/v1')).toBe(false);
    expect(isLoopback('localhost:8080')).toBe(false);
    expect(isLoopback('')).toBe(false);
  });
});
