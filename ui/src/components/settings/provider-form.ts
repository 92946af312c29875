// The provider editor's form, as pure functions: drafts from the settings,
// presets for common servers, validation that names the field, and the
// update `saveSettings` takes. The backend validates again; its message is
// shown when it disagrees.
import type { LaneDto, ProviderInputDto, ProviderKindDto, ProviderSettingsDto } from '../../ipc';

/** The editor's fields; models are one per line. */
export interface ProviderDraft {
  name: string;
  kind: ProviderKindDto;
  baseUrl: string;
  lane: LaneDto;
  apiKeyEnv: string;
  models: string;
  /** Cloud lane: requests at once (text while edited). */
  maxConcurrency: string;
  /** Cloud lane: starts a minute; blank for no limit. */
  requestsPerMinute: string;
}

export interface ProviderDraftErrors {
  name: string | null;
  baseUrl: string | null;
  apiKeyEnv: string | null;
  maxConcurrency: string | null;
  requestsPerMinute: string | null;
}

/** A cloud provider's `max_concurrency` when none is set (as in the engine). */
export const DEFAULT_MAX_CONCURRENCY = 8;

/** Common servers, to start a new provider from. */
export const PRESETS: readonly { label: string; draft: ProviderDraft }[] = [
  {
    label: 'llama.cpp / llama-swap (local)',
    draft: local('llama-swap', 'http://127.0.0.1:8080/v1'),
  },
  { label: 'Ollama (local)', draft: local('ollama', 'http://127.0.0.1:11434/v1') },
  {
    label: 'OpenAI',
    draft: cloud('openai', 'openai', 'https://api.openai.com/v1', 'OPENAI_API_KEY'),
  },
  {
    label: 'Anthropic',
    draft: cloud('anthropic', 'anthropic', 'https://api.anthropic.com/v1', 'ANTHROPIC_API_KEY'),
  },
];

function local(name: string, baseUrl: string): ProviderDraft {
  return { name, kind: 'openai', baseUrl, lane: 'local', apiKeyEnv: '', models: '', ...limits() };
}

function cloud(
  name: string,
  kind: ProviderKindDto,
  baseUrl: string,
  apiKeyEnv: string,
): ProviderDraft {
  return { name, kind, baseUrl, lane: 'cloud', apiKeyEnv, models: '', ...limits() };
}

function limits(): Pick<ProviderDraft, 'maxConcurrency' | 'requestsPerMinute'> {
  return { maxConcurrency: String(DEFAULT_MAX_CONCURRENCY), requestsPerMinute: '' };
}

/** An empty draft for a new provider. */
export function blankDraft(): ProviderDraft {
  return local('', '');
}

/** The draft for editing a configured provider. */
export function draftFrom(p: ProviderSettingsDto): ProviderDraft {
  return {
    name: p.name,
    kind: p.kind,
    baseUrl: p.base_url,
    lane: p.lane,
    apiKeyEnv: p.api_key_env ?? '',
    models: p.models.join('\n'),
    maxConcurrency: String(p.max_concurrency),
    requestsPerMinute: p.requests_per_minute === null ? '' : String(p.requests_per_minute),
  };
}

/** A configured provider, unchanged, as part of an update. */
export function inputFrom(p: ProviderSettingsDto): ProviderInputDto {
  return {
    name: p.name,
    kind: p.kind,
    base_url: p.base_url,
    lane: p.lane,
    api_key_env: p.api_key_env,
    models: p.models,
    max_concurrency: p.max_concurrency,
    requests_per_minute: p.requests_per_minute,
  };
}

/** The draft as part of an update. */
export function toInput(d: ProviderDraft): ProviderInputDto {
  const apiKeyEnv = d.apiKeyEnv.trim();
  return {
    name: d.name.trim(),
    kind: d.kind,
    base_url: d.baseUrl.trim(),
    lane: d.lane,
    api_key_env: apiKeyEnv === '' ? null : apiKeyEnv,
    models: [
      ...new Set(
        d.models
          .split(/[\n,]/)
          .map((m) => m.trim())
          .filter(Boolean),
      ),
    ],
    max_concurrency: wholeNumber(d.maxConcurrency) ?? DEFAULT_MAX_CONCURRENCY,
    requests_per_minute: wholeNumber(d.requestsPerMinute),
  };
}

/** A whole number of at least 1, or `null` (blank or not one). */
function wholeNumber(text: string): number | null {
  const t = text.trim();
  return /^[0-9]+$/.test(t) && Number(t) >= 1 ? Number(t) : null;
}

/** Whether `url` points at this machine (such servers are usually the local lane). */
export function isLoopback(url: string): boolean {
  try {
    const host = new URL(url.trim()).hostname;
    return host === 'localhost' || host === '[::1]' || host.startsWith('127.');
  } catch {
    return false;
  }
}

const ENV_VAR = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** What is wrong with the draft; `otherNames` are the other providers' names. */
export function validateDraft(
  d: ProviderDraft,
  otherNames: readonly string[],
): ProviderDraftErrors {
  const name = d.name.trim();
  const apiKeyEnv = d.apiKeyEnv.trim();
  return {
    name:
      name === ''
        ? 'Give the provider a name'
        : otherNames.includes(name)
          ? `Another provider is already called “${name}”`
          : name.includes('/')
            ? 'Use a name without “/” (a model is named PROVIDER/MODEL when two providers serve it)'
            : null,
    baseUrl: urlError(d.baseUrl.trim()),
    apiKeyEnv:
      apiKeyEnv === '' || ENV_VAR.test(apiKeyEnv)
        ? null
        : 'Letters, digits and “_”, not starting with a digit (e.g. OPENROUTER_API_KEY) — the variable’s name, not the key',
    maxConcurrency:
      wholeNumber(d.maxConcurrency) === null
        ? `A whole number of at least 1 (the default is ${String(DEFAULT_MAX_CONCURRENCY)})`
        : null,
    requestsPerMinute:
      d.requestsPerMinute.trim() === '' || wholeNumber(d.requestsPerMinute) !== null
        ? null
        : 'A whole number of at least 1, or empty for no limit',
  };
}

function urlError(url: string): string | null {
  if (url === '') {
    return 'Enter the API base URL, e.g. http://127.0.0.1:8080/v1';
  }
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:'
      ? null
      : 'Use an http:// or https:// address';
  } catch {
    return 'Not a URL; use e.g. http://127.0.0.1:8080/v1';
  }
}
