// Which screen is showing, kept in the URL hash so back/forward work:
// #/new, #/battle/<id>, #/history, #/leaderboard, #/settings.

export type Route =
  | { name: 'launcher' }
  | { name: 'battle'; id: string }
  | { name: 'history' }
  | { name: 'leaderboard' }
  | { name: 'settings' };

/** The route a location hash shows; anything unknown is the launcher. */
/** A battle's route from its escaped id; history when the id is garbled. */
function battleRoute(escaped: string): Route {
  try {
    return { name: 'battle', id: decodeURIComponent(escaped) };
  } catch {
    return { name: 'history' };
  }
}

export function parse(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/');
  switch (parts[0]) {
    case 'battle':
      return parts[1] ? battleRoute(parts[1]) : { name: 'history' };
    case 'history':
      return { name: 'history' };
    case 'leaderboard':
      return { name: 'leaderboard' };
    case 'settings':
      return { name: 'settings' };
    default:
      return { name: 'launcher' };
  }
}

/** The link target for `route`, for `<a href>`. */
export function href(route: Route): string {
  switch (route.name) {
    case 'battle':
      return `#/battle/${encodeURIComponent(route.id)}`;
    case 'launcher':
      return '#/new';
    default:
      return `#/${route.name}`;
  }
}

export const router = $state<{ route: Route }>({ route: parse(window.location.hash) });

window.addEventListener('hashchange', () => {
  router.route = parse(window.location.hash);
});

/** Shows `route` (and records it in the history). */
export function navigate(route: Route): void {
  const hash = href(route);
  if (window.location.hash !== hash) {
    window.location.hash = hash;
  }
  router.route = route;
}
