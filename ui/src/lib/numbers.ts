// How a contestant's figures read in the roster: its cost in words (free
// on a local model, "set a price" for a cloud model without one), and
// whether a model load belongs beside its first token. Pure functions.
import type { ContestantDto, ContestantStatusDto } from '../ipc';
import { usd } from './format';

/** A cost as the roster shows it. */
export interface CostView {
  /** The amount, or what stands for it ("—", "set a price"). */
  text: string;
  /** A line below it ("free, local"); `null` for none. */
  note: string | null;
  /** `text` is a link to where a price is set. */
  setPrice: boolean;
  /** What the figure is, or why there is none. */
  title: string;
}

const ENDED: readonly ContestantStatusDto[] = ['done', 'error', 'cancelled'];

/**
 * A contestant's cost: its amount when known ("$0" and "free, local" on a
 * model of this machine), "set a price" for a cloud model that finished
 * with no price and no cost from its server, "—" otherwise with why.
 */
export function costView(
  c: Pick<ContestantDto, 'lane' | 'model' | 'provider' | 'worktree'>,
  cost: number | null,
  status: ContestantStatusDto,
): CostView {
  const local = c.lane === 'local';
  if (cost !== null) {
    return local && cost === 0
      ? {
          text: usd(cost),
          note: 'free, local',
          setPrice: false,
          title: 'A model on your own machine costs nothing',
        }
      : {
          text: usd(cost),
          note: null,
          setPrice: false,
          title: "What the run cost: the server's figure, else its tokens at the model's price",
        };
  }
  if (!ENDED.includes(status)) {
    return { text: '—', note: null, setPrice: false, title: 'Known once it has finished' };
  }
  if (local) {
    return {
      text: usd(0),
      note: 'free, local',
      setPrice: false,
      title: 'A model on your own machine costs nothing',
    };
  }
  if (c.worktree !== null) {
    return {
      text: '—',
      note: null,
      setPrice: false,
      title: 'The agent reported no token counts, so no cost is known',
    };
  }
  if (status !== 'done') {
    return {
      text: '—',
      note: null,
      setPrice: false,
      title: 'Not known: the run ended before its server reported a cost',
    };
  }
  return {
    text: 'set a price',
    note: null,
    setPrice: true,
    title: `${c.model} at ${c.provider} has no price and its server reported no cost. Add a [[price]] table for it to arena.toml (its path is under Settings):\n[[price]]\nprovider = "${c.provider}"\nmodel = "${c.model}"\ninput_per_mtok = …\noutput_per_mtok = …`,
  };
}

/**
 * Whether "includes model load" belongs beside a first token: only a
 * model's answer that has a first token (an agent has none, and no load of
 * its own to speak of) on a server that switched model for it.
 */
export function showsModelLoad(modelSwitched: boolean, ttftMs: number | null): boolean {
  return modelSwitched && ttftMs !== null;
}
