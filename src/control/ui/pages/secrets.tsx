/** Secrets: the provider (set up), and keys (add, update, delete). Values are write-only here. */
import { useState } from 'preact/hooks';
import { api, get, seg } from '../api.js';
import {
  CheckField,
  DataTable,
  Empty,
  ErrorBox,
  Field,
  FormActions,
  Loading,
  Notice,
  PageHeader,
  TextField,
  useAction,
  useChange,
  useLoad,
} from '../components.js';
import type { SecretsProvider } from '../types.js';

/** `POST /api/v1beta/secrets` (routes/secrets.ts). */
interface SetupRequest {
  provider_type: string;
  password?: string;
  save_password?: boolean;
}

function ProviderSetup(props: { current: string | undefined; onDone: () => void }) {
  const [type, setType] = useState(props.current ?? 'encrypted');
  const [password, setPassword] = useState('');
  // The API's default: a typed password is kept so that skep serve can open the store.
  const [remember, setRemember] = useState(true);
  const [outcome, setOutcome] = useState<string | undefined>(undefined);
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    setOutcome(undefined);
    const body: SetupRequest = { provider_type: type };
    // Only a typed password is the user's to keep or not; a generated one is always saved.
    if (type === 'encrypted' && password !== '') {
      body.password = password;
      body.save_password = remember;
    }
    const done = await action.run('Set up', async () => {
      // The message says where the password went (or that it went nowhere).
      setOutcome((await api<{ message: string }>('POST', '/api/v1beta/secrets', body)).message);
    });
    if (done) {
      setPassword('');
      props.onDone();
    }
  };
  return (
    <form class="card form" onSubmit={(e) => void submit(e)} aria-label="Secrets provider">
      <h2>{props.current === undefined ? 'Set up a secrets provider' : 'Provider'}</h2>
      <Field label="Provider">
        <select value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value)}>
          <option value="encrypted">encrypted (a local file, encrypted with a password)</option>
          <option value="1password">1password (read only, needs OP_SERVICE_ACCOUNT_TOKEN)</option>
          <option value="environment">environment (read only: SKEP_SECRET_* variables)</option>
        </select>
      </Field>
      {type === 'encrypted' && (
        <Field
          label="Password"
          hint="Leave empty to use the saved one (or have a strong one generated and saved)."
        >
          <input
            type="password"
            autoComplete="new-password"
            value={password}
            onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
          />
        </Field>
      )}
      {type === 'encrypted' && (
        <CheckField
          label="Remember the password on this machine"
          hint="Kept in the OS keyring, else in a file only you can read (0600), so skep serve can open the store; unchecked, it is saved nowhere and skep serve needs SKEP_SECRETS_PASSWORD."
          checked={remember}
          disabled={password === ''}
          onChecked={setRemember}
        />
      )}
      <Notice text={outcome} />
      <ErrorBox error={action.error} title="Could not set up the provider" />
      <FormActions busy={action.busy} submit={props.current === undefined ? 'Set up' : 'Reconfigure'} />
    </form>
  );
}

export function SecretsPage() {
  const provider = useLoad(
    () =>
      get<SecretsProvider>('/api/v1beta/secrets/default').catch((err: unknown) => {
        if ((err as { status?: number }).status === 404) return undefined;
        throw err;
      }),
    [],
  );
  const keys = useLoad(
    () =>
      provider.data === undefined
        ? Promise.resolve([] as Array<{ key: string; description?: string }>)
        : get<{ keys: Array<{ key: string; description?: string }> }>(
            '/api/v1beta/secrets/default/keys',
          ).then((r) => r.keys),
    [provider.data?.provider_type],
  );
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const action = useChange(keys.reload);
  const caps = provider.data?.capabilities;
  const save = async (event: Event) => {
    event.preventDefault();
    const name = editing ?? key.trim();
    await action.change(
      'Save',
      () =>
        editing === undefined
          ? api('POST', '/api/v1beta/secrets/default/keys', { key: name, value })
          : api('PUT', `/api/v1beta/secrets/default/keys/${seg(name)}`, { value }),
      `${editing === undefined ? 'Added' : 'Updated'} ${name}. The value is stored and never shown again.`,
      () => {
        setKey('');
        setValue('');
        setEditing(undefined);
      },
    );
  };
  const remove = async (name: string) => {
    if (!window.confirm(`Delete the secret ${name}? Servers that reference it will not start.`)) return;
    await action.change(
      'Delete',
      () => api('DELETE', `/api/v1beta/secrets/default/keys/${seg(name)}`),
      `Deleted ${name}.`,
    );
  };
  return (
    <section>
      <PageHeader title="Secrets" />
      <ErrorBox error={provider.error} title="Could not read the secrets provider" />
      {provider.loading && <Loading />}
      {!provider.loading && provider.error === undefined && (
        <div class="columns">
          <div>
            {provider.data === undefined ? (
              <Empty title="No secrets provider yet">
                Set one up with the form: <em>encrypted</em> keeps secrets in a local file.
              </Empty>
            ) : (
              <div class="card">
                <p>
                  Provider <strong>{provider.data.provider_type}</strong>
                  {caps !== undefined && !caps.can_write && <span class="muted"> (read only)</span>}
                </p>
                <Notice text={action.notice} />
                <ErrorBox error={action.error} title="The secret was not changed" />
                <ErrorBox error={keys.error} title="Could not list the secrets" />
                <DataTable
                  label="Secrets"
                  columns={['Name', 'Value', 'Actions']}
                  items={keys.data}
                  empty={<Empty title="No secrets">Add one below; servers reference secrets by name.</Empty>}
                  row={(k) => (
                    <tr key={k.key} data-secret={k.key}>
                      <td>
                        <code>{k.key}</code>
                        {k.description !== undefined && <div class="muted small">{k.description}</div>}
                      </td>
                      <td class="muted">hidden</td>
                      <td class="row-actions">
                        {caps?.can_write === true && (
                          <button
                            type="button"
                            class="small"
                            onClick={() => {
                              setEditing(k.key);
                              setValue('');
                            }}
                          >
                            Update
                          </button>
                        )}
                        {caps?.can_delete === true && (
                          <button
                            type="button"
                            class="small danger"
                            onClick={() => void remove(k.key)}
                            aria-label={`Delete ${k.key}`}
                          >
                            Delete
                          </button>
                        )}
                      </td>
                    </tr>
                  )}
                />
                {caps?.can_write === true && (
                  <form
                    class="form"
                    onSubmit={(e) => void save(e)}
                    aria-label={editing === undefined ? 'Add a secret' : `Update ${editing}`}
                  >
                    <h2>{editing === undefined ? 'Add a secret' : `Update ${editing}`}</h2>
                    {editing === undefined && (
                      <TextField label="Name" required value={key} onValue={setKey} />
                    )}
                    <Field label="Value" hint="Stored by the provider; it is never shown back." required>
                      <input
                        type="password"
                        autoComplete="off"
                        required
                        value={value}
                        onInput={(e) => setValue((e.target as HTMLInputElement).value)}
                      />
                    </Field>
                    <FormActions busy={action.busy} submit={editing === undefined ? 'Add' : 'Update'}>
                      {editing !== undefined && (
                        <button type="button" class="ghost" onClick={() => setEditing(undefined)}>
                          Cancel
                        </button>
                      )}
                    </FormActions>
                  </form>
                )}
              </div>
            )}
          </div>
          <div>
            {/* The keys again too: a reconfigure keeps the type, and may have unlocked the store. */}
            <ProviderSetup
              current={provider.data?.provider_type}
              onDone={() => void provider.reload().then(keys.reload)}
            />
          </div>
        </div>
      )}
    </section>
  );
}
