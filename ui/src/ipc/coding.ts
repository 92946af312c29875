// The Coding launcher's questions (src-tauri/coding.rs): the project's base
// (HEAD and the uncommitted files) and whether the check can run.
import type { CheckProbeDto, CodingBaseDto } from './bindings';
import { call } from './index';

/** HEAD's commit and the uncommitted files of the project at `project`. */
export function codingBase(project: string): Promise<CodingBaseDto> {
  return call<CodingBaseDto>('coding_base', { project });
}

/** Whether the check's first word is found where the check will run. */
export function probeCheck(project: string, checkCommand: string): Promise<CheckProbeDto> {
  return call<CheckProbeDto>('probe_check', {
    request: { project, check_command: checkCommand },
  });
}
