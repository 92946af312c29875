// A project folder as typed in a field (the launcher's, the leaderboard's
// filter): what can be said of it before the engine is asked.

/**
 * Why a typed project folder cannot be used (yet), or null when it can;
 * blank is left to the field (any project, or "choose one"). A relative
 * path would be read against the app's own folder, so it is refused at
 * once; everything else is the engine's to check.
 */
export function projectProblem(project: string): string | null {
  const folder = project.trim();
  if (folder !== '' && !folder.startsWith('/')) {
    return 'Give the folder’s full path (it starts with /).';
  }
  return null;
}

/** The marker before the folder's path in an `open_failed` error. */
const PATH_MARK = 'its path: ';

/**
 * A folder the OS could not show (`open_failed`): the folder's path to open
 * by hand; any other error keeps its message and has no path.
 */
export function folderFailure(error: { code: string; message: string }): {
  path: string | null;
  message: string;
} {
  const at = error.message.lastIndexOf(PATH_MARK);
  if (error.code === 'open_failed' && at >= 0) {
    return { path: error.message.slice(at + PATH_MARK.length).trim(), message: error.message };
  }
  return { path: null, message: error.message };
}
