/** Groups: list, create, delete (optionally with their servers). */
import { useState } from 'preact/hooks';
import { api, get, seg } from '../api.js';
import {
  DataTable,
  Empty,
  FormActions,
  NameList,
  PageHeader,
  PageStatus,
  TextField,
  useChange,
  useLoad,
} from '../components.js';
import type { Group, WorkloadSummary } from '../types.js';

export function GroupsPage() {
  const data = useLoad(async () => {
    const [groups, workloads] = await Promise.all([
      get<{ groups: Group[] }>('/api/v1beta/groups').then((r) => r.groups),
      get<{ workloads: WorkloadSummary[] }>('/api/v1beta/workloads?all=true').then((r) => r.workloads),
    ]);
    return { groups, workloads };
  }, []);
  const [name, setName] = useState('');
  const action = useChange(data.reload);
  const create = async (event: Event) => {
    event.preventDefault();
    await action.change(
      'Create',
      () => api('POST', '/api/v1beta/groups', { name: name.trim() }),
      `Created the group ${name.trim()}.`,
      () => setName(''),
    );
  };
  // A group that holds servers is deleted only with them (the API refuses otherwise): the
  // question names them, and Cancel changes nothing. Servers never move to another group.
  const remove = async (group: string, servers: string[]) => {
    const question =
      servers.length === 0
        ? `Delete the group ${group}?`
        : `The group ${group} holds ${servers.length === 1 ? 'a server' : `${servers.length} servers`}: ` +
          `${servers.join(', ')}.\nDelete the group and ${servers.length === 1 ? 'that server' : 'these servers'}? ` +
          'Cancel changes nothing.';
    if (!window.confirm(question)) return;
    await action.change(
      'Delete',
      () =>
        api('DELETE', `/api/v1beta/groups/${seg(group)}${servers.length > 0 ? '?with-workloads=true' : ''}`),
      servers.length === 0
        ? `Deleted the group ${group}.`
        : `Deleted the group ${group} and ${servers.join(', ')}.`,
    );
  };
  return (
    <section>
      <PageHeader title="Groups" />
      <PageStatus
        load={data}
        loadError="Could not read the groups"
        change={action}
        changeError="The group was not changed"
      />
      <DataTable
        label="Groups"
        columns={['Group', 'Servers', 'Clients', 'Actions']}
        items={data.data?.groups}
        empty={
          <Empty title="No groups">
            Create one below; servers and client registrations are grouped by it.
          </Empty>
        }
        row={(g) => {
          const servers = data.data?.workloads.filter((w) => w.group === g.name).map((w) => w.name) ?? [];
          return (
            <tr key={g.name} data-group={g.name}>
              <td>{g.name}</td>
              <td>
                <NameList names={servers} />
              </td>
              <td>
                <NameList names={g.registered_clients} />
              </td>
              <td>
                {g.name !== 'default' && (
                  <button
                    type="button"
                    class="small danger"
                    onClick={() => void remove(g.name, servers)}
                    aria-label={`Delete the group ${g.name}`}
                  >
                    Delete
                  </button>
                )}
              </td>
            </tr>
          );
        }}
      />
      <form class="card form" onSubmit={(e) => void create(e)} aria-label="Create a group">
        <h2>Create a group</h2>
        <TextField label="Name" required value={name} onValue={setName} />
        <FormActions busy={action.busy} submit="Create" />
      </form>
    </section>
  );
}
