// The launcher's form, as pure functions: what the choices are, what is wrong
// with the form, what it sends, and what is remembered between launches.
// Launcher.svelte renders these; nothing here touches the DOM or the backend.
import {
  Agent,
  BATTLE_TYPES,
  BattleType,
  battleTypeInfo,
  type BackendDto,
  type BaseChoiceDto,
  type BattleTypeDto,
  type LaneDto,
  type PersonaDto,
  type ProviderModelsDto,
  type StartBattleRequest,
} from '../ipc';
import { parseTags } from './blind';

export const MIN_CONTESTANTS = 2;
export const MAX_CONTESTANTS = 6;

/** One contestant row: an identity (persona or backend) and a model id. */
export interface ContestantRow {
  /** Stable within the page, for keyed rendering. */
  key: number;
  identity: string;
  model: string;
  /** The user has left one of its fields, so its error may show. */
  touched: boolean;
}

let lastKey = 0;

/** A fresh row. */
export function newRow(identity = '', model = ''): ContestantRow {
  lastKey += 1;
  return { key: lastKey, identity, model, touched: false };
}

/** The launcher's fields. Rows are kept per battle type, so switching back and forth loses nothing. */
export interface LauncherForm {
  battleType: BattleTypeDto;
  project: string;
  prompt: string;
  contestants: Record<BattleTypeDto, ContestantRow[]>;
  checkCommand: string;
  /** Show the contestants as A, B, … until the user votes. */
  blind: boolean;
  /** Comma-separated. */
  tags: string;
  /** Coding: start from HEAD, or from the working tree as it is. */
  base: BaseChoiceDto;
}

/** An option of an identity or model select. */
export interface Choice {
  value: string;
  label: string;
  /** Listed but not selectable (a backend that is not installed). */
  disabled: boolean;
  /** Extra detail for a tooltip. */
  title: string | null;
}

/** A change of an identity-and-model picker. */
export interface PickChange {
  identity?: string;
  model?: string;
  /** The user has left one of its fields. */
  touched?: boolean;
}

/** The models of one provider, for an `<optgroup>`. */
export interface ModelGroup {
  provider: string;
  lane: LaneDto;
  reachable: boolean;
  error: string | null;
  options: Choice[];
}

/** Personas for Q&A, backends for Coding. */
export function identityChoices(
  battleType: BattleTypeDto,
  personas: readonly PersonaDto[],
  backends: readonly BackendDto[],
): Choice[] {
  if (!battleTypeInfo(battleType).takes_agents) {
    return personas.map((p) => ({
      value: p.name,
      label: p.name,
      disabled: false,
      title: p.description,
    }));
  }
  return backends.map((b) => ({
    value: b.name,
    label: b.installed ? b.name : `${b.name} — not installed`,
    disabled: !b.installed,
    title: b.installed ? b.path : `${b.program ?? b.name} was not found on PATH`,
  }));
}

/**
 * Model options grouped by provider. The value is the model id as `arena`
 * accepts it: the bare id, or `PROVIDER/MODEL` when more than one reachable
 * provider serves that id (a bare id would go to the first of them).
 */
export function modelGroups(providers: readonly ProviderModelsDto[]): ModelGroup[] {
  const servedBy = new Map<string, number>();
  for (const p of providers) {
    if (p.reachable) {
      for (const m of new Set(p.models)) {
        servedBy.set(m, (servedBy.get(m) ?? 0) + 1);
      }
    }
  }
  return providers.map((p) => ({
    provider: p.name,
    lane: p.lane,
    reachable: p.reachable,
    error: p.error,
    options: p.reachable
      ? [...new Set(p.models)].map((m) => {
          const shared = (servedBy.get(m) ?? 0) > 1;
          return {
            value: shared ? `${p.name}/${m}` : m,
            label: m,
            disabled: false,
            title: shared ? `${m} as served by ${p.name}` : null,
          };
        })
      : [],
  }));
}

/** What is wrong with the form; `null` where nothing is. */
export interface LauncherErrors {
  project: string | null;
  prompt: string | null;
  contestants: string | null;
  /** One entry per contestant row of the current battle type. */
  rows: (string | null)[];
}

/**
 * What the selects may hold, once loaded (`null` while loading or when the
 * list could not be loaded, so nothing is flagged that cannot be checked).
 */
export interface Available {
  identities: ReadonlySet<string> | null;
  models: ReadonlySet<string> | null;
}

/** The message for a contestant count outside 2–6, else `null`. */
export function contestantCountError(n: number): string | null {
  const range = `A battle needs ${String(MIN_CONTESTANTS)} to ${String(MAX_CONTESTANTS)} contestants`;
  if (n < MIN_CONTESTANTS) {
    return `${range} — add ${String(MIN_CONTESTANTS - n)} more`;
  }
  if (n > MAX_CONTESTANTS) {
    return `${range} — remove ${String(n - MAX_CONTESTANTS)}`;
  }
  return null;
}

function rowError(
  row: ContestantRow,
  battleType: BattleTypeDto,
  available: Available,
  firstRowOf: Map<string, number>,
  index: number,
): string | null {
  const agents = battleTypeInfo(battleType).takes_agents;
  const noun = agents ? 'backend' : 'persona';
  const identity = row.identity.trim();
  const model = row.model.trim();
  if (!identity && !model) {
    return `Pick a ${noun} and a model`;
  }
  if (!identity) {
    return `Pick a ${noun}`;
  }
  if (!model) {
    return 'Pick a model';
  }
  if (available.identities && !available.identities.has(identity)) {
    return agents
      ? `The backend “${identity}” is not installed here — install it or pick another`
      : `There is no persona “${identity}” in AGENTS.md any more — pick another`;
  }
  // A CLI agent may use a model from its own configuration; the built-in
  // agent and personas need a model a provider serves.
  const needsServedModel = !agents || identity === Agent.Native;
  if (needsServedModel && available.models && !available.models.has(model)) {
    return `No reachable provider serves “${model}” — reload the models or pick another`;
  }
  const key = `${identity.toLowerCase()}@${model}`;
  const first = firstRowOf.get(key);
  if (first !== undefined && first !== index) {
    return `${identity}@${model} is already row ${String(first + 1)} — pick another ${noun} or model`;
  }
  return null;
}

/** Validates the whole form, against what is available. */
export function validate(form: LauncherForm, available: Available): LauncherErrors {
  const rows = form.contestants[form.battleType];
  const firstRowOf = new Map<string, number>();
  rows.forEach((row, i) => {
    const key = `${row.identity.trim().toLowerCase()}@${row.model.trim()}`;
    if (!firstRowOf.has(key)) {
      firstRowOf.set(key, i);
    }
  });
  return {
    project: form.project.trim()
      ? null
      : battleTypeInfo(form.battleType).has_worktrees
        ? 'Choose the project folder (a git repository) the agents work on'
        : 'Choose a project folder — results are written to PROJECT/Arena/',
    prompt: form.prompt.trim() ? null : 'Write the prompt every contestant gets',
    contestants: contestantCountError(rows.length),
    rows: rows.map((row, i) => rowError(row, form.battleType, available, firstRowOf, i)),
  };
}

/** How many problems `errors` lists. */
export function problemCount(errors: LauncherErrors): number {
  const fields = [errors.project, errors.prompt, errors.contestants, ...errors.rows];
  return fields.filter((e) => e !== null).length;
}

/** The request for a valid form. */
export function toRequest(form: LauncherForm): StartBattleRequest {
  const check = form.checkCommand.trim();
  return {
    battle_type: form.battleType,
    project: form.project.trim(),
    prompt: form.prompt,
    contestants: form.contestants[form.battleType].map(
      (c) => `${c.identity.trim()}@${c.model.trim()}`,
    ),
    check_command: battleTypeInfo(form.battleType).judged_by_check && check ? check : null,
    blind: form.blind,
    tags: parseTags(form.tags),
    base: battleTypeInfo(form.battleType).has_worktrees ? form.base : 'head',
  };
}

/** One value for each battle type. */
function perBattleType<T>(value: (type: BattleTypeDto) => T): Record<BattleTypeDto, T> {
  return Object.fromEntries(BATTLE_TYPES.map(({ id }) => [id, value(id)])) as Record<
    BattleTypeDto,
    T
  >;
}

// Remembered between launches: the project and the contestants (per type).

const STORAGE_KEY = 'arena.launcher.v1';

interface Saved {
  battleType: BattleTypeDto;
  project: string;
  contestants: Record<BattleTypeDto, { identity: string; model: string }[]>;
  checkCommand: string;
}

/** The form a launcher opens with: what was last started, else two empty rows. */
export function initialForm(storage: Storage | null): LauncherForm {
  const blank = (): ContestantRow[] => [newRow(), newRow()];
  const form: LauncherForm = {
    battleType: BattleType.Qa,
    project: '',
    prompt: '',
    contestants: perBattleType(blank),
    checkCommand: '',
    blind: false,
    base: 'head',
    tags: '',
  };
  const saved = readSaved(storage);
  if (!saved) {
    return form;
  }
  form.battleType = saved.battleType;
  form.project = saved.project;
  form.checkCommand = saved.checkCommand;
  for (const { id: type } of BATTLE_TYPES) {
    const rows = saved.contestants[type];
    if (rows.length > 0) {
      form.contestants[type] = rows.map((r) => newRow(r.identity, r.model));
    }
  }
  return form;
}

/** Remembers a started battle's project, type, contestants and check command. */
export function remember(storage: Storage | null, form: LauncherForm): void {
  const rows = (type: BattleTypeDto): Saved['contestants'][BattleTypeDto] =>
    form.contestants[type].map(({ identity, model }) => ({ identity, model }));
  const saved: Saved = {
    battleType: form.battleType,
    project: form.project.trim(),
    contestants: perBattleType(rows),
    checkCommand: form.checkCommand.trim(),
  };
  try {
    storage?.setItem(STORAGE_KEY, JSON.stringify(saved));
  } catch {
    // Storage full or disabled: the launcher simply starts blank next time.
  }
}

function readSaved(storage: Storage | null): Saved | null {
  let value: unknown;
  try {
    value = JSON.parse(storage?.getItem(STORAGE_KEY) ?? 'null');
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) {
    return null;
  }
  const record = value as Record<string, unknown>;
  const contestants = (record.contestants ?? {}) as Record<string, unknown>;
  return {
    battleType: BATTLE_TYPES.find((t) => t.id === record.battleType)?.id ?? BattleType.Qa,
    project: typeof record.project === 'string' ? record.project : '',
    checkCommand: typeof record.checkCommand === 'string' ? record.checkCommand : '',
    contestants: perBattleType((type) => readRows(contestants[type])),
  };
}

function readRows(value: unknown): Saved['contestants'][BattleTypeDto] {
  if (!Array.isArray(value)) {
    return [];
  }
  return value.flatMap((row: unknown) => {
    if (typeof row !== 'object' || row === null) {
      return [];
    }
    const { identity, model } = row as Record<string, unknown>;
    return typeof identity === 'string' && typeof model === 'string' ? [{ identity, model }] : [];
  });
}

/** `localStorage`, or `null` where the webview refuses it. */
export function browserStorage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

// The examiner of a cross-examination: a persona or an agent that can
// examine (read-only in its sandbox), with a model.

/** Personas, then the installed agents that can cross-examine. */
export function examinerChoices(
  personas: readonly PersonaDto[],
  backends: readonly BackendDto[],
): Choice[] {
  return [
    ...personas.map((p) => ({
      value: p.name,
      label: p.name,
      disabled: false,
      title: p.description,
    })),
    ...backends
      .filter((b) => b.read_only && b.name !== Agent.Native)
      .map((b) => ({
        value: b.name,
        label: b.installed ? `${b.name} (agent)` : `${b.name} (agent) — not installed`,
        disabled: !b.installed,
        title: b.installed ? b.path : `${b.program ?? b.name} was not found on PATH`,
      })),
  ];
}

/** What is wrong with the examiner; `null` when it can start. */
export function examinerError(identity: string, model: string): string | null {
  if (!identity.trim()) {
    return model.trim()
      ? 'Pick the persona or agent that examines'
      : 'Pick a persona or agent and a model';
  }
  return model.trim() ? null : 'Pick the examiner’s model';
}
