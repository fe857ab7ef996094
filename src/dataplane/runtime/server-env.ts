/**
 * The environment a workload's server starts with (so that no server receives
 * `SKEP_SECRETS_PASSWORD`, the master password of the encrypted secret store). A server is
 * third-party code, so it does not inherit Skep's environment: it gets the variables named in
 * `SERVER_ENV_ALLOWLIST` from the runner's environment (what a program needs to find its tools,
 * locale, temp dir, the network proxy and the npx/uvx caches) plus what its run configuration names
 * (`env_vars` and resolved secrets, which always win). Everything else stays out: `SKEP_*` (the
 * secrets password, the API token, the runner's config), and any credential of Skep's own
 * environment (`AWS_*`, `GITHUB_TOKEN`, `*_TOKEN`, `*_KEY`, `*_SECRET`, npm auth settings, ...),
 * unless the run configuration sets it by value.
 *
 * Not passed, on purpose: `TERM` (a server has no terminal; its stderr goes to a log file),
 * `XDG_RUNTIME_DIR` (the user's session sockets: D-Bus, keyring, Podman), `NODE_OPTIONS`
 * (may preload code), and `npm_config_*` / `UV_*` wholesale (they can hold registry tokens;
 * only the settings that locate caches, registries and certificates are listed).
 */

/**
 * Names (exact, case-sensitive on POSIX; `PREFIX*` matches a prefix) that a server inherits
 * from the runner's environment. docs/running-servers.md, "The server's environment", cites this list.
 */
export const SERVER_ENV_ALLOWLIST: readonly string[] = Object.freeze([
  // Finding programs, who the user is, where home and temp are.
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TMPDIR',
  // Locale and time zone.
  'LANG',
  'LANGUAGE',
  'LC_*',
  'TZ',
  // The network proxy the user's machine needs (credentials in a proxy URL are the user's
  // choice of proxy configuration, which every program on the machine uses anyway).
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'all_proxy',
  // Certificates of a corporate TLS-inspecting proxy.
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'NODE_EXTRA_CA_CERTS',
  'REQUESTS_CA_BUNDLE',
  // Where npx (npm) and uvx (uv) keep their caches and find their registries.
  'XDG_CACHE_HOME',
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
  'npm_config_cache',
  'npm_config_registry',
  'npm_config_prefix',
  'npm_config_userconfig',
  'npm_config_globalconfig',
  'npm_config_offline',
  'npm_config_prefer_offline',
  'NPM_CONFIG_CACHE',
  'NPM_CONFIG_REGISTRY',
  'NPM_CONFIG_PREFIX',
  'NPM_CONFIG_USERCONFIG',
  'UV_CACHE_DIR',
  'UV_TOOL_DIR',
  'UV_TOOL_BIN_DIR',
  'UV_PYTHON',
  'UV_PYTHON_INSTALL_DIR',
  'UV_PYTHON_DOWNLOADS',
  'UV_DEFAULT_INDEX',
  'UV_INDEX',
  'UV_INDEX_URL',
  'UV_EXTRA_INDEX_URL',
  'UV_NATIVE_TLS',
  'UV_OFFLINE',
  // Windows: what programs (and npx.cmd) need to run at all.
  'SYSTEMROOT',
  'WINDIR',
  'COMSPEC',
  'PATHEXT',
  'TEMP',
  'TMP',
  'USERPROFILE',
  'APPDATA',
  'LOCALAPPDATA',
  'PROGRAMDATA',
  'PROGRAMFILES',
  'HOMEDRIVE',
  'HOMEPATH',
]);

const exact = new Set(SERVER_ENV_ALLOWLIST.filter((n) => !n.endsWith('*')));
const prefixes = SERVER_ENV_ALLOWLIST.filter((n) => n.endsWith('*')).map((n) => n.slice(0, -1));
// Windows environment names are case-insensitive (`Path`, `SystemRoot`).
const exactUpper = new Set([...exact].map((n) => n.toUpperCase()));

/** Whether a server inherits the runner's variable `name` (see `SERVER_ENV_ALLOWLIST`). */
export function inheritable(name: string, platform: NodeJS.Platform = process.platform): boolean {
  if (platform === 'win32') {
    const upper = name.toUpperCase();
    return exactUpper.has(upper) || prefixes.some((p) => upper.startsWith(p.toUpperCase()));
  }
  return exact.has(name) || prefixes.some((p) => name.startsWith(p));
}

/**
 * The server's environment: the allow-listed part of `parent` (the runner's environment),
 * then `configured` (the run configuration's `env_vars` and secrets) on top.
 */
export function serverEnvironment(
  parent: NodeJS.ProcessEnv,
  configured: Readonly<Record<string, string>>,
  platform: NodeJS.Platform = process.platform,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(parent)) {
    if (value !== undefined && inheritable(key, platform)) out[key] = value;
  }
  return Object.assign(out, configured);
}
