// Starting a battle again (src-tauri/rerun.rs): "Run again" at once, or
// "Edit & rerun" through the launcher, prefilled with what it was started with.
import type { BattleDto, LaunchDto } from './bindings';
import { call } from './index';

/** What battle `id` was started with, for the launcher. */
export function battleLaunch(id: string): Promise<LaunchDto> {
  return call<LaunchDto>('battle_launch', { id });
}

/** Starts battle `id` anew with what it was started with; follow the new one. */
export function rerunBattle(id: string): Promise<BattleDto> {
  return call<BattleDto>('rerun_battle', { id });
}
