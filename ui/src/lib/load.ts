// A value a screen asks the backend for: on its way, arrived, or failed.
import { toIpcError, type IpcError } from '../ipc';

export type Load<T> =
  { state: 'loading' } | { state: 'ready'; value: T } | { state: 'error'; error: IpcError };

/** Calls `fetch` and settles its answer into a `Load`. */
export async function load<T>(fetch: () => Promise<T>): Promise<Load<T>> {
  try {
    return { state: 'ready', value: await fetch() };
  } catch (e: unknown) {
    return { state: 'error', error: toIpcError(e) };
  }
}

/**
 * `load` for a value asked for again and again (a reload, a changed filter):
 * an answer overtaken by a newer call settles to `null`, to be dropped.
 */
export function newestOnly<A extends unknown[], T>(
  fetch: (...args: A) => Promise<T>,
): (...args: A) => Promise<Load<T> | null> {
  let calls = 0;
  return async (...args: A) => {
    calls += 1;
    const call = calls;
    const answer = await load(() => fetch(...args));
    return call === calls ? answer : null;
  };
}
