/** Clients: which MCP clients are installed, and their registration per group. */
import { useState } from 'preact/hooks';
import { api, get, seg } from '../api.js';
import { Empty, ErrorBox, Loading, Notice, PageHeader, useAction, useLoad } from '../components.js';
import type { ClientRegistration, ClientStatus, Group } from '../types.js';

export function ClientsPage() {
  const data = useLoad(async () => {
    const [status, registrations, groups] = await Promise.all([
      get<{ clients: ClientStatus[] }>('/api/v1beta/discovery/clients').then((r) => r.clients),
      get<ClientRegistration[]>('/api/v1beta/clients'),
      get<{ groups: Group[] }>('/api/v1beta/groups').then((r) => r.groups.map((g) => g.name)),
    ]);
    return { status, registrations, groups };
  }, []);
  const [group, setGroup] = useState('default');
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const action = useAction();
  const groupsOf = (client: string) => data.data?.registrations.find((r) => r.name === client)?.groups ?? [];
  const register = async (client: string) => {
    setNotice(undefined);
    if (
      await action.run('Register', () =>
        api('POST', '/api/v1beta/clients', { name: client, groups: [group] }),
      )
    ) {
      setNotice(`Registered ${client} in ${group}: its config now lists the group's servers.`);
      await data.reload();
    }
  };
  const unregister = async (client: string) => {
    setNotice(undefined);
    if (
      await action.run('Unregister', () =>
        api('DELETE', `/api/v1beta/clients/${seg(client)}/groups/${seg(group)}`),
      )
    ) {
      setNotice(`Unregistered ${client} from ${group}.`);
      await data.reload();
    }
  };
  return (
    <section>
      <PageHeader title="Clients">
        <label class="inline">
          Group{' '}
          <select
            value={group}
            onChange={(e) => setGroup((e.target as HTMLSelectElement).value)}
            aria-label="Group"
          >
            {(data.data?.groups ?? ['default']).map((g) => (
              <option key={g} value={g}>
                {g}
              </option>
            ))}
          </select>
        </label>
      </PageHeader>
      <p class="muted">
        Registering a client writes the servers of the group into that client's configuration; unregistering
        removes them.
      </p>
      <ErrorBox error={data.error} title="Could not read the clients" />
      <ErrorBox error={action.error} title="The registration did not change" />
      <Notice text={notice} />
      {data.loading && <Loading />}
      {data.data !== undefined && data.data.status.length === 0 && (
        <Empty title="No supported clients">This build knows no MCP clients.</Empty>
      )}
      {data.data !== undefined && data.data.status.length > 0 && (
        <table class="table" aria-label="Clients">
          <thead>
            <tr>
              <th scope="col">Client</th>
              <th scope="col">Installed</th>
              <th scope="col">Registered in</th>
              <th scope="col">In {group}</th>
            </tr>
          </thead>
          <tbody>
            {data.data.status.map((c) => {
              const groups = groupsOf(c.client_type);
              const inGroup = groups.includes(group);
              return (
                <tr key={c.client_type} data-client={c.client_type}>
                  <td>{c.client_type}</td>
                  <td>{c.installed ? 'yes' : <span class="muted">no</span>}</td>
                  <td>{groups.length === 0 ? <span class="muted">—</span> : groups.join(', ')}</td>
                  <td>
                    {inGroup ? (
                      <button
                        type="button"
                        class="small"
                        disabled={action.busy !== undefined}
                        onClick={() => void unregister(c.client_type)}
                        aria-label={`Unregister ${c.client_type} from ${group}`}
                      >
                        Unregister
                      </button>
                    ) : (
                      <button
                        type="button"
                        class="small"
                        disabled={action.busy !== undefined}
                        onClick={() => void register(c.client_type)}
                        aria-label={`Register ${c.client_type} in ${group}`}
                      >
                        Register
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
