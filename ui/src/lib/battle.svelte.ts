// The live state of one battle, for the battle view.
//
// The view starts from a snapshot (`getBattle`) and then replays the battle's
// journal from its first event and follows it live (`subscribeBattle(id, 0)`).
// The snapshot carries what events do not (outputs once finished, diff
// stats, check results, analysis reasons); the events carry what no snapshot
// has (streaming text, live benchmarks, tool calls, changed files).
//
// `applyEvent` is the reducer: a plain function over plain data. It mutates
// in place so that, on Svelte's reactive proxy, appending a delta updates one
// text node and nothing else re-renders.
//
// Replayed events may be older than the snapshot, which must never move
// backwards: every snapshot carries `lastSeq`, the newest event it already
// reflects, and a state that can change back and forth (a contestant's
// status, the winner) remembers the `seq` it is as of and only takes newer
// events or newer snapshots. Text events (output, reasoning, tool calls …)
// build what no snapshot holds, so they always apply; a battle, analysis or
// cross-examination that finished stays finished.

import {
  getBattle,
  reveal,
  setTags,
  setWinner,
  subscribeBattle,
  toIpcError,
  vote,
  type AnalysisDto,
  type AnalysisStatusDto,
  type BattleDetailDto,
  type BattleEventDto,
  type BattleStatusDto,
  type BenchmarkDto,
  type CheckResultDto,
  type ContestantDto,
  type ContestantStatusDto,
  type DiffSummaryDto,
  type IpcError,
  type OutcomeDto,
  type RoundDto,
  type VoteDto,
  type WinnerDto,
} from '../ipc';
import { Call } from './call.svelte';
import { elapsedMs, numberedName } from './format';

/** A tool call of a Coding agent, in the round it was made in. */
export interface ToolCall {
  name: string;
  summary: string;
  ok: boolean;
  round: number;
}

/** The last retry of a contestant: which attempt comes next, when and why. */
export interface RetryNote {
  attempt: number;
  delayMs: number;
  reason: string;
}

/** A refinement round as seen in events. */
export interface RoundLive {
  /** `null` while it runs. */
  status: ContestantStatusDto | null;
  feedback: string | null;
  /** Its streamed output. */
  output: string;
}

export interface ContestantLive {
  status: ContestantStatusDto;
  /** The event (or snapshot) `seq` that `status`, `error` and the times are as of. */
  seq: number;
  /** How many times it started running (the engine's `attempts`). */
  attempt: number;
  error: string | null;
  /** While queued: why it waits (its lane is busy, and who holds it). */
  waiting: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** Streamed answer of its own run (refinement rounds stream into `rounds`). */
  output: string;
  reasoning: string;
  /** Why its streamed text was last discarded (a retry or a resume). */
  resetReason: string | null;
  retry: RetryNote | null;
  /** The latest live figures. */
  benchmark: BenchmarkDto | null;
  tools: ToolCall[];
  /** The files it touched in this round, each once (the first 1,000). */
  changedFiles: string[];
  /** How many distinct files it touched in this round (up to 100,000). */
  changedTotal: number;
  /** The refinement round streaming now. */
  round: number | null;
  rounds: Record<number, RoundLive>;
}

export interface AnalysisLive {
  status: AnalysisStatusDto;
  outcome: OutcomeDto | null;
  winner: string | null;
  error: string | null;
  /** Streamed judge text by stage (`digest <contestant id>`, `judge 1`, …), in order. */
  stages: Record<string, string>;
}

export interface CrossExamLive {
  number: number;
  status: AnalysisStatusDto;
  error: string | null;
  output: string;
}

export interface Live {
  status: BattleStatusDto;
  winner: WinnerDto | null;
  /** The event (or snapshot) `seq` that `winner` is as of. */
  winnerSeq: number;
  contestants: Record<string, ContestantLive>;
  analyses: Record<string, AnalysisLive>;
  crossExams: Record<string, CrossExamLive>;
}

export function isTerminal(status: ContestantStatusDto | BattleStatusDto): boolean {
  return status === 'done' || status === 'error' || status === 'cancelled';
}

/** Names contestants by id as `#position identity@model`; an unknown id stays as it is. */
export function namesById(
  contestants: readonly ContestantDto[],
): (id: string | null | undefined) => string {
  return (id) => {
    const c = contestants.find((x) => x.id === id);
    return c ? numberedName(c) : (id ?? '—');
  };
}

/**
 * The status of an analysis or cross-examination from the snapshot and the
 * events together: the events may be ahead of the snapshot, so a finished
 * status seen in them wins.
 */
export function newestStatus(
  stored: AnalysisStatusDto | undefined,
  live: AnalysisStatusDto | undefined,
): AnalysisStatusDto | undefined {
  return live !== undefined && live !== 'running' ? live : (stored ?? live);
}

/** The newest analysis of a battle, from the snapshot and the events. */
export interface CurrentAnalysis {
  id: string;
  /** Its stored record, when the snapshot holds this one. */
  record: AnalysisDto | null;
  /** What its events told. */
  progress: AnalysisLive | undefined;
  status: AnalysisStatusDto | undefined;
}

/** The newest analysis (ids are UUID v7: the greatest is the newest). */
export function currentAnalysis(
  stored: AnalysisDto | null,
  live: Record<string, AnalysisLive>,
): CurrentAnalysis | null {
  const id = [...Object.keys(live), ...(stored ? [stored.id] : [])].sort().at(-1);
  if (id === undefined) {
    return null;
  }
  const record = stored && stored.id === id ? stored : null;
  const progress = live[id];
  return { id, record, progress, status: newestStatus(record?.status, progress?.status) };
}

/**
 * While the judge works: "Judging… (judge-model, digest of #1 a@m)", the
 * stage being the one it streams now; `null` when no analysis runs.
 */
export function judgingLine(
  current: CurrentAnalysis | null,
  name: (id: string | null | undefined) => string,
): string | null {
  if (current?.status !== 'running') {
    return null;
  }
  const stage = Object.keys(current.progress?.stages ?? {}).at(-1);
  const parts = [
    current.record ? current.record.model : null,
    stage === undefined ? null : stageTitle(stage, name).toLowerCase(),
  ].filter((p): p is string => p !== null);
  return parts.length > 0 ? `Judging… (${parts.join(', ')})` : 'Judging…';
}

/** `digest <contestant id>` → "Digest of #1 a@m"; `judge 1` → "Judge run 1". */
export function stageTitle(stage: string, name: (id: string | null | undefined) => string): string {
  if (stage.startsWith('digest ')) {
    return `Digest of ${name(stage.slice('digest '.length))}`;
  }
  if (stage.startsWith('judge ')) {
    return `Judge run ${stage.slice('judge '.length)}`;
  }
  return stage;
}

function contestantFrom(c: ContestantDto, seq: number): ContestantLive {
  return {
    status: c.status,
    seq,
    attempt: c.attempts,
    error: c.error,
    waiting: c.waiting,
    startedAt: c.started_at,
    finishedAt: c.finished_at,
    output: '',
    reasoning: '',
    resetReason: null,
    retry: null,
    benchmark: null,
    tools: [],
    changedFiles: [],
    changedTotal: 0,
    round: null,
    rounds: {},
  };
}

/** The live state as a snapshot shows it, before any event. */
export function liveFrom(detail: BattleDetailDto): Live {
  const live: Live = {
    status: detail.status,
    winner: detail.winner,
    winnerSeq: detail.last_seq,
    contestants: {},
    analyses: {},
    crossExams: {},
  };
  for (const c of detail.contestants) {
    live.contestants[c.id] = contestantFrom(c, detail.last_seq);
  }
  return live;
}

/** Takes what a newer snapshot knows into `live`, never moving anything backwards. */
export function mergeSnapshot(live: Live, detail: BattleDetailDto): void {
  const seq = detail.last_seq;
  if (isTerminal(detail.status)) {
    live.status = detail.status;
  }
  if (seq >= live.winnerSeq) {
    live.winner = detail.winner;
    live.winnerSeq = seq;
  }
  for (const c of detail.contestants) {
    const current = live.contestants[c.id];
    if (!current) {
      live.contestants[c.id] = contestantFrom(c, seq);
    } else if (seq >= current.seq) {
      current.seq = seq;
      current.status = c.status;
      current.attempt = c.attempts;
      current.error = c.error;
      current.waiting = c.waiting;
      current.startedAt = c.started_at;
      current.finishedAt = c.finished_at;
    }
  }
}

/** What to do after an event. */
export interface Followup {
  /** Fetch the battle again: something the snapshot holds has changed. */
  refetch: boolean;
}

/** Applies one event to `live`. */
export function applyEvent(live: Live, event: BattleEventDto): Followup {
  const id = event.contestant_id;
  const c = id === null ? undefined : live.contestants[id];
  switch (event.type) {
    case 'battle_status':
      if (!isTerminal(live.status)) {
        live.status = event.status;
      }
      return { refetch: isTerminal(event.status) };
    case 'contestant_status':
      if (c && event.seq > c.seq) {
        c.seq = event.seq;
        c.status = event.status;
        c.attempt = event.attempt;
        c.error = event.error;
        c.waiting = null;
        if (event.status === 'running') {
          c.startedAt = event.at;
          c.finishedAt = null;
          c.retry = null;
        } else if (isTerminal(event.status)) {
          c.finishedAt = event.at;
        }
      }
      return { refetch: isTerminal(event.status) };
    case 'output':
      if (c) {
        const round = c.round === null ? undefined : c.rounds[c.round];
        if (round) {
          round.output += event.text;
        } else {
          c.output += event.text;
        }
      }
      return { refetch: false };
    case 'reasoning':
      if (c) {
        c.reasoning += event.text;
      }
      return { refetch: false };
    case 'folded':
      // The whole answer, which the journal keeps instead of its deltas.
      if (c) {
        c.output = event.output;
        c.reasoning = event.reasoning;
      }
      return { refetch: false };
    case 'reset':
      if (c) {
        const round = c.round === null ? undefined : c.rounds[c.round];
        if (round) {
          round.output = '';
        } else {
          c.output = '';
          c.reasoning = '';
        }
        c.resetReason = event.reason;
      }
      return { refetch: false };
    case 'waiting':
      if (c && event.seq > c.seq) {
        c.seq = event.seq;
        c.waiting = event.reason;
      }
      return { refetch: false };
    case 'retry':
      if (c) {
        c.retry = { attempt: event.attempt, delayMs: event.delay_ms, reason: event.reason };
      }
      return { refetch: false };
    case 'benchmark':
      if (c) {
        c.benchmark = event.benchmark;
      }
      return { refetch: false };
    case 'tool':
      if (c) {
        c.tools.push({
          name: event.name,
          summary: event.summary,
          ok: event.ok,
          round: c.round ?? 1,
        });
      }
      return { refetch: false };
    case 'changed_files':
      if (c) {
        if (event.total === null) {
          // An older Arena's event: the whole list so far.
          c.changedFiles = event.files;
          c.changedTotal = event.files.length;
        } else {
          c.changedFiles.push(...event.files);
          c.changedTotal = event.total;
        }
      }
      return { refetch: false };
    case 'round':
      if (c) {
        if (event.status === null) {
          c.rounds[event.number] = { status: null, feedback: event.feedback, output: '' };
          c.round = event.number;
          c.changedFiles = [];
          c.changedTotal = 0;
        } else {
          const round = c.rounds[event.number];
          if (round) {
            round.status = event.status;
          } else {
            c.rounds[event.number] = { status: event.status, feedback: null, output: '' };
          }
          if (c.round === event.number) {
            c.round = null;
          }
        }
      }
      return { refetch: true };
    case 'winner':
      if (event.seq > live.winnerSeq) {
        live.winner = event.winner;
        live.winnerSeq = event.seq;
      }
      return { refetch: true };
    case 'analysis_status': {
      const a = live.analyses[event.analysis_id];
      if (!a) {
        live.analyses[event.analysis_id] = {
          status: event.status,
          outcome: event.outcome,
          winner: event.winner,
          error: event.error,
          stages: {},
        };
      } else if (a.status === 'running') {
        a.status = event.status;
        a.outcome = event.outcome;
        a.winner = event.winner;
        a.error = event.error;
      }
      return { refetch: true };
    }
    case 'analysis_output': {
      const a = (live.analyses[event.analysis_id] ??= {
        status: 'running',
        outcome: null,
        winner: null,
        error: null,
        stages: {},
      });
      a.stages[event.stage] = (a.stages[event.stage] ?? '') + event.text;
      return { refetch: false };
    }
    case 'cross_exam_status': {
      const x = live.crossExams[event.cross_exam_id];
      if (!x) {
        live.crossExams[event.cross_exam_id] = {
          number: event.number,
          status: event.status,
          error: event.error,
          output: '',
        };
      } else if (x.status === 'running') {
        x.status = event.status;
        x.error = event.error;
      }
      return { refetch: true };
    }
    case 'cross_exam_output': {
      const x = (live.crossExams[event.cross_exam_id] ??= {
        number: 0,
        status: 'running',
        error: null,
        output: '',
      });
      x.output += event.text;
      return { refetch: false };
    }
    case 'result_written':
      return { refetch: true };
    case 'revealed':
      // A blind battle's names, speeds and analysis are in the snapshot only.
      return { refetch: true };
  }
}

/** How long to gather events that call for a refetch before fetching once. */
const REFETCH_DEBOUNCE_MS = 150;

/** The winner the engine settles on when the user's choice is cleared. */
function analysisWinner(detail: BattleDetailDto): WinnerDto | null {
  const a = detail.analysis;
  if (a?.winner && (a.outcome === 'winner' || a.outcome === 'walkover')) {
    return { contestant_id: a.winner, source: 'analysis' };
  }
  return null;
}

/** One battle, loaded and followed live while the view is open. */
export class BattleState {
  readonly id: string;
  /** The latest snapshot; replaced whole, never mutated. */
  detail = $state.raw<BattleDetailDto | null>(null);
  /** The live state on top of it (a deep proxy: the reducer mutates it). */
  live = $state<Live | null>(null);
  /** The battle could not be loaded (`not_found`, engine down, …). */
  loadError = $state<IpcError | null>(null);
  /** Following the battle failed: nothing updates live any more. */
  streamError = $state<IpcError | null>(null);
  /** Fetching the battle again failed: final figures may be out of date. */
  refetchError = $state<IpcError | null>(null);
  /** A winner chosen here and not yet confirmed by the engine. */
  pendingWinner = $state<{ winner: WinnerDto | null } | null>(null);
  winnerError = $state<IpcError | null>(null);
  /** A vote or a reveal under way, or how it failed. */
  readonly voting = new Call();
  /** Saving the tags, or how it failed. */
  readonly tagging = new Call();

  #refetchRequest = 0;
  #winnerRequest = 0;
  #refetchTimer: ReturnType<typeof setTimeout> | undefined;
  #unsubscribe: (() => void) | undefined;
  #stopped = false;

  constructor(id: string) {
    this.id = id;
  }

  /** The winner to show: the pending choice, else the engine's. */
  get winner(): WinnerDto | null {
    return this.pendingWinner ? this.pendingWinner.winner : (this.live?.winner ?? null);
  }

  /** Loads the snapshot, then follows the events. */
  async start(): Promise<void> {
    let detail: BattleDetailDto;
    try {
      detail = await getBattle(this.id);
    } catch (e: unknown) {
      this.loadError = toIpcError(e);
      return;
    }
    if (this.#isStopped()) {
      return;
    }
    this.detail = detail;
    this.live = liveFrom(detail);
    try {
      const unsubscribe = await subscribeBattle(this.id, 0, (event) => {
        this.#onEvent(event);
      });
      if (this.#isStopped()) {
        unsubscribe();
      } else {
        this.#unsubscribe = unsubscribe;
      }
    } catch (e: unknown) {
      this.streamError = toIpcError(e);
    }
  }

  /** Stops following; nothing changes after this. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#refetchTimer);
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }

  /** Fetches the snapshot again (soon, and once however often it is asked). */
  #refetch(): void {
    clearTimeout(this.#refetchTimer);
    this.#refetchTimer = setTimeout(() => {
      void this.#refetchNow();
    }, REFETCH_DEBOUNCE_MS);
  }

  /**
   * Sets (or with `null` clears) the user's winner. The choice shows at
   * once; on failure it is taken back and the error kept in `winnerError`.
   */
  async chooseWinner(contestantId: string | null): Promise<void> {
    if (!this.detail) {
      return;
    }
    this.#winnerRequest += 1;
    const request = this.#winnerRequest;
    this.pendingWinner = {
      winner:
        contestantId === null ? analysisWinner(this.detail) : { contestant_id: contestantId, source: 'user' },
    };
    this.winnerError = null;
    try {
      const battle = await setWinner(this.id, contestantId);
      if (request === this.#winnerRequest && this.live) {
        this.live.winner = battle.winner;
        // A snapshot asked for before the change would show the old winner;
        // a fresh one supersedes it (only the newest refetch is taken).
        void this.#refetchNow();
      }
    } catch (e: unknown) {
      if (request === this.#winnerRequest) {
        this.winnerError = toIpcError(e);
      }
    } finally {
      if (request === this.#winnerRequest) {
        this.pendingWinner = null;
      }
    }
  }

  /**
   * The user's vote (a winner by label, a tie or "all bad"); a blind
   * battle is revealed by it. Then the battle is read again, names and all.
   */
  async castVote(choice: VoteDto): Promise<void> {
    if (await this.voting.run(() => vote(this.id, choice))) {
      await this.#refetchNow();
    }
  }

  /** Reveals a blind battle without a vote, then reads it again. */
  async reveal(): Promise<void> {
    if (await this.voting.run(() => reveal(this.id))) {
      await this.#refetchNow();
    }
  }

  /** Replaces the battle's tags; resolves to whether they were saved. */
  async saveTags(tags: string[]): Promise<boolean> {
    return this.tagging.run(async () => {
      const battle = await setTags(this.id, tags);
      if (this.detail) {
        this.detail = { ...this.detail, tags: battle.tags };
      }
    });
  }

  // A method, not the field: after one check TypeScript would take the field
  // as still `false` after an await, though the view may stop meanwhile.
  #isStopped(): boolean {
    return this.#stopped;
  }

  #onEvent(event: BattleEventDto): void {
    if (this.live && applyEvent(this.live, event).refetch) {
      this.#refetch();
    }
  }

  async #refetchNow(): Promise<void> {
    this.#refetchRequest += 1;
    const request = this.#refetchRequest;
    let detail: BattleDetailDto;
    try {
      detail = await getBattle(this.id);
    } catch (e: unknown) {
      // The live state stays; the next event that calls for a refetch tries again.
      this.refetchError = toIpcError(e);
      return;
    }
    if (this.#isStopped() || request !== this.#refetchRequest || !this.live) {
      return;
    }
    this.refetchError = null;
    mergeSnapshot(this.live, detail);
    this.detail = detail;
  }
}

/** A contestant's speed figures, as a `benchmark` event carries them. */
export function benchmarkOf(c: ContestantDto): BenchmarkDto {
  return {
    duration_ms: c.duration_ms,
    ttft_ms: c.ttft_ms,
    prompt_tokens: c.prompt_tokens,
    completion_tokens: c.completion_tokens,
    tokens_per_sec: c.tokens_per_sec,
    tokens_per_sec_source: c.tokens_per_sec_source,
    cached_tokens: c.cached_tokens,
    prompt_per_sec: c.prompt_per_sec,
    model_switched: c.model_switched,
    cost_usd: c.cost_usd,
  };
}

/**
 * A contestant's speed figures: the final ones once the snapshot has them,
 * else the latest live ones.
 */
export function figures(c: ContestantDto, live: ContestantLive): BenchmarkDto {
  if (isTerminal(c.status) && isTerminal(live.status)) {
    return benchmarkOf(c);
  }
  return live.benchmark ?? benchmarkOf(c);
}

/** Wall-clock time so far (running) or in all (finished), in ms. */
export function elapsed(c: ContestantDto, live: ContestantLive, now: number): number | null {
  const final = isTerminal(live.status) ? figures(c, live).duration_ms : null;
  if (final !== null) {
    return final;
  }
  return elapsedMs(live.startedAt, live.finishedAt, now);
}

/** A refinement round, from the snapshot and the live events together. */
export interface RoundView {
  number: number;
  /** `null` while it runs. */
  status: ContestantStatusDto | null;
  feedback: string;
  /** The stored output once finished, else what has streamed. */
  output: string;
  error: string | null;
  diff: DiffSummaryDto | null;
  check: CheckResultDto | null;
  duration_ms: number | null;
}

/** A contestant's refinement rounds (2, 3, …), oldest first. */
export function roundsOf(stored: RoundDto[] | undefined, live: ContestantLive): RoundView[] {
  const byNumber: Record<number, RoundView> = {};
  for (const r of stored ?? []) {
    byNumber[r.number] = { ...r, output: r.status === null ? '' : r.output };
  }
  for (const [key, r] of Object.entries(live.rounds)) {
    const number = Number(key);
    const known = byNumber[number];
    if (!known) {
      byNumber[number] = {
        number,
        status: r.status,
        feedback: r.feedback ?? '',
        output: r.output,
        error: null,
        diff: null,
        check: null,
        duration_ms: null,
      };
    } else if (known.status === null) {
      known.status = r.status;
      known.output = r.output;
    }
  }
  return Object.values(byNumber).sort((a, b) => a.number - b.number);
}
