// The only module that talks to the Tauri backend: everything else imports
// the typed wrappers from here (enforced by ESLint).
import { invoke, isTauri } from '@tauri-apps/api/core';
import { CLIENT_ERROR_CODES, IpcError, toIpcError } from './errors';

export { IpcError, isIpcErrorPayload, toIpcError, type IpcErrorPayload } from './errors';

/** Mirrors `AppInfo` in `src-tauri/dto.rs`. */
export interface AppInfo {
  version: string;
  dataDir: string;
  /** Battles in the database; null when the engine could not open. */
  battles: number | null;
  /** Why the engine could not open, if it could not. */
  startupError: string | null;
}

/** Calls a backend command; rejects with an {@link IpcError}. */
async function call<T>(command: string, args?: Record<string, unknown>): Promise<T> {
  if (!isTauri()) {
    throw new IpcError(CLIENT_ERROR_CODES.notInTauri, 'Not running inside the Arena desktop app.');
  }
  try {
    return await invoke<T>(command, args);
  } catch (e: unknown) {
    throw toIpcError(e);
  }
}

/** The app version and the shared data directory. */
export function appInfo(): Promise<AppInfo> {
  return call<AppInfo>('app_info');
}
