// A backend call the user starts (a button, a form): whether it is under
// way, for the button's state, and how it last failed, for the message.
import { toIpcError, type IpcError } from '../ipc';

export class Call {
  busy = $state(false);
  error = $state<IpcError | null>(null);

  /** Runs `call`; resolves to whether it succeeded (else `error` says why). */
  async run(call: () => Promise<unknown>): Promise<boolean> {
    this.busy = true;
    this.error = null;
    try {
      await call();
      return true;
    } catch (e: unknown) {
      this.error = toIpcError(e);
      return false;
    } finally {
      this.busy = false;
    }
  }
}
