// The Apply button's two steps: the first click asks the backend to apply;
// a change with files that run without the user running the project (CI
// workflows, editor tasks, `.envrc`, hook managers' configs, …) comes back
// held, nothing written, with those files named, and only a second click
// ("Apply anyway") carries the user's yes.
import type { AppliedFileDto, ApplyResultDto, ChangeStatusDto } from '../ipc';

export type ApplyState =
  | { step: 'ready' }
  | { step: 'held'; result: ApplyResultDto }
  | { step: 'applied'; result: ApplyResultDto };

export const READY: ApplyState = { step: 'ready' };

/** Whether a click in `state` carries the user's yes: only the one after a held result. */
export function confirms(state: ApplyState): boolean {
  return state.step === 'held';
}

/** The state once the backend answered a click. */
export function answered(result: ApplyResultDto): ApplyState {
  return result.applied ? { step: 'applied', result } : { step: 'held', result };
}

/** What the button says in `state`. */
export function buttonLabel(state: ApplyState, busy: boolean): string {
  if (busy) return 'Applying…';
  return state.step === 'held' ? 'Apply anyway' : 'Apply to project';
}

/** The files that run by themselves, flagged by the backend. */
export function autorunFiles(result: ApplyResultDto): AppliedFileDto[] {
  return result.files.filter((f) => f.autorun !== null);
}

/** One letter per change, as `git status --short` writes it. */
export function statusMark(status: ChangeStatusDto): string {
  const marks: Record<ChangeStatusDto, string> = {
    added: 'A',
    modified: 'M',
    deleted: 'D',
    renamed: 'R',
  };
  return marks[status];
}
