/** Servers: every workload with live status, and a workload's detail (configuration, logs, export, edit). */
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, get, getText, seg } from '../api.js';
import {
  AutostartField,
  CopyButton,
  DataTable,
  Empty,
  ErrorBox,
  Field,
  Link,
  Loading,
  Notice,
  PageHeader,
  StatusBadge,
  Tabs,
  TextField,
  TextInput,
  UrlText,
  useAction,
  useLoad,
} from '../components.js';
import { readableLog } from '../log-text.js';
import { navigate } from '../router.js';
import type { UpdateWorkloadRequest, WorkloadDetail, WorkloadSummary } from '../types.js';

const POLL_MS = 2000;

/** What a workload in this status can do. */
const canStop = (status: string) => status === 'running' || status === 'starting' || status === 'unhealthy';
const canStart = (status: string) => status === 'stopped' || status === 'error';
/** A stopped, failed or departing workload's URL answers nothing: shown, but not offered for copying. */
const urlAnswers = (status: string) => status !== 'stopped' && status !== 'error' && status !== 'removing';

function WorkloadActions(props: {
  name: string;
  status: string;
  onDone: () => void;
  /**
   * A page about this one workload: told when a delete starts (true) and when it failed
   * (false), so it stops reading the workload meanwhile; it leaves in `onDeleted`.
   */
  onDeleting?: (active: boolean) => void;
  onDeleted?: () => void;
}) {
  const action = useAction();
  const { name, status } = props;
  const act = (label: string, method: string, path: string, confirmText?: string) => async () => {
    if (confirmText !== undefined && !window.confirm(confirmText)) return;
    const deleting = label === 'Delete';
    if (deleting) props.onDeleting?.(true);
    const ok = await action.run(label, () => api(method, path));
    if (deleting && !ok) props.onDeleting?.(false);
    // A deleted workload is not read again (a 404 the browser would log): its page is left.
    if (ok && deleting && props.onDeleted !== undefined) props.onDeleted();
    else if (ok) props.onDone();
  };
  const base = `/api/v1beta/workloads/${seg(name)}`;
  const lifecycle: Array<[label: string, shown: boolean, path: string]> = [
    ['Start', canStart(status), `${base}/restart`],
    ['Stop', canStop(status), `${base}/stop`],
    ['Restart', status === 'running', `${base}/restart`],
  ];
  return (
    <div class="row-actions">
      {lifecycle
        .filter(([, shown]) => shown)
        .map(([label, , path]) => (
          <button
            key={label}
            type="button"
            class="small"
            disabled={action.busy !== undefined}
            onClick={act(label, 'POST', path)}
          >
            {label}
          </button>
        ))}
      <button
        type="button"
        class="small danger"
        disabled={action.busy !== undefined || status === 'removing'}
        onClick={act(
          'Delete',
          'DELETE',
          base,
          `Delete the server ${name}? Its configuration and logs are removed.`,
        )}
        aria-label={`Delete ${name}`}
      >
        Delete
      </button>
      {action.busy !== undefined && <span class="muted small">{action.busy}…</span>}
      <ErrorBox error={action.error} title={`Could not change ${name}`} />
    </div>
  );
}

export function ServersPage() {
  const list = useLoad(
    () => get<{ workloads: WorkloadSummary[] }>('/api/v1beta/workloads?all=true').then((r) => r.workloads),
    [],
    POLL_MS,
  );
  return (
    <section>
      <PageHeader title="Servers">
        <Link href="/catalog" class="button">
          Run a server from the catalog
        </Link>
      </PageHeader>
      <ErrorBox error={list.error} title="Could not list the servers" />
      {list.loading && list.data === undefined && <Loading />}
      <DataTable
        label="Servers"
        class="stack"
        columns={['Name', 'Status', 'URL', 'Group', 'Tools', 'Actions']}
        items={list.data}
        empty={
          <Empty title="No servers yet">
            Pick one in the <Link href="/catalog">Catalog</Link> and run it, or use <code>skep run</code> on
            the command line.
          </Empty>
        }
        row={(w) => (
          <tr key={w.name} data-server={w.name}>
            <td data-label="Name">
              <Link href={`/servers/${seg(w.name)}`}>{w.name}</Link>
              <div class="muted small package" title={w.package}>
                {w.package}
              </div>
            </td>
            <td data-label="Status">
              <StatusBadge status={w.status} />
              {w.status_context !== '' && <div class="muted small">{w.status_context}</div>}
            </td>
            <td class="url" data-label="URL">
              {w.url !== '' && (
                <>
                  <div class="url-line">
                    <UrlText url={shownUrl(w.url)} muted={!urlAnswers(w.status)} />
                    {urlAnswers(w.status) && <CopyButton text={w.url} label={`Copy the URL of ${w.name}`} />}
                  </div>
                  {w.endpoint_access === 'anyone-on-this-machine' && (
                    <div class="muted small">open to every local user</div>
                  )}
                </>
              )}
            </td>
            <td data-label="Group">{w.group}</td>
            <td data-label="Tools">
              {w.tools.length === 0 ? (
                <span class="muted">—</span>
              ) : (
                <span title={w.tools.join(', ')}>{w.tools.length}</span>
              )}
              {w.status === 'running' && (
                <div>
                  <Link href={`/playground/${seg(w.name)}`} class="small">
                    Playground
                  </Link>
                </div>
              )}
            </td>
            <td data-label="Actions">
              <WorkloadActions name={w.name} status={w.status} onDone={() => void list.reload()} />
            </td>
          </tr>
        )}
      />
    </section>
  );
}

/** A workload's two logs: the API path of each, and its name on the tab. */
const LOGS = { logs: 'Server', 'proxy-logs': 'Proxy' };

/** How close to the end (px) still counts as reading the newest line. */
const AT_END_SLACK = 8;

/**
 * A log pane that opens at its newest line and follows new ones while the reader stays at
 * the end; scrolled up, it stays where the reader is until they scroll back down.
 */
function LogTail(props: { name: string }) {
  const [which, setWhich] = useState<keyof typeof LOGS>('logs');
  const logs = useLoad(
    () => getText(`/api/v1beta/workloads/${seg(props.name)}/${which}?lines=200`),
    [props.name, which],
    POLL_MS,
  );
  const pane = useRef<HTMLPreElement>(null);
  const following = useRef(true);
  const select = (tab: keyof typeof LOGS) => {
    following.current = true;
    setWhich(tab);
  };
  // Before the browser paints the new text, so the pane never shows the top first.
  useLayoutEffect(() => {
    const el = pane.current;
    if (el !== null && following.current) el.scrollTop = el.scrollHeight;
  }, [logs.data, which]);
  const onScroll = () => {
    const el = pane.current;
    if (el !== null) following.current = el.scrollHeight - el.scrollTop - el.clientHeight <= AT_END_SLACK;
  };
  return (
    <section class="card">
      <div class="card-header">
        <h2>Logs</h2>
        <Tabs label="Log" tabs={LOGS} selected={which} onSelect={select} small />
      </div>
      <ErrorBox error={logs.error} title="Could not read the log" />
      <pre
        class="log"
        ref={pane}
        onScroll={onScroll}
        tabIndex={0}
        aria-label={`${LOGS[which]} log, last 200 lines`}
      >
        {logs.data === undefined ? '' : logs.data === '' ? '(empty)' : readableLog(logs.data)}
      </pre>
    </section>
  );
}

const linesOf = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');

/** The edit form's text fields as the detail fills them (a save compares against them). */
function editedTexts(d: WorkloadDetail) {
  return {
    env: Object.entries(d.env_vars)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n'),
    args: d.cmd_arguments.join('\n'),
    tools: d.tools.join(', '),
    group: d.group,
  };
}

function EditForm(props: {
  detail: WorkloadDetail;
  onSaved: (notice: string) => void;
  onCancel: () => void;
}) {
  const d = props.detail;
  const [initial] = useState(() => editedTexts(d));
  const [env, setEnv] = useState(initial.env);
  const [args, setArgs] = useState(initial.args);
  const [tools, setTools] = useState(initial.tools);
  const [group, setGroup] = useState(initial.group);
  const [autostart, setAutostart] = useState(d.autostart);
  const action = useAction();
  const save = async (event: Event) => {
    event.preventDefault();
    // Only the autostart choice changed: sent alone, it restarts nothing (the API's rule).
    const configSame =
      env === initial.env && args === initial.args && tools === initial.tools && group === initial.group;
    if (configSame) {
      if (await action.run('Save', () => api('PUT', `/api/v1beta/workloads/${seg(d.name)}`, { autostart })))
        props.onSaved('Saved. Nothing was restarted.');
      return;
    }
    const envVars: Record<string, string> = {};
    for (const line of linesOf(env)) {
      const eq = line.indexOf('=');
      if (eq <= 0) {
        action.clear();
        await action.run('Save', () =>
          Promise.reject(
            new Error(`environment line "${line}" is not NAME=value; write one NAME=value per line`),
          ),
        );
        return;
      }
      envVars[line.slice(0, eq)] = line.slice(eq + 1);
    }
    const body: UpdateWorkloadRequest = {
      env_vars: envVars,
      cmd_arguments: linesOf(args),
      tools: tools
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t !== ''),
      group,
      autostart,
    };
    if (await action.run('Save', () => api('PUT', `/api/v1beta/workloads/${seg(d.name)}`, body)))
      props.onSaved('Saved. A running server restarts with the new configuration.');
  };
  return (
    <form class="card form" onSubmit={(e) => void save(e)} aria-label="Edit the server">
      <h2>Edit</h2>
      <p class="muted small">
        A running server restarts with the new configuration (a change of the resume choice alone restarts
        nothing). Secrets are kept as they are.
      </p>
      <Field label="Environment" hint="One NAME=value per line.">
        <textarea rows={4} value={env} onInput={(e) => setEnv((e.target as HTMLTextAreaElement).value)} />
      </Field>
      <Field label="Arguments" hint="One per line.">
        <textarea rows={3} value={args} onInput={(e) => setArgs((e.target as HTMLTextAreaElement).value)} />
      </Field>
      <TextField
        label="Tools exposed"
        hint="Comma-separated; empty exposes every tool."
        value={tools}
        onValue={setTools}
      />
      <Field label="Group">
        <TextInput value={group} onValue={setGroup} required />
      </Field>
      <AutostartField checked={autostart} onChecked={setAutostart} />
      <ErrorBox error={action.error} title="Could not save" />
      <div class="form-actions">
        <button type="submit" disabled={action.busy !== undefined}>
          {action.busy !== undefined ? 'Saving…' : 'Save'}
        </button>
        <button type="button" class="ghost" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

const ACCESS_WORDS: Record<string, string> = {
  owner: 'you: clients with its access token (the copied URL carries it)',
  'inbound-auth': 'callers its own authentication (OIDC) admits',
  'anyone-on-this-machine': 'every local user and process (opened by its owner)',
};

/** A workload URL as shown on screen: its access token stays in the copied text only. */
function shownUrl(url: string): string {
  return url.replace(/([?&])skep_token=[^&#]*&?/, '$1').replace(/[?&](#|$)/, '$1');
}

/** The `sandbox` the API reports, in words. */
function sandboxWords(d: WorkloadDetail): string {
  if (d.sandbox === 'bwrap') return 'bubblewrap sandbox';
  if (d.sandbox === 'container') return 'container';
  if (d.sandbox === 'n/a') return `not applicable: ${d.sandbox_reason}`;
  return `none${d.sandbox_reason === '' ? '' : ` (${d.sandbox_reason})`}`;
}

function ConfigTable(props: { detail: WorkloadDetail }) {
  const d = props.detail;
  const rows: Array<[string, string]> = [
    ['Image', d.image],
    ['Transport', d.transport],
    ['Proxy mode', d.proxy_mode],
    ['Host', d.host],
    ['Proxy port', String(d.proxy_port)],
    ['Group', d.group],
    ['Arguments', d.cmd_arguments.join(' ')],
    ['Environment', Object.keys(d.env_vars).join(', ')],
    ['Secrets', d.secrets.map((s) => `${s.name} → ${s.target}`).join(', ')],
    ['Tools exposed', d.tools.length === 0 ? 'all' : d.tools.join(', ')],
    ['Sandbox', sandboxWords(d)],
    ['Network', d.network_detail],
    ['Who can call it', ACCESS_WORDS[d.endpoint_access] ?? d.endpoint_access],
    ['Guardrails', d.guardrails],
    ['When skep serve starts', d.autostart ? 'resumed if it was running' : 'stays stopped until started'],
    ['Authorization config', d.authz_config],
  ];
  return (
    <dl class="config">
      {rows
        .filter(([, value]) => value !== '')
        .map(([key, value]) => (
          <div key={key}>
            <dt>{key}</dt>
            <dd>{value}</dd>
          </div>
        ))}
    </dl>
  );
}

export function ServerDetailPage(props: { name: string }) {
  // While a delete runs, the page stops polling the workload and its logs.
  const [deleting, setDeleting] = useState(false);
  const shown = useRef<WorkloadDetail | undefined>(undefined);
  const detail = useLoad(
    async () => {
      if (deleting && shown.current !== undefined) return shown.current;
      // The detail's `url` is a remote server's own; the proxy URL clients use is in the list.
      const [d, list] = await Promise.all([
        get<WorkloadDetail>(`/api/v1beta/workloads/${seg(props.name)}`),
        get<{ workloads: WorkloadSummary[] }>('/api/v1beta/workloads?all=true'),
      ]);
      return Object.assign({}, d, { url: list.workloads.find((w) => w.name === d.name)?.url ?? d.url });
    },
    [props.name],
    POLL_MS,
  );
  const [editing, setEditing] = useState(false);
  const [exported, setExported] = useState<string | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const exportAction = useAction();
  const d = detail.data;
  shown.current = d;
  const doExport = () =>
    exportAction.run('Export', async () => {
      const config = await get<unknown>(`/api/v1beta/workloads/${seg(props.name)}/export`);
      setExported(JSON.stringify(config, null, 2));
    });
  const download = () => {
    if (exported === undefined) return;
    const url = URL.createObjectURL(new Blob([exported], { type: 'application/json' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = `${props.name}.json`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };
  return (
    <section>
      <PageHeader title={props.name}>
        <Link href="/servers">All servers</Link>
      </PageHeader>
      <ErrorBox error={detail.error} title={`Could not read ${props.name}`} />
      {detail.loading && d === undefined && <Loading />}
      <Notice text={notice} />
      {d !== undefined && (
        <>
          <div class="card">
            <div class="card-header">
              <div>
                <StatusBadge status={d.status} />{' '}
                {d.status_context !== '' && <span class="muted">{d.status_context}</span>}
              </div>
              <WorkloadActions
                name={d.name}
                status={d.status}
                onDone={() => void detail.reload()}
                onDeleting={setDeleting}
                onDeleted={() => navigate('/servers')}
              />
            </div>
            {d.url !== '' && (
              <p class="url url-line">
                <UrlText url={shownUrl(d.url)} muted={!urlAnswers(d.status)} />
                {urlAnswers(d.status) && <CopyButton text={d.url} label="Copy the URL" />}
                {d.status === 'running' && (
                  <>
                    {' '}
                    <Link href={`/playground/${seg(d.name)}`}>Open in the playground</Link>
                  </>
                )}
              </p>
            )}
            <ConfigTable detail={d} />
            <div class="form-actions">
              <button
                type="button"
                class="small"
                onClick={() => setEditing(!editing)}
                aria-expanded={editing}
              >
                Edit
              </button>
              <button type="button" class="small" onClick={() => void doExport()}>
                Export
              </button>
            </div>
          </div>
          {editing && (
            <EditForm
              detail={d}
              onCancel={() => setEditing(false)}
              onSaved={(text) => {
                setEditing(false);
                setNotice(text);
                void detail.reload();
              }}
            />
          )}
          <ErrorBox error={exportAction.error} title="Could not export" />
          {exported !== undefined && (
            <section class="card">
              <div class="card-header">
                <h2>Run configuration</h2>
                <div>
                  <CopyButton text={exported} label="Copy the run configuration" />{' '}
                  <button type="button" class="small" onClick={download}>
                    Download
                  </button>
                </div>
              </div>
              <p class="muted small">Secrets appear as references, never as values.</p>
              <pre class="code">{exported}</pre>
            </section>
          )}
          {!deleting && <LogTail name={d.name} />}
        </>
      )}
    </section>
  );
}
