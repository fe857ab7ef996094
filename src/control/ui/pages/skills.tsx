/** Skills: installed skills, install (by reference, or from the catalog), validate a directory, uninstall. */
import { useState } from 'preact/hooks';
import { api, get, seg } from '../api.js';
import {
  DataTable,
  Empty,
  ErrorBox,
  FormActions,
  Link,
  Loading,
  NameList,
  Notice,
  PageHeader,
  TextField,
  useChange,
  useLoad,
} from '../components.js';
import type { InstalledSkill, SkillValidation } from '../types.js';

export function SkillsPage() {
  const list = useLoad(
    () => get<{ skills: InstalledSkill[] }>('/api/v1beta/skills').then((r) => r.skills),
    [],
  );
  const [reference, setReference] = useState('');
  const [path, setPath] = useState('');
  const [validation, setValidation] = useState<SkillValidation | undefined>(undefined);
  const action = useChange(list.reload);
  const install = async (event: Event) => {
    event.preventDefault();
    await action.change(
      'Installing',
      () => api('POST', '/api/v1beta/skills', { name: reference.trim() }),
      `Installed ${reference.trim()}.`,
      () => setReference(''),
    );
  };
  const validate = async (event: Event) => {
    event.preventDefault();
    setValidation(undefined);
    await action.run('Validating', async () => {
      setValidation(await api<SkillValidation>('POST', '/api/v1beta/skills/validate', { path: path.trim() }));
    });
  };
  const uninstall = async (skill: InstalledSkill) => {
    if (!window.confirm(`Uninstall ${skill.metadata.name}?`)) return;
    const query =
      skill.scope === 'project' && skill.project_root !== undefined
        ? `?scope=project&project_root=${encodeURIComponent(skill.project_root)}`
        : '';
    await action.change(
      'Uninstalling',
      () => api('DELETE', `/api/v1beta/skills/${seg(skill.metadata.name)}${query}`),
      `Uninstalled ${skill.metadata.name}.`,
    );
  };
  return (
    <section>
      <PageHeader title="Skills">
        <Link href="/catalog">Browse skills in the catalog</Link>
      </PageHeader>
      <ErrorBox error={list.error} title="Could not list the installed skills" />
      <ErrorBox error={action.error} title="That did not work" />
      <Notice text={action.notice ?? (action.busy !== undefined ? `${action.busy}…` : undefined)} />
      {list.loading && <Loading />}
      <DataTable
        label="Installed skills"
        columns={['Skill', 'Version', 'Scope', 'Status', 'Clients', 'Actions']}
        items={list.data}
        empty={
          <Empty title="No skills installed">
            Install one below by reference, or from the <Link href="/catalog">Catalog</Link> (Skills tab).
          </Empty>
        }
        row={(s) => (
          <tr key={`${s.scope}:${s.project_root ?? ''}:${s.metadata.name}`}>
            <td>
              {s.metadata.name}
              <div class="muted small">{s.metadata.description}</div>
            </td>
            <td>{s.metadata.version}</td>
            <td>{s.scope}</td>
            <td>{s.status}</td>
            <td>
              <NameList names={s.clients} />
            </td>
            <td>
              <button
                type="button"
                class="small danger"
                onClick={() => void uninstall(s)}
                aria-label={`Uninstall ${s.metadata.name}`}
              >
                Uninstall
              </button>
            </td>
          </tr>
        )}
      />
      <div class="columns">
        <form class="card form" onSubmit={(e) => void install(e)} aria-label="Install a skill">
          <h2>Install</h2>
          <TextField
            label="Reference"
            hint="An OCI reference, git://host/owner/repo[@ref][#path], or the tag of a local build."
            required
            value={reference}
            onValue={setReference}
          />
          <FormActions busy={action.busy} submit="Install" />
        </form>
        <form class="card form" onSubmit={(e) => void validate(e)} aria-label="Validate a skill">
          <h2>Validate</h2>
          <TextField
            label="Directory"
            hint="Absolute path of a skill directory (with SKILL.md) on the server's machine."
            required
            value={path}
            onValue={setPath}
          />
          <FormActions busy={action.busy} submit="Validate" />
          {validation !== undefined && (
            <div class={validation.valid ? 'notice' : 'error'} role="status">
              <strong>{validation.valid ? 'Valid' : 'Not valid'}</strong>
              <ul>
                {(validation.errors ?? []).map((e) => (
                  <li key={e}>{e}</li>
                ))}
                {(validation.warnings ?? []).map((w) => (
                  <li key={w}>warning: {w}</li>
                ))}
              </ul>
            </div>
          )}
        </form>
      </div>
    </section>
  );
}
