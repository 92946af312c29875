// Edit & rerun, as pure functions: the launcher's form filled in with what
// a battle was started with (`LaunchDto`), each contestant's model named as
// the launcher's model list names it.
import type { LaunchContestantDto, LaunchDto } from '../ipc';
import { newRow, type LauncherForm, type ModelGroup } from './launcher';

/**
 * The model list's value for a contestant's model: the bare id, or
 * `PROVIDER/MODEL` where the list names it so (several providers serve
 * it); `PROVIDER/MODEL` too when its provider does not serve it now (the
 * launcher then says so). An agent's own model (no provider) as it is.
 */
export function launchModel(c: LaunchContestantDto, groups: readonly ModelGroup[]): string {
  if (c.provider === '') {
    return c.model;
  }
  const qualified = `${c.provider}/${c.model}`;
  const group = groups.find((g) => g.provider === c.provider);
  const option = group?.options.find((o) => o.value === qualified || o.value === c.model);
  return option?.value ?? qualified;
}

/** `form` filled in with `launch` (the other battle type's rows are kept). */
export function launchForm(
  form: LauncherForm,
  launch: LaunchDto,
  groups: readonly ModelGroup[],
): LauncherForm {
  return {
    ...form,
    battleType: launch.battle_type,
    project: launch.project,
    prompt: launch.prompt,
    contestants: {
      ...form.contestants,
      [launch.battle_type]: launch.contestants.map((c) =>
        newRow(c.identity, launchModel(c, groups)),
      ),
    },
    checkCommand: launch.check_command ?? '',
    blind: launch.blind,
    tags: launch.tags.join(', '),
    base: launch.base,
  };
}
