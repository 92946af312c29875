// Agents and personas in Settings: how to install a missing agent, and the
// forms' drafts, their checks and their conversion to the wire input.
import {
  Agent,
  type BackendDto,
  type BackendInputDto,
  type PersonaDto,
  type PersonaInputDto,
} from '../ipc';

/** The command a user runs to install a known agent that is not on PATH
 * (the npm registry for the JavaScript ones, pipx for Aider); `null` when
 * the agent has no one-line install. */
export function installHint(name: string): string | null {
  switch (name) {
    case Agent.ClaudeCode:
      return 'npm install -g @anthropic-ai/claude-code';
    case Agent.OpenCode:
      return 'npm install -g opencode-ai';
    case Agent.Qwen:
      return 'npm install -g @qwen-code/qwen-code';
    case Agent.Codex:
      return 'npm install -g @openai/codex';
    case Agent.Aider:
      return 'pipx install aider-chat';
    default:
      return null;
  }
}

/** Where a missing agent's install is described when it has no one-liner. */
export function installNote(b: BackendDto): string | null {
  if (b.installed || b.program === null) {
    return null;
  }
  if (b.custom) {
    return `Install ${b.program} or fix the command's first word, then reload Settings.`;
  }
  if (b.name === Agent.Goose) {
    return 'Install the goose CLI (see its install guide), then reload Settings.';
  }
  return null;
}

/** The agent form: the command one argument per line. */
export interface AgentDraft {
  name: string;
  command: string;
}

export function agentDraft(b?: { name: string; command: string[] }): AgentDraft {
  return { name: b?.name ?? '', command: (b?.command ?? []).join('\n') };
}

/** The arguments of a draft's command: one per non-blank line. */
export function commandArgs(draft: AgentDraft): string[] {
  return draft.command
    .split('\n')
    .map((a) => a.trim())
    .filter((a) => a !== '');
}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** What is wrong with the draft, by field (the backend checks again). */
export function validateAgent(
  draft: AgentDraft,
  otherNames: readonly string[],
): { name: string | null; command: string | null } {
  const name = draft.name.trim();
  const args = commandArgs(draft);
  let nameError: string | null = null;
  if (name === '') {
    nameError = 'Name the agent.';
  } else if (!NAME.test(name)) {
    nameError = 'Use letters, digits, “.”, “-” and “_” only.';
  } else if (otherNames.some((n) => n.toLowerCase() === name.toLowerCase())) {
    nameError = `“${name}” is already an agent.`;
  }
  let commandError: string | null = null;
  if (args.length === 0) {
    commandError = 'Give the program and its arguments, one per line.';
  } else if (!args.some((a) => a.includes('{prompt}'))) {
    commandError = 'Put {prompt} where the agent takes the task.';
  }
  return { name: nameError, command: commandError };
}

export function agentInput(draft: AgentDraft, previous: string | null): BackendInputDto {
  return { previous, name: draft.name.trim(), command: commandArgs(draft) };
}

/** The persona form, every field as text. */
export interface PersonaDraft {
  name: string;
  description: string;
  tools: string;
  temperature: string;
  topP: string;
  maxTokens: string;
  systemPrompt: string;
}

export function personaDraft(p?: PersonaDto): PersonaDraft {
  return {
    name: p?.name ?? '',
    description: p?.description ?? '',
    tools: (p?.tools ?? []).join(', '),
    temperature: p?.temperature == null ? '' : String(p.temperature),
    topP: p?.top_p == null ? '' : String(p.top_p),
    maxTokens: p?.max_tokens == null ? '' : String(p.max_tokens),
    systemPrompt: p?.system_prompt ?? '',
  };
}

function numberIn(text: string, lo: number, hi: number): number | null | 'bad' {
  const t = text.trim();
  if (t === '') {
    return null;
  }
  const v = Number(t);
  return Number.isFinite(v) && v >= lo && v <= hi ? v : 'bad';
}

export type PersonaErrors = Record<
  'name' | 'temperature' | 'topP' | 'maxTokens' | 'systemPrompt',
  string | null
>;

export function validatePersona(draft: PersonaDraft, otherNames: readonly string[]): PersonaErrors {
  const key = (n: string) => n.trim().toLowerCase().replace(/[ _]/g, '-');
  const name = draft.name.trim();
  const prompt = draft.systemPrompt.trim();
  const max = draft.maxTokens.trim();
  return {
    name:
      name === ''
        ? 'Name the persona.'
        : otherNames.some((n) => key(n) === key(name))
          ? `“${name}” is already a persona.`
          : null,
    temperature:
      numberIn(draft.temperature, 0, 2) === 'bad' ? 'A number from 0 to 2, or empty.' : null,
    topP: numberIn(draft.topP, 0, 1) === 'bad' ? 'A number from 0 to 1, or empty.' : null,
    maxTokens: max !== '' && !/^[1-9][0-9]*$/.test(max) ? 'A whole number, or empty.' : null,
    systemPrompt:
      prompt === ''
        ? 'Say how this persona answers.'
        : prompt.split('\n').some((l) => l.startsWith('## '))
          ? 'A line starting with “## ” would start another persona; use “### ”.'
          : null,
  };
}

export function personaInput(draft: PersonaDraft, previous: string | null): PersonaInputDto {
  const num = (t: string) => (t.trim() === '' ? null : Number(t.trim()));
  return {
    previous,
    name: draft.name.trim(),
    description: draft.description.trim() === '' ? null : draft.description.trim(),
    tools: draft.tools
      .split(',')
      .map((t) => t.trim())
      .filter((t) => t !== ''),
    temperature: num(draft.temperature),
    top_p: num(draft.topP),
    max_tokens: num(draft.maxTokens),
    system_prompt: draft.systemPrompt.trim(),
  };
}
