// Which screen is showing, kept in the URL hash so back/forward work:
// #/new (#/new/from/<battle id>: the launcher filled in with what that
// battle was started with, for Edit & rerun), #/battle/<id>, #/series/<id>, #/history, #/leaderboard, #/settings,
// #/packs (a pack run's matrix and scores: #/packs/<run id>).

export type Route =
  | { name: 'launcher'; from?: string }
  | { name: 'battle'; id: string }
  | { name: 'series'; id: string }
  | { name: 'history' }
  | { name: 'leaderboard' }
  | { name: 'packs'; run: string | null }
  | { name: 'settings' };

/** A battle's or series' route from its escaped id; history when the id is garbled. */
function idRoute(name: 'battle' | 'series', escaped: string | undefined): Route {
  if (!escaped) {
    return { name: 'history' };
  }
  try {
    return { name, id: decodeURIComponent(escaped) };
  } catch {
    return { name: 'history' };
  }
}

/** The route a location hash shows; anything unknown is the launcher. */
export function parse(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/');
  switch (parts[0]) {
    case 'battle':
    case 'series':
      return idRoute(parts[0], parts[1]);
    case 'history':
      return { name: 'history' };
    case 'leaderboard':
      return { name: 'leaderboard' };
    case 'packs': {
      const run = idRoute('series', parts[1]);
      return { name: 'packs', run: run.name === 'series' ? run.id : null };
    }
    case 'settings':
      return { name: 'settings' };
    case 'new': {
      const from = parts[1] === 'from' ? idRoute('battle', parts[2]) : null;
      return from?.name === 'battle' ? { name: 'launcher', from: from.id } : { name: 'launcher' };
    }
    default:
      return { name: 'launcher' };
  }
}

/** The link target for `route`, for `<a href>`. */
export function href(route: Route): string {
  switch (route.name) {
    case 'battle':
    case 'series':
      return `#/${route.name}/${encodeURIComponent(route.id)}`;
    case 'launcher':
      return route.from === undefined ? '#/new' : `#/new/from/${encodeURIComponent(route.from)}`;
    case 'packs':
      return route.run === null ? '#/packs' : `#/packs/${encodeURIComponent(route.run)}`;
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
