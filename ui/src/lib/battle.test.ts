import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  BattleType,
  getBattle,
  IpcError,
  reveal,
  setTags,
  setWinner,
  subscribeBattle,
  vote,
  type AnalysisDto,
  type BattleDetailDto,
  type BattleDto,
  type BattleEventDto,
  type BattleStatusDto,
  type BenchmarkDto,
  type ContestantDto,
  type RoundDto,
  type WinnerDto,
} from '../ipc';
import {
  applyEvent,
  BattleState,
  currentAnalysis,
  elapsed,
  figures,
  isTerminal,
  judgingLine,
  liveFrom,
  mergeSnapshot,
  namesById,
  newestStatus,
  roundsOf,
  type ContestantLive,
  type Live,
} from './battle.svelte';

// BattleState talks to the backend through these; everything else in
// ../ipc (types, IpcError, toIpcError) stays real.
vi.mock(import('../ipc'), async (importOriginal) => ({
  ...(await importOriginal()),
  getBattle: vi.fn(),
  reveal: vi.fn(),
  setTags: vi.fn(),
  setWinner: vi.fn(),
  subscribeBattle: vi.fn(),
  vote: vi.fn(),
}));

const AT = '2025-03-01T10:00:00Z';

function benchmark(over: Partial<BenchmarkDto> = {}): BenchmarkDto {
  return {
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
    ...over,
  };
}

function contestant(
  id: string,
  position: number,
  over: Partial<ContestantDto> = {},
): ContestantDto {
  return {
    id,
    position,
    label: null,
    check_outcome: 'none',
    apply_advice: null,
    identity: 'critic',
    model: `model-${id}`,
    provider: 'local',
    lane: 'local',
    status: 'queued',
    error: null,
    attempts: 0,
    started_at: null,
    finished_at: null,
    ...benchmark(),
    output: null,
    reasoning: null,
    truncated: false,
    result_path: null,
    worktree: null,
    diff: null,
    check: null,
    waiting: null,
    rounds: [],
    ...over,
  };
}

interface DetailOptions {
  lastSeq: number;
  status?: BattleStatusDto;
  winner?: WinnerDto | null;
  contestants?: ContestantDto[];
  masked?: boolean;
  tags?: string[];
}

function detail({
  lastSeq,
  status,
  winner,
  contestants,
  masked,
  tags,
}: DetailOptions): BattleDetailDto {
  const battle: BattleDto = {
    base: null,
    check_warning: null,
    id: 'b1',
    battle_type: BattleType.Qa,
    status: status ?? 'running',
    prompt: 'Explain monads',
    project: '/tmp/project',
    results_path: '/tmp/project/Arena/b1',
    created_at: AT,
    finished_at: null,
    winner: winner ?? null,
    contestants: contestants ?? [contestant('a', 1), contestant('b', 2)],
    base_commit: null,
    check_command: null,
    series_id: null,
    blind: masked ?? false,
    masked: masked ?? false,
    user_verdict: null,
    tags: tags ?? [],
    judging: null,
    machine: 'alpha',
    user_name: 'alice',
    voted_by: null,
  };
  return { ...battle, analysis: null, cross_examinations: [], vote: null, last_seq: lastSeq };
}

/** The part of an event that differs between event types. */
type EventBody = BattleEventDto extends infer E
  ? E extends unknown
    ? Omit<E, 'battle_id' | 'seq' | 'contestant_id' | 'at'>
    : never
  : never;

function ev(seq: number, contestantId: string | null, body: EventBody, at = AT): BattleEventDto {
  return { battle_id: 'b1', seq, contestant_id: contestantId, at, ...body };
}

const output = (seq: number, id: string, text: string): BattleEventDto =>
  ev(seq, id, { type: 'output', text });

function status(
  seq: number,
  id: string,
  s: ContestantDto['status'],
  at = AT,
  attempt = 1,
  error: string | null = null,
): BattleEventDto {
  return ev(seq, id, { type: 'contestant_status', status: s, error, attempt }, at);
}

/** A contestant of `live` that must exist. */
function get(live: Live, id: string): ContestantLive {
  const c = live.contestants[id];
  if (!c) {
    throw new Error(`no contestant ${id} in the live state`);
  }
  return c;
}

function applyAll(live: Live, events: BattleEventDto[]): void {
  for (const e of events) {
    applyEvent(live, e);
  }
}

describe('liveFrom', () => {
  it('starts from the snapshot, as of its lastSeq, with no streamed text', () => {
    const live = liveFrom(
      detail({
        lastSeq: 7,
        winner: { contestant_id: 'b', source: 'analysis' },
        contestants: [
          contestant('a', 1, { status: 'running', attempts: 2, started_at: AT, output: 'stored' }),
          contestant('b', 2, { status: 'error', error: 'boom' }),
        ],
      }),
    );
    expect(live.status).toBe('running');
    expect(live.winner).toEqual({ contestant_id: 'b', source: 'analysis' });
    expect(live.winnerSeq).toBe(7);
    expect(get(live, 'a')).toMatchObject({
      status: 'running',
      seq: 7,
      attempt: 2,
      startedAt: AT,
      output: '',
      reasoning: '',
      round: null,
    });
    expect(get(live, 'b')).toMatchObject({ status: 'error', error: 'boom' });
    expect(live.analyses).toEqual({});
    expect(live.crossExams).toEqual({});
  });
});

describe('applyEvent: streamed text', () => {
  it('appends output deltas to each contestant separately', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    applyAll(live, [
      output(1, 'a', 'Hel'),
      output(2, 'b', 'Bon'),
      output(3, 'a', 'lo'),
      output(4, 'b', 'jour'),
    ]);
    expect(get(live, 'a').output).toBe('Hello');
    expect(get(live, 'b').output).toBe('Bonjour');
  });

  it('applies text replayed from before the snapshot, which no snapshot holds', () => {
    const live = liveFrom(detail({ lastSeq: 50 }));
    applyAll(live, [output(3, 'a', 'early '), output(60, 'a', 'late')]);
    expect(get(live, 'a').output).toBe('early late');
  });

  it('keeps reasoning apart from the answer', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    applyAll(live, [
      ev(1, 'a', { type: 'reasoning', text: 'think ' }),
      output(2, 'a', 'answer'),
      ev(3, 'a', { type: 'reasoning', text: 'more' }),
    ]);
    expect(get(live, 'a').reasoning).toBe('think more');
    expect(get(live, 'a').output).toBe('answer');
  });

  it('reset discards the partial text of that contestant only and says why', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    applyAll(live, [
      output(1, 'a', 'half an ans'),
      ev(2, 'a', { type: 'reasoning', text: 'hmm' }),
      output(3, 'b', 'untouched'),
      ev(4, 'a', { type: 'reset', reason: 'retrying after a timeout' }),
    ]);
    expect(get(live, 'a')).toMatchObject({
      output: '',
      reasoning: '',
      resetReason: 'retrying after a timeout',
    });
    expect(get(live, 'b').output).toBe('untouched');

    applyEvent(live, output(5, 'a', 'fresh'));
    expect(get(live, 'a').output).toBe('fresh');
  });

  it('a folded answer replaces the deltas, whether they were seen or not', () => {
    const whole = { type: 'folded', output: 'the whole answer', reasoning: 'think' } as const;
    // Live: the deltas, then the fold.
    const live = liveFrom(detail({ lastSeq: 0 }));
    applyAll(live, [output(1, 'a', 'the whole'), output(2, 'a', ' answer'), ev(3, 'a', whole)]);
    expect(get(live, 'a')).toMatchObject({ output: 'the whole answer', reasoning: 'think' });
    // Late: the journal after the fold holds no deltas.
    const late = liveFrom(detail({ lastSeq: 0 }));
    applyAll(late, [ev(3, 'a', whole)]);
    expect(get(late, 'a')).toMatchObject({ output: 'the whole answer', reasoning: 'think' });
    // Mid-stream: part of the deltas, then the fold.
    const mid = liveFrom(detail({ lastSeq: 0 }));
    applyAll(mid, [output(1, 'a', 'the whole'), ev(3, 'a', whole)]);
    expect(get(mid, 'a').output).toBe('the whole answer');
  });

  it('ignores events of a contestant it does not know', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    expect(applyEvent(live, output(1, 'ghost', 'boo'))).toEqual({ refetch: false });
    expect(applyEvent(live, status(2, 'ghost', 'done'))).toEqual({ refetch: true });
    expect(Object.keys(live.contestants)).toEqual(['a', 'b']);
  });

  it('keeps the latest retry note, benchmark and changed files, and every tool call', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    applyAll(live, [
      ev(1, 'a', { type: 'retry', attempt: 2, delay_ms: 500, reason: 'HTTP 503' }),
      ev(2, 'a', { type: 'benchmark', benchmark: benchmark({ completion_tokens: 10 }) }),
      ev(3, 'a', { type: 'benchmark', benchmark: benchmark({ completion_tokens: 25 }) }),
      ev(4, 'a', { type: 'tool', name: 'read_file', summary: 'src/main.rs', ok: true }),
      ev(5, 'a', { type: 'tool', name: 'shell', summary: 'cargo test', ok: false }),
      ev(6, 'a', { type: 'changed_files', files: ['a.rs'], total: 1 }),
      ev(7, 'a', { type: 'changed_files', files: ['b.rs'], total: 2 }),
    ]);
    const a = get(live, 'a');
    expect(a.retry).toEqual({ attempt: 2, delayMs: 500, reason: 'HTTP 503' });
    expect(a.benchmark?.completion_tokens).toBe(25);
    expect(a.tools).toEqual([
      { name: 'read_file', summary: 'src/main.rs', ok: true, round: 1 },
      { name: 'shell', summary: 'cargo test', ok: false, round: 1 },
    ]);
    expect(a.changedFiles).toEqual(['a.rs', 'b.rs']);
    expect(a.changedTotal).toBe(2);
  });

  it('adds each changed-files event to the list, and takes an older whole list as it is', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    applyAll(live, [
      ev(1, 'a', { type: 'changed_files', files: ['a.rs', 'b.rs'], total: 2 }),
      ev(2, 'a', { type: 'changed_files', files: [], total: 5000 }),
      ev(3, 'b', { type: 'changed_files', files: ['x.rs', 'y.rs'], total: null }),
    ]);
    expect(get(live, 'a').changedFiles).toEqual(['a.rs', 'b.rs']);
    expect(get(live, 'a').changedTotal).toBe(5000);
    expect(get(live, 'b').changedFiles).toEqual(['x.rs', 'y.rs']);
    expect(get(live, 'b').changedTotal).toBe(2);
  });
});

describe('applyEvent: contestant status', () => {
  it('ignores replayed status events the snapshot already reflects, and applies newer ones', () => {
    const live = liveFrom(
      detail({ lastSeq: 10, contestants: [contestant('a', 1, { status: 'done', attempts: 1 })] }),
    );
    applyEvent(live, status(4, 'a', 'running', '2025-03-01T10:00:04Z'));
    applyEvent(live, status(10, 'a', 'running', '2025-03-01T10:00:10Z'));
    expect(get(live, 'a')).toMatchObject({ status: 'done', seq: 10, startedAt: null });

    applyEvent(live, status(11, 'a', 'running', '2025-03-01T10:00:11Z', 2));
    expect(get(live, 'a')).toMatchObject({
      status: 'running',
      seq: 11,
      attempt: 2,
      startedAt: '2025-03-01T10:00:11Z',
      finishedAt: null,
    });
  });

  it('takes start and finish times from the events, and a new run clears the retry note', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    applyAll(live, [
      status(1, 'a', 'running', '2025-03-01T10:00:01Z'),
      ev(2, 'a', { type: 'retry', attempt: 2, delay_ms: 1000, reason: 'HTTP 429' }),
    ]);
    expect(get(live, 'a').retry).not.toBeNull();
    applyEvent(live, status(3, 'a', 'running', '2025-03-01T10:00:03Z', 2));
    expect(get(live, 'a')).toMatchObject({
      retry: null,
      attempt: 2,
      startedAt: '2025-03-01T10:00:03Z',
    });
    applyEvent(live, status(4, 'a', 'error', '2025-03-01T10:00:09Z', 2, 'HTTP 500 twice'));
    expect(get(live, 'a')).toMatchObject({
      status: 'error',
      error: 'HTTP 500 twice',
      startedAt: '2025-03-01T10:00:03Z',
      finishedAt: '2025-03-01T10:00:09Z',
    });
  });

  it('does not go back when an older event arrives after a newer one', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    applyAll(live, [status(5, 'a', 'done'), status(3, 'a', 'running')]);
    expect(get(live, 'a')).toMatchObject({ status: 'done', seq: 5 });
  });
  it('shows why a queued contestant waits until it starts, and never an older reason', () => {
    const waiting = 'waiting for local (127.0.0.1:8080): battle 1a2b3c4d, contestant 2';
    const live = liveFrom(
      detail({ lastSeq: 3, contestants: [contestant('a', 1, { waiting: 'from the snapshot' })] }),
    );
    expect(get(live, 'a').waiting).toBe('from the snapshot');
    applyEvent(live, ev(2, 'a', { type: 'waiting', reason: 'replayed, older' }));
    expect(get(live, 'a').waiting).toBe('from the snapshot');
    applyEvent(live, ev(4, 'a', { type: 'waiting', reason: waiting }));
    expect(get(live, 'a')).toMatchObject({ status: 'queued', waiting });
    applyEvent(live, status(5, 'a', 'running'));
    expect(get(live, 'a')).toMatchObject({ status: 'running', waiting: null });
  });
});

describe('applyEvent: battle status and winner', () => {
  it('a finished battle stays finished when its older running status is replayed', () => {
    const live = liveFrom(detail({ lastSeq: 20, status: 'done' }));
    applyEvent(live, ev(1, null, { type: 'battle_status', status: 'running' }));
    expect(live.status).toBe('done');
    applyEvent(live, ev(21, null, { type: 'battle_status', status: 'cancelled' }));
    expect(live.status).toBe('done');
  });

  it('a running battle takes the status that ends it', () => {
    const live = liveFrom(detail({ lastSeq: 2 }));
    applyEvent(live, ev(30, null, { type: 'battle_status', status: 'cancelled' }));
    expect(live.status).toBe('cancelled');
  });

  it('ignores replayed winner events and applies newer ones, including a cleared winner', () => {
    const winner = (seq: number, w: WinnerDto | null): BattleEventDto =>
      ev(seq, null, { type: 'winner', winner: w });
    const live = liveFrom(detail({ lastSeq: 10, winner: { contestant_id: 'b', source: 'user' } }));
    applyEvent(live, winner(6, { contestant_id: 'a', source: 'analysis' }));
    applyEvent(live, winner(10, null));
    expect(live.winner).toEqual({ contestant_id: 'b', source: 'user' });
    expect(live.winnerSeq).toBe(10);

    applyEvent(live, winner(12, { contestant_id: 'a', source: 'user' }));
    expect(live.winner).toEqual({ contestant_id: 'a', source: 'user' });
    expect(live.winnerSeq).toBe(12);

    applyEvent(live, winner(13, null));
    expect(live.winner).toBeNull();
    expect(live.winnerSeq).toBe(13);
  });
});

describe('mergeSnapshot', () => {
  it('a refetched snapshot older than the applied events does not override them', () => {
    const live = liveFrom(detail({ lastSeq: 5 }));
    applyAll(live, [
      status(8, 'a', 'done', '2025-03-01T10:00:08Z'),
      ev(9, null, { type: 'winner', winner: { contestant_id: 'a', source: 'user' } }),
      ev(10, null, { type: 'battle_status', status: 'done' }),
      output(11, 'b', 'streamed'),
    ]);
    // Read at seq 7, answered after the events above.
    mergeSnapshot(
      live,
      detail({
        lastSeq: 7,
        status: 'running',
        winner: null,
        contestants: [contestant('a', 1, { status: 'running' }), contestant('b', 2)],
      }),
    );
    expect(live.status).toBe('done');
    expect(live.winner).toEqual({ contestant_id: 'a', source: 'user' });
    expect(get(live, 'a')).toMatchObject({
      status: 'done',
      seq: 8,
      finishedAt: '2025-03-01T10:00:08Z',
    });
    expect(get(live, 'b').output).toBe('streamed');
  });

  it('a newer snapshot moves things on but keeps the streamed text', () => {
    const live = liveFrom(detail({ lastSeq: 5 }));
    applyAll(live, [status(6, 'a', 'running'), output(7, 'a', 'partial')]);
    mergeSnapshot(
      live,
      detail({
        lastSeq: 12,
        status: 'done',
        winner: { contestant_id: 'a', source: 'analysis' },
        contestants: [
          contestant('a', 1, {
            status: 'done',
            attempts: 1,
            started_at: '2025-03-01T10:00:06Z',
            finished_at: '2025-03-01T10:00:11Z',
            output: 'partial and the rest',
          }),
          contestant('b', 2, { status: 'error', error: 'no such model' }),
          contestant('c', 3, { status: 'queued' }),
        ],
      }),
    );
    expect(live.status).toBe('done');
    expect(live.winner).toEqual({ contestant_id: 'a', source: 'analysis' });
    expect(live.winnerSeq).toBe(12);
    expect(get(live, 'a')).toMatchObject({
      status: 'done',
      seq: 12,
      finishedAt: '2025-03-01T10:00:11Z',
      output: 'partial',
    });
    expect(get(live, 'b')).toMatchObject({ status: 'error', error: 'no such model', seq: 12 });
    expect(get(live, 'c')).toMatchObject({ status: 'queued', seq: 12 });
  });

  it('a snapshot at the same seq as the events applies (it reflects them)', () => {
    const live = liveFrom(detail({ lastSeq: 1 }));
    applyEvent(live, status(4, 'a', 'running'));
    mergeSnapshot(
      live,
      detail({ lastSeq: 4, contestants: [contestant('a', 1, { status: 'running', attempts: 3 })] }),
    );
    expect(get(live, 'a')).toMatchObject({ status: 'running', attempt: 3, seq: 4 });
  });

  it('never takes a running battle status from a snapshot over a finished one', () => {
    const live = liveFrom(detail({ lastSeq: 1 }));
    applyEvent(live, ev(2, null, { type: 'battle_status', status: 'error' }));
    mergeSnapshot(live, detail({ lastSeq: 3, status: 'running' }));
    expect(live.status).toBe('error');
  });
});

describe('applyEvent: refinement rounds', () => {
  it('routes output, resets and tool calls into the running round', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    applyAll(live, [
      output(1, 'a', 'first run'),
      ev(2, 'a', { type: 'changed_files', files: ['lib.rs'], total: 1 }),
      ev(3, 'a', { type: 'round', number: 2, status: null, feedback: 'add tests' }),
    ]);
    let a = get(live, 'a');
    expect(a.round).toBe(2);
    expect(a.rounds[2]).toEqual({ status: null, feedback: 'add tests', output: '' });
    expect(a.changedFiles).toEqual([]);

    applyAll(live, [
      output(4, 'a', 'wrong start'),
      ev(5, 'a', { type: 'reset', reason: 'resumed' }),
      output(6, 'a', 'round two'),
      ev(7, 'a', { type: 'tool', name: 'write_file', summary: 'tests.rs', ok: true }),
    ]);
    a = get(live, 'a');
    expect(a.rounds[2]?.output).toBe('round two');
    expect(a.output).toBe('first run');
    expect(a.resetReason).toBe('resumed');
    expect(a.tools).toEqual([{ name: 'write_file', summary: 'tests.rs', ok: true, round: 2 }]);

    applyEvent(live, ev(8, 'a', { type: 'round', number: 2, status: 'done', feedback: null }));
    a = get(live, 'a');
    expect(a.round).toBeNull();
    expect(a.rounds[2]).toEqual({ status: 'done', feedback: 'add tests', output: 'round two' });
  });

  it('records the end of a round it never saw start', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    applyEvent(live, ev(1, 'a', { type: 'round', number: 3, status: 'error', feedback: null }));
    expect(get(live, 'a').rounds[3]).toEqual({ status: 'error', feedback: null, output: '' });
    expect(get(live, 'a').round).toBeNull();
  });
});

describe('applyEvent: analysis and cross-examination', () => {
  const analysisStatus = (
    seq: number,
    s: 'running' | 'done' | 'error',
    outcome: 'winner' | null = null,
    winner: string | null = null,
  ): BattleEventDto =>
    ev(seq, null, {
      type: 'analysis_status',
      analysis_id: 'an1',
      status: s,
      outcome,
      winner,
      error: s === 'error' ? 'judge failed' : null,
    });

  it('goes from running to a final status and stays there', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    applyEvent(live, analysisStatus(1, 'running'));
    expect(live.analyses.an1?.status).toBe('running');
    applyEvent(live, analysisStatus(5, 'done', 'winner', 'b'));
    expect(live.analyses.an1).toMatchObject({ status: 'done', outcome: 'winner', winner: 'b' });
    applyEvent(live, analysisStatus(2, 'running'));
    applyEvent(live, analysisStatus(6, 'error'));
    expect(live.analyses.an1).toMatchObject({
      status: 'done',
      outcome: 'winner',
      winner: 'b',
      error: null,
    });
  });

  it('gathers judge output per stage, even before the status event', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    const stage = (seq: number, name: string, text: string): BattleEventDto =>
      ev(seq, null, { type: 'analysis_output', analysis_id: 'an1', stage: name, text });
    applyAll(live, [
      stage(1, 'digest a', 'A is '),
      stage(2, 'digest b', 'B is '),
      stage(3, 'digest a', 'terse'),
      stage(4, 'judge 1', 'B wins'),
    ]);
    expect(live.analyses.an1?.status).toBe('running');
    expect(live.analyses.an1?.stages).toEqual({
      'digest a': 'A is terse',
      'digest b': 'B is ',
      'judge 1': 'B wins',
    });
    expect(Object.keys(live.analyses.an1?.stages ?? {})).toEqual([
      'digest a',
      'digest b',
      'judge 1',
    ]);
    applyEvent(live, analysisStatus(5, 'error'));
    expect(live.analyses.an1).toMatchObject({ status: 'error', error: 'judge failed' });
  });

  it('says what the judge is doing while it works, and nothing after', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    const name = (id: string | null | undefined): string => `#${id ?? '?'}`;
    expect(judgingLine(currentAnalysis(null, live.analyses), name)).toBeNull();
    applyEvent(live, analysisStatus(1, 'running'));
    expect(judgingLine(currentAnalysis(null, live.analyses), name)).toBe('Judging…');
    applyEvent(
      live,
      ev(2, null, { type: 'analysis_output', analysis_id: 'an1', stage: 'digest b', text: 'B' }),
    );
    const record = {
      id: 'an1',
      battle_id: 'b1',
      status: 'running',
      model: 'judge-model',
      provider: 'cloud',
      outcome: null,
      winner: null,
      no_clear_winner: false,
      ranking: [],
      reasons: {},
      digests: [],
      judge_runs: [],
      error: null,
      created_at: AT,
      finished_at: null,
      cost_usd: null,
    } satisfies AnalysisDto;
    expect(judgingLine(currentAnalysis(record, live.analyses), name)).toBe(
      'Judging… (judge-model, digest of #b)',
    );
    applyEvent(live, analysisStatus(3, 'done', 'winner', 'b'));
    expect(judgingLine(currentAnalysis(record, live.analyses), name)).toBeNull();
  });

  it('a cross-examination goes from running to a final status only', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    const xStatus = (seq: number, s: 'running' | 'done' | 'error'): BattleEventDto =>
      ev(seq, null, {
        type: 'cross_exam_status',
        cross_exam_id: 'x1',
        number: 1,
        status: s,
        error: s === 'error' ? 'examiner crashed' : null,
      });
    applyAll(live, [
      xStatus(1, 'running'),
      ev(2, null, { type: 'cross_exam_output', cross_exam_id: 'x1', text: 'A claims ' }),
      ev(3, null, { type: 'cross_exam_output', cross_exam_id: 'x1', text: 'X.' }),
      xStatus(4, 'error'),
      xStatus(5, 'running'),
      xStatus(6, 'done'),
    ]);
    expect(live.crossExams.x1).toEqual({
      number: 1,
      status: 'error',
      error: 'examiner crashed',
      output: 'A claims X.',
    });
  });
});

describe('applyEvent: which events ask for a refetch', () => {
  const cases: [string, boolean, BattleEventDto][] = [
    ['output', false, output(1, 'a', 'x')],
    ['reasoning', false, ev(1, 'a', { type: 'reasoning', text: 'x' })],
    ['reset', false, ev(1, 'a', { type: 'reset', reason: 'retry' })],
    ['folded', false, ev(1, 'a', { type: 'folded', output: 'x', reasoning: '' })],
    ['waiting', false, ev(1, 'a', { type: 'waiting', reason: 'waiting for local' })],
    ['retry', false, ev(1, 'a', { type: 'retry', attempt: 2, delay_ms: 1, reason: 'x' })],
    ['benchmark', false, ev(1, 'a', { type: 'benchmark', benchmark: benchmark() })],
    ['tool', false, ev(1, 'a', { type: 'tool', name: 't', summary: 's', ok: true })],
    ['changed_files', false, ev(1, 'a', { type: 'changed_files', files: [], total: 0 })],
    ['contestant running', false, status(1, 'a', 'running')],
    ['contestant queued', false, status(1, 'a', 'queued')],
    ['contestant done', true, status(1, 'a', 'done')],
    ['contestant error', true, status(1, 'a', 'error')],
    ['contestant cancelled', true, status(1, 'a', 'cancelled')],
    ['battle running', false, ev(1, null, { type: 'battle_status', status: 'running' })],
    ['battle done', true, ev(1, null, { type: 'battle_status', status: 'done' })],
    ['round start', true, ev(1, 'a', { type: 'round', number: 2, status: null, feedback: 'f' })],
    ['round end', true, ev(1, 'a', { type: 'round', number: 2, status: 'done', feedback: null })],
    ['winner', true, ev(1, null, { type: 'winner', winner: null })],
    ['result_written', true, ev(1, 'a', { type: 'result_written', path: '/r/result.md' })],
    ['revealed', true, ev(1, null, { type: 'revealed' })],
    [
      'analysis_status',
      true,
      ev(1, null, {
        type: 'analysis_status',
        analysis_id: 'x',
        status: 'running',
        outcome: null,
        winner: null,
        error: null,
      }),
    ],
    [
      'analysis_output',
      false,
      ev(1, null, { type: 'analysis_output', analysis_id: 'x', stage: 's', text: 't' }),
    ],
    [
      'cross_exam_status',
      true,
      ev(1, null, {
        type: 'cross_exam_status',
        cross_exam_id: 'x',
        number: 1,
        status: 'running',
        error: null,
      }),
    ],
    [
      'cross_exam_output',
      false,
      ev(1, null, { type: 'cross_exam_output', cross_exam_id: 'x', text: 't' }),
    ],
  ];

  it.each(cases)('%s → refetch: %s', (_name, refetch, event) => {
    expect(applyEvent(liveFrom(detail({ lastSeq: 0 })), event)).toEqual({ refetch });
  });
});

describe('derived views', () => {
  it('isTerminal knows the final statuses', () => {
    const final: BattleStatusDto[] = ['done', 'error', 'cancelled'];
    expect(final.every(isTerminal)).toBe(true);
    expect(isTerminal('running')).toBe(false);
    expect(isTerminal('queued')).toBe(false);
  });

  it('newestStatus prefers a final live status over the stored one', () => {
    expect(newestStatus('running', 'done')).toBe('done');
    expect(newestStatus('running', 'error')).toBe('error');
    expect(newestStatus('done', 'running')).toBe('done');
    expect(newestStatus(undefined, 'running')).toBe('running');
    expect(newestStatus('error', undefined)).toBe('error');
    expect(newestStatus(undefined, undefined)).toBeUndefined();
  });

  it('namesById numbers contestants and leaves unknown ids as they are', () => {
    const name = namesById([contestant('a', 1, { identity: 'critic', model: 'qwen3' })]);
    expect(name('a')).toBe('#1 critic@qwen3');
    expect(name('zz')).toBe('zz');
    expect(name(null)).toBe('—');
  });

  it('figures: the final ones once snapshot and events both say finished, else live ones', () => {
    const stored = benchmark({ tokens_per_sec: 40, duration_ms: 2000 });
    const running = contestant('a', 1, { status: 'running', ...stored });
    const done = contestant('a', 1, { status: 'done', ...stored });
    const liveFigures = benchmark({ tokens_per_sec: 35 });
    const live = liveFrom(detail({ lastSeq: 0 }));
    const a = get(live, 'a');
    a.benchmark = liveFigures;

    a.status = 'running';
    expect(figures(running, a)).toBe(liveFigures);
    a.status = 'done';
    // The snapshot has not caught up yet.
    expect(figures(running, a)).toBe(liveFigures);
    expect(figures(done, a)).toEqual(stored);
    a.benchmark = null;
    a.status = 'running';
    expect(figures(running, a)).toEqual(stored);
  });

  it('elapsed: the final duration once finished, else the time since it started', () => {
    const live = liveFrom(detail({ lastSeq: 0 }));
    const a = get(live, 'a');
    const now = Date.parse('2025-03-01T10:00:05Z');
    a.status = 'running';
    a.startedAt = '2025-03-01T10:00:01Z';
    expect(elapsed(contestant('a', 1), a, now)).toBe(4000);

    a.status = 'done';
    a.finishedAt = '2025-03-01T10:00:03Z';
    expect(elapsed(contestant('a', 1, { status: 'done' }), a, now)).toBe(2000);
    const measured = benchmark({ duration_ms: 1750 });
    expect(elapsed(contestant('a', 1, { status: 'done', ...measured }), a, now)).toBe(1750);

    a.status = 'queued';
    a.startedAt = null;
    expect(elapsed(contestant('a', 1), a, now)).toBeNull();
  });

  it('roundsOf merges stored and live rounds, oldest first', () => {
    const round = (number: number, over: Partial<RoundDto>): RoundDto => ({
      id: `r${String(number)}`,
      contestant_id: 'a',
      number,
      feedback: `feedback ${String(number)}`,
      status: 'done',
      output: `stored ${String(number)}`,
      error: null,
      diff: null,
      check: null,
      duration_ms: 1000,
      result_path: null,
      created_at: AT,
      finished_at: AT,
      cost_usd: null,
      ...over,
    });
    const live = liveFrom(detail({ lastSeq: 0 }));
    applyAll(live, [
      ev(1, 'a', { type: 'round', number: 2, status: null, feedback: 'feedback 2' }),
      output(2, 'a', 'live 2'),
      ev(3, 'a', { type: 'round', number: 2, status: 'done', feedback: null }),
      ev(4, 'a', { type: 'round', number: 3, status: null, feedback: 'feedback 3' }),
      output(5, 'a', 'live 3'),
      ev(6, 'a', { type: 'round', number: 4, status: null, feedback: 'feedback 4' }),
      output(7, 'a', 'live 4'),
    ]);
    const stored = [round(3, { status: null, output: 'not final' }), round(2, {})];
    const views = roundsOf(stored, get(live, 'a'));
    expect(views.map((r) => [r.number, r.status, r.output])).toEqual([
      [2, 'done', 'stored 2'],
      [3, null, 'live 3'],
      [4, null, 'live 4'],
    ]);
    expect(views[2]).toMatchObject({ feedback: 'feedback 4', diff: null, duration_ms: null });
    expect(roundsOf(undefined, get(live, 'b'))).toEqual([]);
  });
});

describe('BattleState', () => {
  let emit: (event: BattleEventDto) => void = () => undefined;
  const unsubscribe = vi.fn();

  beforeEach(() => {
    vi.useFakeTimers();
    vi.mocked(subscribeBattle).mockImplementation((_id, _since, onEvent) => {
      emit = onEvent;
      return Promise.resolve(unsubscribe);
    });
  });

  afterEach(() => {
    vi.useRealTimers();
    vi.resetAllMocks();
  });

  it('loads, replays from seq 0 and fetches once for a burst of events that need it', async () => {
    vi.mocked(getBattle).mockResolvedValueOnce(detail({ lastSeq: 3 }));
    const state = new BattleState('b1');
    await state.start();
    expect(subscribeBattle).toHaveBeenCalledWith('b1', 0, expect.any(Function));
    expect(state.live?.status).toBe('running');

    vi.mocked(getBattle).mockResolvedValueOnce(
      detail({ lastSeq: 6, status: 'done', contestants: [contestant('a', 1, { status: 'done' })] }),
    );
    emit(status(4, 'a', 'done'));
    emit(status(5, 'b', 'done'));
    emit(ev(6, null, { type: 'battle_status', status: 'done' }));
    expect(getBattle).toHaveBeenCalledTimes(1);
    await vi.runAllTimersAsync();
    expect(getBattle).toHaveBeenCalledTimes(2);
    expect(state.detail?.last_seq).toBe(6);
    expect(state.live?.status).toBe('done');

    state.stop();
    expect(unsubscribe).toHaveBeenCalledTimes(1);
  });

  it('keeps the load error when the battle cannot be loaded', async () => {
    vi.mocked(getBattle).mockRejectedValueOnce(new IpcError('not_found', 'no battle b1'));
    const state = new BattleState('b1');
    await state.start();
    expect(state.loadError?.code).toBe('not_found');
    expect(state.live).toBeNull();
    expect(subscribeBattle).not.toHaveBeenCalled();
  });

  it('shows a chosen winner at once and takes it back when the engine refuses', async () => {
    vi.mocked(getBattle).mockResolvedValueOnce(
      detail({ lastSeq: 1, winner: { contestant_id: 'a', source: 'analysis' } }),
    );
    const state = new BattleState('b1');
    await state.start();

    let refuse: (e: unknown) => void = () => undefined;
    vi.mocked(setWinner).mockReturnValueOnce(
      new Promise((_resolve, reject) => {
        refuse = reject;
      }),
    );
    const choosing = state.chooseWinner('b');
    expect(state.winner).toEqual({ contestant_id: 'b', source: 'user' });
    refuse(new IpcError('conflict', 'the battle is still running'));
    await choosing;
    expect(state.winner).toEqual({ contestant_id: 'a', source: 'analysis' });
    expect(state.winnerError?.code).toBe('conflict');
  });

  it('votes, then reads the battle again: a blind battle shows its names', async () => {
    const masked = [
      contestant('a', 1, { label: 'A', identity: 'A', model: '', provider: '', lane: null }),
      contestant('b', 2, { label: 'B', identity: 'B', model: '', provider: '', lane: null }),
    ];
    vi.mocked(getBattle).mockResolvedValueOnce(
      detail({ lastSeq: 2, masked: true, contestants: masked }),
    );
    const state = new BattleState('b1');
    await state.start();
    expect(state.detail?.masked).toBe(true);

    const winner: WinnerDto = { contestant_id: 'b', source: 'user' };
    vi.mocked(vote).mockResolvedValueOnce(detail({ lastSeq: 4, winner }));
    vi.mocked(getBattle).mockResolvedValueOnce(
      detail({
        lastSeq: 4,
        winner,
        contestants: [contestant('a', 1, { label: 'A' }), contestant('b', 2, { label: 'B' })],
      }),
    );
    await state.castVote({ kind: 'winner', contestant: 'B' });
    expect(vote).toHaveBeenCalledWith('b1', { kind: 'winner', contestant: 'B' });
    expect(state.detail?.masked).toBe(false);
    expect(state.detail?.contestants[1]?.model).toBe('model-b');
    expect(state.winner).toEqual(winner);
    expect(state.voting.error).toBeNull();
  });

  it('keeps the battle masked and says why when the vote is refused', async () => {
    vi.mocked(getBattle).mockResolvedValueOnce(detail({ lastSeq: 2, masked: true }));
    const state = new BattleState('b1');
    await state.start();
    vi.mocked(vote).mockRejectedValueOnce(new IpcError('invalid_input', 'contestant C is queued'));
    await state.castVote({ kind: 'winner', contestant: 'C' });
    expect(state.voting.error?.message).toBe('contestant C is queued');
    expect(state.voting.busy).toBe(false);
    expect(getBattle).toHaveBeenCalledTimes(1);
    expect(state.detail?.masked).toBe(true);
  });

  it('reveals without a vote, then reads the battle again', async () => {
    vi.mocked(getBattle).mockResolvedValueOnce(detail({ lastSeq: 2, masked: true }));
    const state = new BattleState('b1');
    await state.start();
    vi.mocked(reveal).mockResolvedValueOnce(detail({ lastSeq: 3 }));
    vi.mocked(getBattle).mockResolvedValueOnce(detail({ lastSeq: 3 }));
    await state.reveal();
    expect(reveal).toHaveBeenCalledWith('b1');
    expect(state.detail?.masked).toBe(false);
  });

  it('reads the battle again on its revealed event', async () => {
    vi.mocked(getBattle).mockResolvedValueOnce(detail({ lastSeq: 2, masked: true }));
    const state = new BattleState('b1');
    await state.start();
    vi.mocked(getBattle).mockResolvedValueOnce(detail({ lastSeq: 3 }));
    emit(ev(3, null, { type: 'revealed' }));
    await vi.runAllTimersAsync();
    expect(getBattle).toHaveBeenCalledTimes(2);
    expect(state.detail?.masked).toBe(false);
  });

  it('saves the tags and shows the ones the engine kept', async () => {
    vi.mocked(getBattle).mockResolvedValueOnce(detail({ lastSeq: 1, tags: ['old'] }));
    const state = new BattleState('b1');
    await state.start();
    vi.mocked(setTags).mockResolvedValueOnce(detail({ lastSeq: 1, tags: ['rust', 'math'] }));
    expect(await state.saveTags(['rust', 'math'])).toBe(true);
    expect(setTags).toHaveBeenCalledWith('b1', ['rust', 'math']);
    expect(state.detail?.tags).toEqual(['rust', 'math']);

    vi.mocked(setTags).mockRejectedValueOnce(new IpcError('invalid_input', 'too long'));
    expect(await state.saveTags(['x'.repeat(41)])).toBe(false);
    expect(state.tagging.error?.code).toBe('invalid_input');
    expect(state.detail?.tags).toEqual(['rust', 'math']);
  });
});
