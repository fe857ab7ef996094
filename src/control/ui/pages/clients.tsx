/** Clients: which MCP clients are installed, and their registration per group. */
import { useState } from 'preact/hooks';
import { api, get, seg } from '../api.js';
import { DataTable, Empty, NameList, PageHeader, PageStatus, useChange, useLoad } from '../components.js';
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
  const action = useChange(data.reload);
  const groupsOf = (client: string) => data.data?.registrations.find((r) => r.name === client)?.groups ?? [];
  const register = async (client: string) => {
    await action.change(
      'Register',
      () => api('POST', '/api/v1beta/clients', { name: client, groups: [group] }),
      `Registered ${client} in ${group}: its config now lists the group's servers.`,
    );
  };
  const unregister = async (client: string) => {
    await action.change(
      'Unregister',
      () => api('DELETE', `/api/v1beta/clients/${seg(client)}/groups/${seg(group)}`),
      `Unregistered ${client} from ${group}.`,
    );
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
      <PageStatus
        load={data}
        loadError="Could not read the clients"
        change={action}
        changeError="The registration did not change"
      />
      <DataTable
        label="Clients"
        columns={['Client', 'Installed', 'Registered in', `In ${group}`]}
        items={data.data?.status}
        empty={<Empty title="No supported clients">This build knows no MCP clients.</Empty>}
        row={(c) => {
          const groups = groupsOf(c.client_type);
          const inGroup = groups.includes(group);
          return (
            <tr key={c.client_type} data-client={c.client_type}>
              <td>{c.client_type}</td>
              <td>{c.installed ? 'yes' : <span class="muted">no</span>}</td>
              <td>
                <NameList names={groups} />
              </td>
              <td>
                <button
                  type="button"
                  class="small"
                  disabled={action.busy !== undefined}
                  onClick={() => void (inGroup ? unregister(c.client_type) : register(c.client_type))}
                  aria-label={
                    inGroup
                      ? `Unregister ${c.client_type} from ${group}`
                      : `Register ${c.client_type} in ${group}`
                  }
                >
                  {inGroup ? 'Unregister' : 'Register'}
                </button>
              </td>
            </tr>
          );
        }}
      />
    </section>
  );
}
