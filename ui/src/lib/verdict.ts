// The verdict card, as a pure function: one battle's verdict in words, from
// what the view knows (the battle's status, who finished, the winner, the
// user's tie or "all bad", the newest analysis). Exactly one state holds at
// a time, so the card never says two things, and the history's rows word
// the same states the same way (`verdictHeadline`).
import type {
  AnalysisStatusDto,
  BattleStatusDto,
  ContestantStatusDto,
  JudgeRunDto,
  OutcomeDto,
  UserVerdictDto,
  WinnerDto,
} from '../ipc';
import type { CurrentAnalysis } from './battle.svelte';

/** Which of the card's states holds. */
export type VerdictKind =
  /** A blind battle before the vote: the vote buttons are below the answers. */
  | 'blind'
  /** Answers still coming in. */
  | 'running'
  /** The judge is at work. */
  | 'judging'
  /** The user chose a winner. */
  | 'pick'
  /** The user called it a tie, or found them all bad. */
  | 'tie'
  | 'all_bad'
  /** The judge named a winner (or the only finisher won by walkover). */
  | 'judged'
  /** The judge's two runs disagreed. */
  | 'undecided'
  /** The judge was asked and gave no verdict (its error says why). */
  | 'not_judged'
  /** Finished, and no judge has been asked. */
  | 'unjudged'
  /** Cancelled before any verdict. */
  | 'cancelled'
  /** No contestant finished: nothing to judge or pick. */
  | 'nothing';

/** What the card needs of the newest analysis. */
export interface AnalysisFacts {
  status: AnalysisStatusDto;
  outcome: OutcomeDto | null;
  winner: string | null;
  error: string | null;
  /** The judge model (empty when unknown). */
  model: string;
  /** Why the winner won, by contestant id. */
  reasons: Record<string, string>;
  judgeRuns: JudgeRunDto[];
}

export interface VerdictInput {
  battleStatus: BattleStatusDto;
  masked: boolean;
  /** Each contestant's live status, by id (in battle order). */
  statuses: Record<string, ContestantStatusDto>;
  winner: WinnerDto | null;
  userVerdict: UserVerdictDto | null;
  analysis: AnalysisFacts | null;
  /** "Judging… (judge, digest of #1 …)" while the judge works. */
  judging: string | null;
  name: (id: string | null | undefined) => string;
}

/** The card's words: a headline, a line below it, and what it offers. */
export interface Verdict {
  kind: VerdictKind;
  headline: string;
  /** The second line: why, what each run chose, the judge beside the user. */
  detail: string | null;
  /** The winner shown with a trophy, if any. */
  winnerId: string | null;
  /** Offer to ask the judge (again), and to choose another judge. */
  offerJudge: boolean;
}

/** The error of an analysis the user stopped (the engine's words). */
export const ANALYSIS_CANCELLED = 'cancelled by the user';

/** Whether a status is final. */
function terminal(status: ContestantStatusDto | BattleStatusDto): boolean {
  return status === 'done' || status === 'error' || status === 'cancelled';
}

/** What the judge's runs chose, in order: "run 1 chose #1 a@m, run 2 chose #2 b@m". */
export function runsChose(runs: readonly JudgeRunDto[], name: VerdictInput['name']): string {
  return runs
    .map((run, i) => {
      const n = String(i + 1);
      if (run.verdict) {
        return `run ${n} chose ${name(run.verdict.winner)}`;
      }
      return `run ${n} gave no verdict`;
    })
    .join(', ');
}

/** The judge's verdict as a sentence beside the user's pick. */
function judgeBeside(input: VerdictInput, picked: string | null): string {
  const a = input.analysis;
  if (input.judging || a?.status === 'running') {
    return 'The judge is still at work.';
  }
  if (!a) {
    return 'No judge was asked.';
  }
  if ((a.outcome === 'winner' || a.outcome === 'walkover') && a.winner) {
    return a.winner === picked ? 'The judge agreed.' : `The judge chose ${input.name(a.winner)}.`;
  }
  if (a.outcome === 'no_clear_winner') {
    return picked === null ? 'The judge agreed.' : 'The judge saw no clear winner.';
  }
  return 'The judge gave no verdict.';
}

/** The one thing the verdict card says now. */
export function verdictOf(input: VerdictInput): Verdict {
  const { name } = input;
  const a = input.analysis;
  const base = { detail: null, winnerId: null, offerJudge: false };
  const finished = Object.values(input.statuses).filter((s) => s === 'done').length;
  const running = !terminal(input.battleStatus);

  if (input.masked) {
    return {
      ...base,
      kind: 'blind',
      headline: 'Blind: vote below the answers',
      detail: 'Who is who, and the judge’s verdict, show once you vote.',
    };
  }
  if (input.winner?.source === 'user') {
    return {
      ...base,
      kind: 'pick',
      headline: `You chose ${name(input.winner.contestant_id)}.`,
      detail: judgeBeside(input, input.winner.contestant_id),
      winnerId: input.winner.contestant_id,
    };
  }
  if (input.userVerdict === 'tie' || input.userVerdict === 'all_bad') {
    return {
      ...base,
      kind: input.userVerdict,
      headline:
        input.userVerdict === 'tie' ? 'You called it a tie.' : 'You found them all bad.',
      detail: judgeBeside(input, null),
    };
  }
  if (input.judging !== null || a?.status === 'running') {
    return {
      ...base,
      kind: 'judging',
      headline: input.judging ?? 'Judging…',
      detail: 'The judge reads every finished answer, twice, in opposite orders.',
    };
  }
  if (running) {
    return {
      ...base,
      kind: 'running',
      headline: 'Answers are coming in',
      detail: 'The judge reads them once every contestant has finished; you may pick a winner now.',
    };
  }
  if (a && (a.outcome === 'winner' || a.outcome === 'walkover') && a.winner) {
    const why = a.reasons[a.winner];
    const by = a.model ? `the judge (${a.model})` : 'the judge';
    return {
      ...base,
      kind: 'judged',
      headline: `Winner: ${name(a.winner)}`,
      detail:
        a.outcome === 'walkover'
          ? 'The only contestant that finished.'
          : why
            ? `Chosen by ${by}, both runs agreeing: ${why}`
            : `Chosen by ${by}, both runs agreeing.`,
      winnerId: a.winner,
    };
  }
  if (a && a.outcome === 'no_clear_winner') {
    const runs = runsChose(a.judgeRuns, name);
    return {
      ...base,
      kind: 'undecided',
      headline: 'No clear winner: the judge’s two runs disagreed',
      detail: runs
        ? `The judge read the answers in both orders: ${runs}. Pick the winner yourself.`
        : 'The judge read the answers in both orders and chose differently. Pick the winner yourself.',
    };
  }
  if (a) {
    const stopped = a.error === ANALYSIS_CANCELLED;
    return {
      ...base,
      kind: 'not_judged',
      headline: stopped ? 'Not judged: you stopped the judge' : 'Not judged: the judge failed',
      detail: stopped
        ? 'Analyse again, or pick the winner yourself.'
        : (a.error ??
          (a.outcome === 'judge_error'
            ? 'The judge gave no usable verdict.'
            : 'The judge gave no verdict.')),
      offerJudge: finished > 0,
    };
  }
  if (finished === 0) {
    return {
      ...base,
      kind: input.battleStatus === 'cancelled' ? 'cancelled' : 'nothing',
      headline:
        input.battleStatus === 'cancelled'
          ? 'Cancelled: no verdict'
          : 'No verdict: no contestant finished',
      detail:
        input.battleStatus === 'cancelled'
          ? 'The battle was cancelled before any contestant finished.'
          : 'There is nothing to judge or to pick.',
    };
  }
  if (input.battleStatus === 'cancelled') {
    return {
      ...base,
      kind: 'cancelled',
      headline: 'Cancelled: no verdict',
      detail: 'The battle was cancelled before a verdict; you may still pick among those that finished, or ask a judge.',
      offerJudge: true,
    };
  }
  return {
    ...base,
    kind: 'unjudged',
    headline: 'Not judged yet',
    detail: 'No judge has read the answers: analyse them, or pick the winner yourself.',
    offerJudge: true,
  };
}

/**
 * What the picker's "no pick" option reads: the judge's winner when it has
 * one (the choice that hands the verdict back to it), else plainly none.
 */
export function noPickLabel(analysis: AnalysisFacts | null, name: VerdictInput['name']): string {
  if (
    analysis &&
    (analysis.outcome === 'winner' || analysis.outcome === 'walkover') &&
    analysis.winner
  ) {
    return `The judge’s pick (${name(analysis.winner)})`;
  }
  return 'No pick';
}

/** What a history row needs of its battle to word its verdict. */
export interface VerdictSummary {
  status: BattleStatusDto;
  masked: boolean;
  /** The winner's name, when there is one (chosen by the user or the judge). */
  winner: { name: string; source: 'user' | 'analysis' } | null;
  userVerdict: UserVerdictDto | null;
  judging: { status: AnalysisStatusDto; outcome: OutcomeDto | null } | null;
  /** How many contestants finished. */
  finished: number;
}

/**
 * The headline a history row shows, worded as the card words the same
 * state (the row has no judge's error: "open the battle" says where it is).
 */
export function verdictHeadline(b: VerdictSummary): { text: string; muted: boolean } {
  if (b.masked) {
    return { text: 'Blind: waiting for your vote', muted: true };
  }
  if (b.winner) {
    return b.winner.source === 'user'
      ? { text: `You chose ${b.winner.name}`, muted: false }
      : { text: `Winner: ${b.winner.name}`, muted: false };
  }
  if (b.userVerdict === 'tie') {
    return { text: 'You called it a tie', muted: false };
  }
  if (b.userVerdict === 'all_bad') {
    return { text: 'You found them all bad', muted: false };
  }
  if (b.judging?.status === 'running') {
    return { text: 'Judging…', muted: true };
  }
  if (!terminal(b.status)) {
    return { text: 'Answers are coming in', muted: true };
  }
  if (b.judging?.outcome === 'no_clear_winner') {
    return { text: 'No clear winner: the judge’s two runs disagreed', muted: false };
  }
  if (b.judging?.outcome === 'judge_error') {
    return { text: 'Not judged: the judge gave no usable verdict', muted: false };
  }
  if (b.judging) {
    return { text: 'Not judged: the judge failed (open the battle for why)', muted: false };
  }
  if (b.finished === 0) {
    return b.status === 'cancelled'
      ? { text: 'Cancelled: no verdict', muted: true }
      : { text: 'No verdict: no contestant finished', muted: true };
  }
  if (b.status === 'cancelled') {
    return { text: 'Cancelled: no verdict', muted: true };
  }
  return { text: 'Not judged yet', muted: true };
}

/** The newest analysis as the card needs it, from the snapshot and the events. */
export function analysisFacts(current: CurrentAnalysis | null): AnalysisFacts | null {
  if (!current?.status) {
    return null;
  }
  const { record, progress, status } = current;
  // The outcome as the newer of the two tells it.
  const latest = record?.status === status ? record : (progress ?? record);
  return {
    status,
    outcome: latest?.outcome ?? null,
    winner: latest?.winner ?? null,
    error: latest?.error ?? null,
    model: record?.model ?? '',
    reasons: record?.reasons ?? {},
    judgeRuns: record?.judge_runs ?? [],
  };
}
