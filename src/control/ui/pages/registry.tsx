/** Registry source: which registry the catalog reads, change it, refresh it. */
import { useState } from 'preact/hooks';
import { api, get } from '../api.js';
import { Field, FormActions, PageHeader, PageStatus, TextField, useChange, useLoad } from '../components.js';
import type { RegistryInfo } from '../types.js';

export function RegistrySourcePage() {
  const info = useLoad(
    () => get<{ registries: RegistryInfo[] }>('/api/v1beta/registry').then((r) => r.registries[0]),
    [],
  );
  const [kind, setKind] = useState<'default' | 'url' | 'api_url' | 'local_path'>('default');
  const [value, setValue] = useState('');
  const [allowPrivate, setAllowPrivate] = useState(false);
  const action = useChange(info.reload);
  const save = async (event: Event) => {
    event.preventDefault();
    const body: Record<string, unknown> = kind === 'default' ? {} : { [kind]: value.trim() };
    if (kind === 'url' || kind === 'api_url') body['allow_private_ip'] = allowPrivate;
    await action.change(
      'Save',
      () => api('PUT', '/api/v1beta/registry/default', body),
      kind === 'default' ? 'Back to the built-in catalog.' : 'Saved: the source was read and checked.',
    );
  };
  const refresh = async () => {
    action.setNotice(undefined);
    if (
      await action.run('Refresh', async () => {
        const r = await api<{ server_count: number }>('POST', '/api/v1beta/registry/default/refresh');
        action.setNotice(`Reloaded: ${r.server_count} servers.`);
      })
    )
      await info.reload();
  };
  const r = info.data;
  return (
    <section>
      <PageHeader title="Registry source" />
      <PageStatus
        load={info}
        loadError="Could not read the registry"
        change={action}
        changeError="The source was not changed"
      />
      {r !== undefined && (
        <div class="card">
          <dl class="config">
            <div>
              <dt>Type</dt>
              <dd>{r.type === 'default' ? 'built-in catalog' : r.type}</dd>
            </div>
            {r.source !== '' && (
              <div>
                <dt>Source</dt>
                <dd>
                  <code>{r.source}</code>
                </dd>
              </div>
            )}
            <div>
              <dt>Servers</dt>
              <dd>{r.server_count}</dd>
            </div>
            <div>
              <dt>Last updated</dt>
              <dd>{r.last_updated || '—'}</dd>
            </div>
            <div>
              <dt>Login</dt>
              <dd>{r.auth_status}</dd>
            </div>
          </dl>
          <button
            type="button"
            class="small"
            onClick={() => void refresh()}
            disabled={action.busy !== undefined}
          >
            Refresh now
          </button>
        </div>
      )}
      <form class="card form" onSubmit={(e) => void save(e)} aria-label="Change the registry source">
        <h2>Change the source</h2>
        <Field label="Source">
          <select
            value={kind}
            onChange={(e) => setKind((e.target as HTMLSelectElement).value as typeof kind)}
          >
            <option value="default">The built-in catalog</option>
            <option value="url">A registry JSON document at a URL (or a v0.1 API base URL)</option>
            <option value="api_url">A v0.1 registry API</option>
            <option value="local_path">A registry JSON file on the server's machine</option>
          </select>
        </Field>
        {kind !== 'default' && (
          <TextField
            label={kind === 'local_path' ? 'Absolute path' : 'URL'}
            required
            hint={kind === 'local_path' ? undefined : 'https unless private addresses are allowed.'}
            value={value}
            onValue={setValue}
          />
        )}
        {(kind === 'url' || kind === 'api_url') && (
          <label class="check">
            <input
              type="checkbox"
              checked={allowPrivate}
              onChange={(e) => setAllowPrivate((e.target as HTMLInputElement).checked)}
            />{' '}
            Allow private and loopback addresses (and http)
          </label>
        )}
        <FormActions busy={action.busy} submit="Save" />
      </form>
    </section>
  );
}
