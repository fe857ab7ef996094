/** Catalog: the registry's servers and skills, a server's detail, and running it through a form. */
import { useEffect, useState } from 'preact/hooks';
import { api, get, getText, seg } from '../api.js';
import { readableLog } from '../log-text.js';
import {
  asApiError,
  AutostartField,
  DataTable,
  Empty,
  ErrorBox,
  Field,
  FormActions,
  Link,
  Loading,
  Notice,
  PageHeader,
  StatusBadge,
  Tabs,
  TextField,
  TextInput,
  useAction,
  useLoad,
} from '../components.js';
import type {
  CatalogSkill,
  CreateWorkloadRequest,
  EnvVar,
  FoundServer,
  Group,
  Header,
  ImageServer,
  RemoteServer,
  WorkloadDetail,
} from '../types.js';
import { WORKLOAD_NAME_HINT, workloadNameError } from '../../../workloads/name-rule/index.js';

type Entry = (ImageServer & { remote: false }) | (RemoteServer & { remote: true });

const shortName = (name: string) =>
  (name.split('/').pop() ?? name)
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '') || 'server';

function matches(entry: Entry, query: string): boolean {
  const q = query.trim().toLowerCase();
  if (q === '') return true;
  return [entry.name, entry.title ?? '', entry.description, ...(entry.tags ?? []), ...entry.tools].some((s) =>
    s.toLowerCase().includes(q),
  );
}

export function CatalogPage() {
  const [tab, setTab] = useState<'servers' | 'skills'>('servers');
  const [query, setQuery] = useState('');
  return (
    <section>
      <PageHeader title="Catalog">
        <Link href="/registry-source">Registry source</Link>
      </PageHeader>
      <div class="toolbar">
        <Tabs
          label="Catalog"
          tabs={{ servers: 'Servers', skills: 'Skills' }}
          selected={tab}
          onSelect={setTab}
        />
        <input
          type="search"
          placeholder={`Search ${tab}`}
          aria-label={`Search ${tab}`}
          value={query}
          onInput={(e) => setQuery((e.target as HTMLInputElement).value)}
        />
      </div>
      {tab === 'servers' ? <ServerList query={query} /> : <SkillList query={query} />}
    </section>
  );
}

function ServerList(props: { query: string }) {
  const list = useLoad(async () => {
    const r = await get<{ servers: ImageServer[]; remote_servers: RemoteServer[] }>(
      '/api/v1beta/registry/default/servers',
    );
    const entries: Entry[] = [
      ...r.servers.map((s) => Object.assign({}, s, { remote: false as const })),
      ...r.remote_servers.map((s) => Object.assign({}, s, { remote: true as const })),
    ];
    return entries.sort((a, b) => a.name.localeCompare(b.name));
  }, []);
  const shown = (list.data ?? []).filter((e) => matches(e, props.query));
  return (
    <>
      <ErrorBox error={list.error} title="Could not read the registry" />
      {list.loading && <Loading />}
      {list.data !== undefined && list.data.length === 0 && (
        <Empty title="The registry has no servers">
          Point Skep at another registry on the <Link href="/registry-source">Registry source</Link> page.
        </Empty>
      )}
      {list.data !== undefined && list.data.length > 0 && shown.length === 0 && (
        <Empty title="Nothing matches">
          Try another word: names, descriptions, tags and tool names are searched.
        </Empty>
      )}
      <ul class="cards" aria-label="Catalog servers">
        {shown.map((e) => (
          <li key={e.name} class="card">
            <h2>
              <Link href={`/catalog/${seg(e.name)}`}>{e.title ?? e.name}</Link>
            </h2>
            <p class="muted small">
              {e.name} · {e.remote ? 'remote' : e.transport} · {e.tier}
            </p>
            <p>{e.description}</p>
            {e.tools.length > 0 && (
              <p class="muted small">
                {e.tools.length} tool{e.tools.length === 1 ? '' : 's'}: {e.tools.slice(0, 6).join(', ')}
                {e.tools.length > 6 ? ', …' : ''}
              </p>
            )}
          </li>
        ))}
      </ul>
    </>
  );
}

function skillReference(skill: CatalogSkill): string | undefined {
  const pkg = skill.packages?.[0];
  if (pkg === undefined) return undefined;
  if (pkg.registryType === 'git' && pkg.url !== undefined)
    return `git://${pkg.url.replace(/^https?:\/\//, '')}${pkg.ref !== undefined ? `@${pkg.ref}` : ''}${pkg.subfolder !== undefined ? `#${pkg.subfolder}` : ''}`;
  return pkg.identifier;
}

function SkillList(props: { query: string }) {
  const list = useLoad(
    () =>
      get<{ skills: CatalogSkill[] }>(
        `/registry/default/v0.1/x/dev.toolhive/skills?limit=200&q=${encodeURIComponent(props.query)}`,
      ).then((r) => r.skills),
    [props.query],
  );
  const action = useAction();
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const install = async (skill: CatalogSkill, reference: string) => {
    setNotice(undefined);
    if (
      await action.run(`Installing ${skill.name}`, () =>
        api('POST', '/api/v1beta/skills', { name: reference }),
      )
    )
      setNotice(`Installed ${skill.name}. See Skills.`);
  };
  return (
    <>
      <ErrorBox error={list.error} title="Could not read the registry's skills" />
      <ErrorBox error={action.error} title="Could not install the skill" />
      <Notice text={notice ?? (action.busy !== undefined ? `${action.busy}…` : undefined)} />
      {list.loading && <Loading />}
      {list.data !== undefined && list.data.length === 0 && (
        <Empty title={props.query === '' ? 'The registry has no skills' : 'No skill matches'}>
          {props.query === '' ? (
            <>
              Skills come from the registry source; see <Link href="/registry-source">Registry source</Link>.
            </>
          ) : (
            'Try another word.'
          )}
        </Empty>
      )}
      <ul class="cards" aria-label="Catalog skills">
        {(list.data ?? []).map((skill) => {
          const reference = skillReference(skill);
          return (
            <li key={`${skill.namespace}/${skill.name}`} class="card">
              <h2>{skill.title ?? skill.name}</h2>
              <p class="muted small">
                {skill.namespace}/{skill.name} · {skill.version}
              </p>
              <p>{skill.description}</p>
              {reference !== undefined && (
                <button
                  type="button"
                  class="small"
                  disabled={action.busy !== undefined}
                  onClick={() => void install(skill, reference)}
                >
                  Install
                </button>
              )}
            </li>
          );
        })}
      </ul>
    </>
  );
}

function Permissions(props: { server: ImageServer }) {
  const p = props.server.permissions;
  if (p === undefined) return <p class="muted">No permission profile: the server gets Skep's default.</p>;
  const outbound = p.network?.outbound;
  return (
    <dl class="config">
      {p.read !== undefined && p.read.length > 0 && (
        <div>
          <dt>Reads</dt>
          <dd>{p.read.join(', ')}</dd>
        </div>
      )}
      {p.write !== undefined && p.write.length > 0 && (
        <div>
          <dt>Writes</dt>
          <dd>{p.write.join(', ')}</dd>
        </div>
      )}
      <div>
        <dt>Network</dt>
        <dd>
          {outbound?.insecure_allow_all === true
            ? 'any host'
            : [
                ...(outbound?.allow_host ?? []),
                ...(outbound?.allow_port ?? []).map((port) => `port ${port}`),
              ].join(', ') || 'none'}
        </dd>
      </div>
      {p.privileged === true && (
        <div>
          <dt>Privileged</dt>
          <dd>yes</dd>
        </div>
      )}
    </dl>
  );
}

/** How one secret input is filled: an existing secret, or a new value saved as a secret first. */
interface SecretChoice {
  key: string;
  value: string;
}
const NEW_SECRET = '';

function InputsFields(props: {
  inputs: Array<EnvVar | Header>;
  kind: 'env' | 'header';
  values: Record<string, string>;
  setValue: (name: string, value: string) => void;
  secrets: Record<string, SecretChoice>;
  setSecret: (name: string, choice: SecretChoice) => void;
  secretKeys: string[];
}) {
  return (
    <>
      {props.inputs.map((input) => {
        const label = props.kind === 'env' ? input.name : `Header ${input.name}`;
        if (input.secret === true) {
          const choice = props.secrets[input.name] ?? { key: NEW_SECRET, value: '' };
          return (
            <fieldset key={input.name} class="field secret">
              <legend>
                {label} <span class="muted small">(secret{input.required === true ? ', required' : ''})</span>
              </legend>
              {input.description !== undefined && <span class="hint">{input.description}</span>}
              <select
                aria-label={`${label}: secret`}
                value={choice.key}
                onChange={(e) =>
                  props.setSecret(input.name, {
                    key: (e.target as HTMLSelectElement).value,
                    value: choice.value,
                  })
                }
              >
                <option value={NEW_SECRET}>New secret value…</option>
                {props.secretKeys.map((key) => (
                  <option key={key} value={key}>
                    Secret {key}
                  </option>
                ))}
              </select>
              {choice.key === NEW_SECRET && (
                <input
                  type="password"
                  autoComplete="off"
                  aria-label={`${label}: value (saved as a secret, never shown again)`}
                  placeholder="value (saved as a secret)"
                  value={choice.value}
                  onInput={(e) =>
                    props.setSecret(input.name, {
                      key: NEW_SECRET,
                      value: (e.target as HTMLInputElement).value,
                    })
                  }
                />
              )}
            </fieldset>
          );
        }
        const choices = 'choices' in input ? input.choices : undefined;
        return (
          <Field key={input.name} label={label} hint={input.description} required={input.required}>
            {choices !== undefined && choices.length > 0 ? (
              <select
                value={props.values[input.name] ?? input.default ?? ''}
                onChange={(e) => props.setValue(input.name, (e.target as HTMLSelectElement).value)}
              >
                {choices.map((c) => (
                  <option key={c} value={c}>
                    {c}
                  </option>
                ))}
              </select>
            ) : (
              <TextInput
                value={props.values[input.name] ?? input.default ?? ''}
                onValue={(v) => props.setValue(input.name, v)}
                required={input.required === true}
              />
            )}
          </Field>
        );
      })}
    </>
  );
}

/** The secret name a new value is saved under: `<workload>-<input>`, in the provider's key alphabet. */
const secretNameFor = (workload: string, input: string) =>
  `${workload}-${input}`.toLowerCase().replace(/[^a-z0-9_.-]+/g, '-');

/**
 * What granting `folder` adds to a create request, as `skep run --volume FOLDER` does: the
 * folder becomes the server's last argument; a container mounts it at the same path, a local
 * process (npx://, uvx://, cmd://) gets it in its sandbox profile's `write` list — the entry's
 * profile, else the built-in `network` one that applies when none is given.
 */
function folderGrant(
  server: ImageServer,
  folder: string,
): Pick<CreateWorkloadRequest, 'cmd_arguments' | 'volumes' | 'permission_profile'> {
  if (!folder.startsWith('/'))
    throw new Error(`Folder: give an absolute path, such as /home/you/notes (not ${folder})`);
  const cmd_arguments = [...(server.args ?? []), folder];
  if (!/^(npx|uvx|cmd):\/\//.test(server.image)) return { cmd_arguments, volumes: [`${folder}:${folder}`] };
  const profile = structuredClone(
    server.permissions ?? { name: 'network', network: { outbound: { insecure_allow_all: true } } },
  );
  profile.write = [...(profile.write ?? []), folder];
  return { cmd_arguments, permission_profile: profile };
}

function RunForm(props: { found: FoundServer; onStarted: (name: string) => void }) {
  const server = props.found.is_remote ? props.found.remote_server : props.found.server;
  const envInputs: EnvVar[] = server.env_vars ?? [];
  const headerInputs: Header[] = props.found.is_remote ? (props.found.remote_server.headers ?? []) : [];
  const [name, setName] = useState(shortName(server.name));
  const [group, setGroup] = useState('default');
  const [folder, setFolder] = useState('');
  const [autostart, setAutostart] = useState(true);
  const [values, setValues] = useState<Record<string, string>>({});
  const [secrets, setSecrets] = useState<Record<string, SecretChoice>>({});
  const groups = useLoad(() => get<{ groups: Group[] }>('/api/v1beta/groups').then((r) => r.groups), []);
  const keys = useLoad(
    () =>
      get<{ keys: Array<{ key: string }> }>('/api/v1beta/secrets/default/keys')
        .then((r) => r.keys.map((k) => k.key))
        .catch(() => [] as string[]),
    [],
  );
  const action = useAction();
  // A change of input clears the last error: it was about the values before.
  const setValue = (input: string, value: string) => {
    action.clear();
    setValues((v) => Object.assign({}, v, { [input]: value }));
  };
  const setSecret = (input: string, choice: SecretChoice) => {
    action.clear();
    setSecrets((s) => Object.assign({}, s, { [input]: choice }));
  };
  /** What both lists of inputs (environment, headers) show and change. */
  const inputState = { values, setValue, secrets, setSecret, secretKeys: keys.data ?? [] };

  const submit = async (event: Event) => {
    event.preventDefault();
    await action.run('Starting', async () => {
      // The API's own rule and words, before any secret is saved under this name.
      const nameError = workloadNameError(name);
      if (nameError !== undefined) throw new Error(nameError);
      /** Secret inputs → the name of the secret to reference (new values are saved first). */
      const secretFor = async (input: EnvVar | Header): Promise<string | undefined> => {
        const choice = secrets[input.name] ?? { key: NEW_SECRET, value: '' };
        if (choice.key !== NEW_SECRET) return choice.key;
        if (choice.value === '') {
          if (input.required === true)
            throw new Error(`${input.name} is required: choose a secret or type a value to save as one`);
          return undefined;
        }
        const key = secretNameFor(name, input.name);
        await api('POST', '/api/v1beta/secrets/default/keys', { key, value: choice.value }).catch(
          async (err: unknown) => {
            if (asApiError(err).status !== 409) throw err;
            await api('PUT', `/api/v1beta/secrets/default/keys/${seg(key)}`, { value: choice.value });
          },
        );
        return key;
      };
      const body: CreateWorkloadRequest = {
        name,
        registry: 'default',
        server: server.name,
        group,
        autostart,
      };
      const envVars: Record<string, string> = {};
      const secretRefs: Array<{ name: string; target: string }> = [];
      for (const input of envInputs) {
        if (input.secret === true) {
          const key = await secretFor(input);
          if (key !== undefined) secretRefs.push({ name: key, target: input.name });
        } else {
          const value = values[input.name] ?? input.default ?? '';
          if (value !== '') envVars[input.name] = value;
        }
      }
      const plain: Record<string, string> = {};
      const fromSecret: Record<string, string> = {};
      for (const input of headerInputs) {
        if (input.secret === true) {
          const key = await secretFor(input);
          if (key !== undefined) fromSecret[input.name] = key;
        } else {
          const value = values[input.name] ?? input.default ?? '';
          if (value !== '') plain[input.name] = value;
        }
      }
      if (Object.keys(envVars).length > 0) body.env_vars = envVars;
      if (secretRefs.length > 0) body.secrets = secretRefs;
      if (headerInputs.length > 0)
        body.header_forward = { add_plaintext_headers: plain, add_headers_from_secret: fromSecret };
      if (!props.found.is_remote && folder.trim() !== '')
        Object.assign(body, folderGrant(props.found.server, folder.trim()));
      const created = await api<{ name: string }>('POST', '/api/v1beta/workloads', body);
      props.onStarted(created.name);
    });
  };

  return (
    <form class="card form" onSubmit={(e) => void submit(e)} aria-label={`Run ${server.name}`}>
      <h2>Run it</h2>
      <TextField
        label="Name"
        hint={workloadNameError(name) ?? WORKLOAD_NAME_HINT}
        required
        value={name}
        onValue={setName}
      />
      <Field label="Group">
        <select value={group} onChange={(e) => setGroup((e.target as HTMLSelectElement).value)}>
          {(groups.data ?? [{ name: 'default', registered_clients: [] }]).map((g) => (
            <option key={g.name} value={g.name}>
              {g.name}
            </option>
          ))}
        </select>
      </Field>
      {!props.found.is_remote && (
        <TextField
          label="Folder"
          hint="Optional: a folder on this machine (absolute path) the server may read and write; it is passed as the server's last argument, as the filesystem server expects."
          value={folder}
          onValue={setFolder}
        />
      )}
      <AutostartField checked={autostart} onChecked={setAutostart} />
      {envInputs.length + headerInputs.length === 0 && <p class="muted">This server needs no settings.</p>}
      <InputsFields inputs={envInputs} kind="env" {...inputState} />
      <InputsFields inputs={headerInputs} kind="header" {...inputState} />
      <ErrorBox error={action.error} title="Could not start the server" />
      <FormActions busy={action.busy} submit={action.busy !== undefined ? 'Starting…' : 'Run'} />
    </form>
  );
}

/** After create: the workload's status until it answers (running) or fails, with the log tail meanwhile. */
function Progress(props: { name: string }) {
  const [detail, setDetail] = useState<WorkloadDetail | undefined>(undefined);
  const [log, setLog] = useState('');
  const [error, setError] = useState<ReturnType<typeof asApiError> | undefined>(undefined);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const d = await get<WorkloadDetail>(`/api/v1beta/workloads/${seg(props.name)}`);
        if (stopped) return;
        setDetail(d);
        const [server, proxy] = await Promise.all([
          getText(`/api/v1beta/workloads/${seg(props.name)}/logs?lines=8`).catch(() => ''),
          getText(`/api/v1beta/workloads/${seg(props.name)}/proxy-logs?lines=8`).catch(() => ''),
        ]);
        if (stopped) return;
        setLog([readableLog(proxy), server.trim()].filter((s) => s !== '').join('\n'));
        if (d.status === 'running' || d.status === 'error' || d.status === 'stopped') return;
      } catch (err) {
        setError(asApiError(err));
      }
      if (!stopped) timer = setTimeout(() => void poll(), 750);
    };
    void poll();
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [props.name]);
  const status = detail?.status ?? 'starting';
  return (
    <section class="card" aria-live="polite" aria-label="Progress">
      <h2>
        {props.name} <StatusBadge status={status} />
      </h2>
      {status === 'running' ? (
        <p>
          Running. <Link href={`/servers/${seg(props.name)}`}>Open the server</Link> ·{' '}
          <Link href={`/playground/${seg(props.name)}`}>Try it in the playground</Link>
        </p>
      ) : status === 'error' || status === 'stopped' ? (
        <p class="error-text">
          The server did not start{detail?.status_context ? `: ${detail.status_context}` : ''}. See its log
          below and on <Link href={`/servers/${seg(props.name)}`}>its page</Link>.
        </p>
      ) : (
        <p>
          Starting{detail?.status_context ? ` (${detail.status_context})` : ''}: the first start may download
          the package or pull the image.
        </p>
      )}
      <ErrorBox error={error} />
      {log !== '' && <pre class="log">{log}</pre>}
    </section>
  );
}

export function CatalogDetailPage(props: { server: string }) {
  const found = useLoad(
    () => get<FoundServer>(`/api/v1beta/registry/default/servers/${seg(props.server)}`),
    [props.server],
  );
  const [started, setStarted] = useState<string | undefined>(undefined);
  const f = found.data;
  const server = f === undefined ? undefined : f.is_remote ? f.remote_server : f.server;
  return (
    <section>
      <PageHeader title={server?.title ?? props.server}>
        <Link href="/catalog">Catalog</Link>
      </PageHeader>
      <ErrorBox error={found.error} title={`Could not read ${props.server}`} />
      {found.loading && <Loading />}
      {f !== undefined && server !== undefined && (
        <div class="columns">
          <div>
            <div class="card">
              <p class="muted small">
                {server.name} · {f.is_remote ? `remote at ${f.remote_server.url}` : f.server.image} ·{' '}
                {server.transport}
              </p>
              <p>{server.description}</p>
              {server.repository_url !== undefined && (
                <p class="small">
                  Source: <code>{server.repository_url}</code>
                </p>
              )}
              <h2>Tools</h2>
              {server.tools.length === 0 ? (
                <p class="muted">The registry lists no tools.</p>
              ) : (
                <ul class="chips">
                  {server.tools.map((tool) => (
                    <li key={tool}>{tool}</li>
                  ))}
                </ul>
              )}
              <h2>Settings</h2>
              <DataTable
                columns={['Variable', 'Meaning', 'Needs']}
                items={server.env_vars ?? []}
                empty={<p class="muted">No environment variables.</p>}
                row={(v) => (
                  <tr key={v.name}>
                    <td>
                      <code>{v.name}</code>
                    </td>
                    <td>{v.description ?? ''}</td>
                    <td>
                      {[v.required === true ? 'required' : 'optional', v.secret === true ? 'secret' : '']
                        .filter(Boolean)
                        .join(', ')}
                    </td>
                  </tr>
                )}
              />
              {f.is_remote ? (
                <>
                  <h2>Remote access</h2>
                  {(f.remote_server.headers ?? []).length > 0 && (
                    <p>Headers: {(f.remote_server.headers ?? []).map((h) => h.name).join(', ')}</p>
                  )}
                  {f.remote_server.oauth_config !== undefined ? (
                    <p>
                      Needs an OAuth login
                      {f.remote_server.oauth_config.issuer !== undefined
                        ? ` at ${f.remote_server.oauth_config.issuer}`
                        : ''}
                      {f.remote_server.oauth_config.scopes !== undefined
                        ? ` (scopes ${f.remote_server.oauth_config.scopes.join(' ')})`
                        : ''}
                      : the proxy opens the login in a browser on the machine where <code>skep serve</code>{' '}
                      runs.
                    </p>
                  ) : (
                    <p class="muted">No OAuth login needed.</p>
                  )}
                </>
              ) : (
                <>
                  <h2>Permissions</h2>
                  <Permissions server={f.server} />
                </>
              )}
            </div>
          </div>
          <div>
            {started === undefined ? (
              <RunForm found={f} onStarted={setStarted} />
            ) : (
              <Progress name={started} />
            )}
          </div>
        </div>
      )}
    </section>
  );
}
