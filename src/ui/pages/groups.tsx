/** Groups: list, create, delete (optionally with their servers). */
import { useState } from 'preact/hooks';
import { api, get, seg } from '../api.js';
import {
  Empty,
  ErrorBox,
  Field,
  Loading,
  Notice,
  PageHeader,
  TextInput,
  useAction,
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
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const action = useAction();
  const create = async (event: Event) => {
    event.preventDefault();
    setNotice(undefined);
    if (await action.run('Create', () => api('POST', '/api/v1beta/groups', { name: name.trim() }))) {
      setNotice(`Created the group ${name.trim()}.`);
      setName('');
      await data.reload();
    }
  };
  const remove = async (group: string, count: number) => {
    const withWorkloads =
      count > 0 &&
      window.confirm(
        `Also delete the ${count} server(s) of ${group}? Cancel keeps them (they move to default).`,
      );
    if (!window.confirm(`Delete the group ${group}?`)) return;
    setNotice(undefined);
    if (
      await action.run('Delete', () =>
        api('DELETE', `/api/v1beta/groups/${seg(group)}${withWorkloads ? '?with-workloads=true' : ''}`),
      )
    ) {
      setNotice(`Deleted the group ${group}.`);
      await data.reload();
    }
  };
  return (
    <section>
      <PageHeader title="Groups" />
      <ErrorBox error={data.error} title="Could not read the groups" />
      <ErrorBox error={action.error} title="The group was not changed" />
      <Notice text={notice} />
      {data.loading && <Loading />}
      {data.data !== undefined && data.data.groups.length === 0 && (
        <Empty title="No groups">Create one below; servers and client registrations are grouped by it.</Empty>
      )}
      {data.data !== undefined && data.data.groups.length > 0 && (
        <table class="table" aria-label="Groups">
          <thead>
            <tr>
              <th scope="col">Group</th>
              <th scope="col">Servers</th>
              <th scope="col">Clients</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {data.data.groups.map((g) => {
              const servers = data.data?.workloads.filter((w) => w.group === g.name).map((w) => w.name) ?? [];
              return (
                <tr key={g.name} data-group={g.name}>
                  <td>{g.name}</td>
                  <td>{servers.length === 0 ? <span class="muted">—</span> : servers.join(', ')}</td>
                  <td>
                    {g.registered_clients.length === 0 ? (
                      <span class="muted">—</span>
                    ) : (
                      g.registered_clients.join(', ')
                    )}
                  </td>
                  <td>
                    {g.name !== 'default' && (
                      <button
                        type="button"
                        class="small danger"
                        onClick={() => void remove(g.name, servers.length)}
                        aria-label={`Delete the group ${g.name}`}
                      >
                        Delete
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <form class="card form" onSubmit={(e) => void create(e)} aria-label="Create a group">
        <h2>Create a group</h2>
        <Field label="Name" required>
          <TextInput value={name} onValue={setName} required />
        </Field>
        <div class="form-actions">
          <button type="submit" disabled={action.busy !== undefined}>
            Create
          </button>
        </div>
      </form>
    </section>
  );
}
