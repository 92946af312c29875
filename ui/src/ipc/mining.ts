// Mining a history (src-tauri/packs.rs, issue 41): the validated run into
// a pack with its instructions, stopping it, writing instructions again,
// and what the form shows before a run (the detected test command, the
// default writer). Types from ./bindings/ (arena-api's packs/mining.rs).
import { Channel } from '@tauri-apps/api/core';
import type {
  DefaultWriterDto,
  DetectedCommandDto,
  InstructionCountsDto,
  InstructionsDto,
  MineProgressDto,
  MineRequest,
  MineRunDto,
  WriteInstructionsRequest,
} from './bindings';
import { call } from './index';

/** Mines a project's history: the scan, each candidate validated by
 * running, the validated tasks written as a pack with their instructions;
 * `onProgress` hears where it is as it goes. */
export function mineHistory(
  request: MineRequest,
  onProgress: (progress: MineProgressDto) => void,
): Promise<MineRunDto> {
  const channel = new Channel<MineProgressDto>(onProgress);
  return call<MineRunDto>('mine_history', { request, onProgress: channel });
}

/** Stops the mining run (or the instructions' writing) under way: it
 * reports what it had so far. Whether one was running. */
export function stopMining(): Promise<boolean> {
  return call<boolean>('stop_mining');
}

/** Writes the instructions of a mined pack's tasks that have none. */
export function writePackInstructions(
  request: WriteInstructionsRequest,
  onProgress: (progress: MineProgressDto) => void,
): Promise<InstructionsDto> {
  const channel = new Channel<MineProgressDto>(onProgress);
  return call<InstructionsDto>('write_pack_instructions', { request, onProgress: channel });
}

/** How a pack's tasks stand with their instructions (after review too). */
export function packInstructions(pack: string): Promise<InstructionCountsDto> {
  return call<InstructionCountsDto>('pack_instructions', { pack });
}

/** The test command the project's files call for, or null. */
export function detectTestCommand(project: string): Promise<DetectedCommandDto | null> {
  return call<DetectedCommandDto | null>('detect_test_command', { project });
}

/** The writer used when none is picked (the default model when local). */
export function defaultWriter(): Promise<DefaultWriterDto> {
  return call<DefaultWriterDto>('default_writer');
}
