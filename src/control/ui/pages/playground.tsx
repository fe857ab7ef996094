/** Playground: for a running workload, its tools, resources and prompts; call a tool through a form built from its input schema. */
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { get, seg } from '../api.js';
import { asApiError, Empty, ErrorBox, Link, Loading, PageHeader, useAction, useLoad } from '../components.js';
import { type JsonSchema, McpSession, type Tool } from '../mcp.js';
import { navigate } from '../router.js';
import type { WorkloadSummary } from '../types.js';

const typeOf = (schema: JsonSchema): string =>
  (Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type) ?? 'string';

/** A heading and its list (named by the heading), or a muted line when it is empty. */
function ListSection<T>(props: {
  title: string;
  none: string;
  items: T[];
  item: (item: T) => ComponentChildren;
}) {
  return (
    <>
      <h2>{props.title}</h2>
      {props.items.length === 0 ? (
        <p class="muted">{props.none}</p>
      ) : (
        <ul class="list" aria-label={props.title}>
          {props.items.map(props.item)}
        </ul>
      )}
    </>
  );
}

/** Form values (text) → the tool's arguments, typed by the schema; an error names the field. */
function toArguments(
  schema: JsonSchema | undefined,
  values: Record<string, string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, prop] of Object.entries(schema?.properties ?? {})) {
    const raw = values[key];
    const required = schema?.required?.includes(key) === true;
    const type = typeOf(prop);
    if (raw === undefined || raw === '') {
      if (type === 'boolean' && raw === '') out[key] = false;
      else if (required) throw new Error(`${key} is required`);
      continue;
    }
    if (type === 'number' || type === 'integer') {
      const n = Number(raw);
      if (!Number.isFinite(n) || (type === 'integer' && !Number.isInteger(n)))
        throw new Error(`${key} must be ${type === 'integer' ? 'an integer' : 'a number'}`);
      out[key] = n;
    } else if (type === 'boolean') out[key] = raw === 'true';
    else if (type === 'object' || type === 'array') {
      try {
        out[key] = JSON.parse(raw);
      } catch {
        throw new Error(`${key} must be JSON (${type})`);
      }
    } else out[key] = raw;
  }
  return out;
}

function ToolForm(props: { tool: Tool; session: McpSession; onExchange: () => void }) {
  const schema = props.tool.inputSchema;
  const [values, setValues] = useState<Record<string, string>>({});
  const [result, setResult] = useState<Record<string, unknown> | undefined>(undefined);
  const action = useAction();
  useEffect(() => {
    setValues({});
    setResult(undefined);
    action.clear();
  }, [props.tool.name]);
  const set = (key: string, value: string) => setValues((v) => Object.assign({}, v, { [key]: value }));
  const submit = async (event: Event) => {
    event.preventDefault();
    setResult(undefined);
    await action.run('Calling', async () => {
      const args = toArguments(schema, values);
      try {
        setResult(await props.session.call('tools/call', { name: props.tool.name, arguments: args }));
      } finally {
        props.onExchange();
      }
    });
  };
  const properties = Object.entries(schema?.properties ?? {});
  const content = (result?.['content'] ?? []) as Array<{ type: string; text?: string }>;
  return (
    <form class="card form" onSubmit={(e) => void submit(e)} aria-label={`Call ${props.tool.name}`}>
      <h2>{props.tool.title ?? props.tool.name}</h2>
      {props.tool.description !== undefined && <p class="muted">{props.tool.description}</p>}
      {properties.length === 0 && <p class="muted">This tool takes no arguments.</p>}
      {properties.map(([key, prop]) => {
        const type = typeOf(prop);
        const required = schema?.required?.includes(key) === true;
        const id = `arg-${key}`;
        return (
          <div class="field" key={key}>
            <label for={id} class="label">
              {prop.title ?? key}{' '}
              <span class="muted small">
                ({type}
                {required ? ', required' : ''})
              </span>
            </label>
            {prop.enum !== undefined ? (
              <select
                id={id}
                value={values[key] ?? ''}
                onChange={(e) => set(key, (e.target as HTMLSelectElement).value)}
              >
                <option value="">—</option>
                {prop.enum.map((v) => (
                  <option key={String(v)} value={String(v)}>
                    {String(v)}
                  </option>
                ))}
              </select>
            ) : type === 'boolean' ? (
              <input
                id={id}
                type="checkbox"
                checked={values[key] === 'true'}
                onChange={(e) => set(key, (e.target as HTMLInputElement).checked ? 'true' : 'false')}
              />
            ) : type === 'object' || type === 'array' ? (
              <textarea
                id={id}
                rows={3}
                placeholder={type === 'array' ? '[ ]' : '{ }'}
                value={values[key] ?? ''}
                onInput={(e) => set(key, (e.target as HTMLTextAreaElement).value)}
              />
            ) : type === 'number' || type === 'integer' ? (
              <input
                id={id}
                type="number"
                step={type === 'integer' ? 1 : 'any'}
                required={required}
                value={values[key] ?? ''}
                onInput={(e) => set(key, (e.target as HTMLInputElement).value)}
              />
            ) : (
              <input
                id={id}
                type="text"
                required={required}
                value={values[key] ?? ''}
                onInput={(e) => set(key, (e.target as HTMLInputElement).value)}
              />
            )}
            {prop.description !== undefined && <span class="hint">{prop.description}</span>}
          </div>
        );
      })}
      <ErrorBox error={action.error} title={`${props.tool.name} failed`} />
      <div class="form-actions">
        <button type="submit" disabled={action.busy !== undefined}>
          {action.busy !== undefined ? 'Calling…' : 'Call tool'}
        </button>
      </div>
      {result !== undefined && (
        <section class="result" aria-label="Result">
          <h3>Result{result['isError'] === true ? ' (the tool reported an error)' : ''}</h3>
          {content.map((c, i) =>
            c.type === 'text' ? (
              <pre key={i} class="code result-text">
                {c.text}
              </pre>
            ) : (
              <pre key={i} class="code">
                {JSON.stringify(c, null, 2)}
              </pre>
            ),
          )}
        </section>
      )}
    </form>
  );
}

function Connected(props: { name: string }) {
  const [session, setSession] = useState<McpSession | undefined>(undefined);
  const [tools, setTools] = useState<Tool[]>([]);
  const [resources, setResources] = useState<Array<{ uri: string; name?: string; description?: string }>>([]);
  const [prompts, setPrompts] = useState<Array<{ name: string; description?: string }>>([]);
  const [selected, setSelected] = useState<string | undefined>(undefined);
  const [error, setError] = useState<ReturnType<typeof asApiError> | undefined>(undefined);
  const [exchanges, setExchanges] = useState(0);
  const [resource, setResource] = useState<string | undefined>(undefined);
  useEffect(() => {
    const s = new McpSession(props.name);
    setSession(undefined);
    setError(undefined);
    setSelected(undefined);
    void (async () => {
      try {
        await s.connect();
        const caps = s.capabilities;
        const [t, r, p] = await Promise.all([
          'tools' in caps ? s.call('tools/list') : Promise.resolve({ tools: [] }),
          'resources' in caps
            ? s.call('resources/list').catch(() => ({ resources: [] }))
            : Promise.resolve({ resources: [] }),
          'prompts' in caps
            ? s.call('prompts/list').catch(() => ({ prompts: [] }))
            : Promise.resolve({ prompts: [] }),
        ]);
        setTools((t['tools'] ?? []) as Tool[]);
        setResources((r['resources'] ?? []) as typeof resources);
        setPrompts((p['prompts'] ?? []) as typeof prompts);
        setSession(s);
      } catch (err) {
        setError(asApiError(err));
      } finally {
        setExchanges(s.exchanges.length);
      }
    })();
    return () => void s.close();
  }, [props.name]);
  const tool = tools.find((t) => t.name === selected);
  const readResource = async (uri: string) => {
    if (session === undefined) return;
    try {
      const r = await session.call('resources/read', { uri });
      setResource(JSON.stringify(r, null, 2));
    } catch (err) {
      setError(asApiError(err));
    }
    setExchanges(session.exchanges.length);
  };
  const raw = useMemo(
    () => (session === undefined ? [] : session.exchanges.slice(-6).reverse()),
    [session, exchanges],
  );
  return (
    <>
      <ErrorBox error={error} title={`Could not talk to ${props.name}`} />
      {session === undefined && error === undefined && <Loading />}
      {session !== undefined && (
        <div class="columns">
          <div>
            <div class="card">
              <p class="muted small">
                Connected to {session.serverInfo.name ?? props.name} {session.serverInfo.version ?? ''}
              </p>
              <ListSection
                title="Tools"
                none="This server offers no tools."
                items={tools}
                item={(t) => (
                  <li key={t.name}>
                    <button
                      type="button"
                      class={`link ${selected === t.name ? 'active' : ''}`}
                      aria-pressed={selected === t.name}
                      onClick={() => setSelected(t.name)}
                    >
                      {t.name}
                    </button>
                    {t.description !== undefined && <div class="muted small">{t.description}</div>}
                  </li>
                )}
              />
              <ListSection
                title="Resources"
                none="None."
                items={resources}
                item={(r) => (
                  <li key={r.uri}>
                    <button type="button" class="link" onClick={() => void readResource(r.uri)}>
                      {r.name ?? r.uri}
                    </button>
                    <div class="muted small">{r.uri}</div>
                  </li>
                )}
              />
              <ListSection
                title="Prompts"
                none="None."
                items={prompts}
                item={(p) => (
                  <li key={p.name}>
                    <code>{p.name}</code>
                    {p.description !== undefined && <div class="muted small">{p.description}</div>}
                  </li>
                )}
              />
            </div>
          </div>
          <div>
            {tool === undefined ? (
              <Empty title="Pick a tool">
                Choose a tool on the left to call it with a form built from its input schema.
              </Empty>
            ) : (
              <ToolForm
                tool={tool}
                session={session}
                onExchange={() => setExchanges(session.exchanges.length)}
              />
            )}
            {resource !== undefined && (
              <section class="card">
                <h2>Resource</h2>
                <pre class="code">{resource}</pre>
              </section>
            )}
            <section class="card" aria-label="Raw JSON-RPC">
              <h2>Raw JSON-RPC</h2>
              <p class="muted small">The last messages, newest first.</p>
              {raw.map((x, i) => (
                <div key={`${exchanges}-${i}`} class="exchange">
                  <div class="small muted">request</div>
                  <pre class="code">{JSON.stringify(x.request, null, 2)}</pre>
                  <div class="small muted">response</div>
                  <pre class="code raw-response">
                    {typeof x.response === 'string' ? x.response : JSON.stringify(x.response, null, 2)}
                  </pre>
                </div>
              ))}
            </section>
          </div>
        </div>
      )}
    </>
  );
}

export function PlaygroundPage(props: { name?: string }) {
  const running = useLoad(
    () => get<{ workloads: WorkloadSummary[] }>('/api/v1beta/workloads').then((r) => r.workloads),
    [],
  );
  return (
    <section>
      <PageHeader title="Playground">
        <label class="inline">
          Server{' '}
          <select
            value={props.name ?? ''}
            aria-label="Server"
            onChange={(e) => {
              const v = (e.target as HTMLSelectElement).value;
              navigate(v === '' ? '/playground' : `/playground/${seg(v)}`);
            }}
          >
            <option value="">Choose a running server</option>
            {(running.data ?? []).map((w) => (
              <option key={w.name} value={w.name}>
                {w.name}
              </option>
            ))}
          </select>
        </label>
      </PageHeader>
      <ErrorBox error={running.error} title="Could not list the running servers" />
      {props.name === undefined ? (
        running.data !== undefined && running.data.length === 0 ? (
          <Empty title="No server is running">
            Start one on the <Link href="/servers">Servers</Link> page, or run one from the{' '}
            <Link href="/catalog">Catalog</Link>.
          </Empty>
        ) : (
          <Empty title="Choose a server">Pick a running server above to list its tools and call them.</Empty>
        )
      ) : (
        <Connected key={props.name} name={props.name} />
      )}
    </section>
  );
}
