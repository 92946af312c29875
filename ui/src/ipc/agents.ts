// Settings' agents and personas (src-tauri/commands.rs): one `[[backend]]`
// of arena.toml and one persona of AGENTS.md at a time, and creating a
// missing config file. Types from ./bindings/ (arena-api's agents module).
import type { BackendDto, BackendInputDto, PersonaInputDto, PersonasDto } from './bindings';
import { call } from './index';

/** Adds a `[[backend]]`, or writes over the one named `input.previous`;
 * rejects with `invalid_input` naming the field. The agents as they are now. */
export function saveBackend(input: BackendInputDto): Promise<BackendDto[]> {
  return call<BackendDto[]>('save_backend', { input });
}

/** Removes the `[[backend]]` named `name`. */
export function removeBackend(name: string): Promise<BackendDto[]> {
  return call<BackendDto[]>('remove_backend', { name });
}

/** Adds a persona, or writes over the one named `input.previous`. */
export function savePersona(input: PersonaInputDto): Promise<PersonasDto> {
  return call<PersonasDto>('save_persona', { input });
}

/** Creates the missing config file with the defaults; `false` when a file
 * was there by then (it is left as it is). */
export function createConfig(): Promise<boolean> {
  return call<boolean>('create_config');
}
