/** The error shape serialised by the backend (`ErrorDto` of `arena-api`). */
export interface IpcErrorPayload {
  /** Stable snake_case identifier (e.g. `data_dir`, `internal`). */
  code: string;
  /** Human-readable message. */
  message: string;
}

/** Codes produced on the frontend side of the IPC boundary. */
export const CLIENT_ERROR_CODES = {
  notInTauri: 'not_in_tauri',
  unknown: 'unknown',
} as const;

/** An error from an IPC call: `{ code, message }` plus a stack. */
export class IpcError extends Error implements IpcErrorPayload {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = 'IpcError';
    this.code = code;
  }
}

export function isIpcErrorPayload(value: unknown): value is IpcErrorPayload {
  return (
    typeof value === 'object' &&
    value !== null &&
    'code' in value &&
    'message' in value &&
    typeof value.code === 'string' &&
    typeof value.message === 'string'
  );
}

/** Normalises anything thrown by `invoke` into an {@link IpcError}. */
export function toIpcError(value: unknown): IpcError {
  if (value instanceof IpcError) {
    return value;
  }
  if (isIpcErrorPayload(value)) {
    return new IpcError(value.code, value.message);
  }
  if (value instanceof Error) {
    return new IpcError(CLIENT_ERROR_CODES.unknown, value.message);
  }
  return new IpcError(CLIENT_ERROR_CODES.unknown, String(value));
}
