/** The web UI's shell: navigation, theme, the session-lost notice, and the page for the path. */
import { render } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { adoptCsrfToken, onLoggedOut, request } from './api.js';
import { Link } from './components.js';
import { CatalogDetailPage, CatalogPage } from './pages/catalog.js';
import { ClientsPage } from './pages/clients.js';
import { GroupsPage } from './pages/groups.js';
import { PlaygroundPage } from './pages/playground.js';
import { RegistrySourcePage } from './pages/registry.js';
import { SecretsPage } from './pages/secrets.js';
import { ServerDetailPage, ServersPage } from './pages/servers.js';
import { SkillsPage } from './pages/skills.js';
import { match, usePath } from './router.js';
import './styles.css';

const NAV = [
  ['/servers', 'Servers'],
  ['/catalog', 'Catalog'],
  ['/playground', 'Playground'],
  ['/secrets', 'Secrets'],
  ['/clients', 'Clients'],
  ['/groups', 'Groups'],
  ['/skills', 'Skills'],
  ['/registry-source', 'Registry source'],
] as const;

type Theme = 'light' | 'dark' | 'system';
const THEME_KEY = 'skep-theme';

const PREFERS_DARK = window.matchMedia('(prefers-color-scheme: dark)');

/**
 * `data-theme` is the user's choice (absent: follow the system); `data-scheme` is the one
 * the stylesheet reads: the choice, or the system's preference while there is none.
 */
function applyTheme(theme: Theme): void {
  const root = document.documentElement.dataset;
  if (theme === 'system') delete root['theme'];
  else root['theme'] = theme;
  root['scheme'] = theme === 'system' ? (PREFERS_DARK.matches ? 'dark' : 'light') : theme;
}

function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(
    () => (localStorage.getItem(THEME_KEY) as Theme | null) ?? 'system',
  );
  // A layout effect: the page's colours change in the same commit as the button's label
  // (a plain effect ran later, so for a moment the label and the colours disagreed).
  useLayoutEffect(() => {
    applyTheme(theme);
    if (theme !== 'system') {
      localStorage.setItem(THEME_KEY, theme);
      return undefined;
    }
    localStorage.removeItem(THEME_KEY);
    const follow = () => applyTheme('system');
    PREFERS_DARK.addEventListener('change', follow);
    return () => PREFERS_DARK.removeEventListener('change', follow);
  }, [theme]);
  const next: Record<Theme, Theme> = { system: 'light', light: 'dark', dark: 'system' };
  return (
    <button
      type="button"
      class="small ghost"
      onClick={() => setTheme((current) => next[current])}
      aria-label={`Theme: ${theme}. Switch to ${next[theme]}`}
      title="Switch theme"
    >
      Theme: {theme}
    </button>
  );
}

function Page(props: { path: string }) {
  const path = props.path;
  let params: Record<string, string> | undefined;
  if (path === '/' || match('/servers', path) !== undefined) return <ServersPage />;
  if ((params = match('/servers/:name', path)) !== undefined)
    return <ServerDetailPage name={params['name'] ?? ''} />;
  if (match('/catalog', path) !== undefined) return <CatalogPage />;
  if ((params = match('/catalog/:server', path)) !== undefined)
    return <CatalogDetailPage server={params['server'] ?? ''} />;
  if (match('/playground', path) !== undefined) return <PlaygroundPage />;
  if ((params = match('/playground/:name', path)) !== undefined)
    return <PlaygroundPage name={params['name'] ?? ''} />;
  if (match('/secrets', path) !== undefined) return <SecretsPage />;
  if (match('/clients', path) !== undefined) return <ClientsPage />;
  if (match('/groups', path) !== undefined) return <GroupsPage />;
  if (match('/skills', path) !== undefined) return <SkillsPage />;
  if (match('/registry-source', path) !== undefined) return <RegistrySourcePage />;
  return (
    <div class="empty">
      <strong>No page here</strong>
      <div>
        <Link href="/servers">Go to Servers</Link>
      </div>
    </div>
  );
}

function App() {
  const path = usePath();
  const [loggedOut, setLoggedOut] = useState(false);
  useEffect(() => onLoggedOut(() => setLoggedOut(true)), []);
  // After an in-app navigation, keyboard and screen-reader users continue at the new content.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    document.getElementById('main')?.focus({ preventScroll: true });
  }, [path]);
  const section = NAV.find(([href]) => path === href || path.startsWith(`${href}/`))?.[0] ?? '/servers';
  const logout = async () => {
    await request('POST', '/auth/logout').catch(() => undefined);
    setLoggedOut(true);
  };
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">Skep</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map(([href, label]) => (
              <li key={href}>
                <Link href={href} class={section === href ? 'active' : ''}>
                  {label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div class="topbar-end">
          <a href="/api/doc">API docs</a>
          <ThemeToggle />
          <button type="button" class="small ghost" onClick={() => void logout()}>
            Log out
          </button>
        </div>
      </header>
      {loggedOut && (
        <div class="error banner" role="alert">
          <strong>You are logged out.</strong> The browser session ended (logout, an hour without use, or a
          restart of <code>skep serve</code>). Run <code>skep ui</code> for a new login link.
        </div>
      )}
      <main id="main" tabIndex={-1}>
        <Page path={path} />
      </main>
    </div>
  );
}

adoptCsrfToken();
const root = document.getElementById('app');
if (root !== null) {
  root.textContent = '';
  render(<App />, root);
}
