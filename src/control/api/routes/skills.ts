/**
 * `/api/v1beta/skills`: validate, content preview, build, push, local builds, install, list,
 * details and uninstall (ToolHive's `/api/v1beta/skills` operations). Handlers only
 * validate the request shape and call the skills service.
 */
import { Type } from 'typebox';
import { definedOnly } from '../../../shared/index.js';
import type { InstalledSkill } from '../../../skills/index.js';
import type { SkepApp } from '../app.js';
import type { ApiContext } from '../../app/index.js';
import { NoContent } from '../../../schemas/index.js';
import { withErrors } from '../schemas.js';

const SkillMetadata = Type.Object(
  {
    name: Type.String(),
    version: Type.String(),
    description: Type.String(),
    author: Type.String(),
    tags: Type.Array(Type.String()),
  },
  { title: 'SkillMetadata' },
);

const InstalledSkillBody = Type.Object(
  {
    metadata: SkillMetadata,
    scope: Type.Union([Type.Literal('user'), Type.Literal('project')]),
    project_root: Type.Optional(Type.String()),
    reference: Type.String(),
    tag: Type.Optional(Type.String()),
    digest: Type.String(),
    status: Type.String({ description: '`installed`, `pending` or `failed`.' }),
    installed_at: Type.String({ description: 'RFC 3339, UTC.' }),
    clients: Type.Array(Type.String()),
    dependencies: Type.Array(
      Type.Object({ name: Type.String(), reference: Type.String(), digest: Type.String() }),
    ),
    managed: Type.Boolean(),
  },
  { $id: 'InstalledSkill' },
);

const ScopeQuery = Type.Object({
  scope: Type.Optional(Type.String({ description: '`user` (default), `project`, or empty.' })),
  project_root: Type.Optional(
    Type.String({ description: 'Absolute path of a git repository (project scope).' }),
  ),
});

function view(skill: InstalledSkill) {
  return {
    metadata: skill.metadata,
    scope: skill.scope,
    ...(skill.project_root === '' ? {} : { project_root: skill.project_root }),
    reference: skill.reference,
    ...(skill.tag === '' ? {} : { tag: skill.tag }),
    digest: skill.digest,
    status: skill.status,
    installed_at: skill.installed_at,
    clients: skill.clients,
    dependencies: skill.dependencies,
    managed: skill.managed,
  };
}

const REGISTRY_ERRORS = [400, 401, 404, 422, 429, 502, 504];

const Names = Type.Array(Type.String());
const ProjectRoot = Type.String({ description: 'Absolute path of the project (a git repository).' });
const FailureReason = Type.String({
  description:
    '`registry-unreachable`, `digest-missing`, `validation-rejected`, `lock-write-failed`, ' +
    '`signature-invalid`, `signer-mismatch`, `provenance-field-mismatch`, `unsigned-rejected` or `unknown`.',
});
const SyncResultBody = Type.Object({
  installed: Names,
  drifted: Names,
  missing: Names,
  already_current: Names,
  never_managed: Names,
  removed_from_lock: Names,
  pruned: Names,
  failed: Type.Array(Type.Object({ name: Type.String(), reason: FailureReason, error: Type.String() })),
});
const UpgradeResultBody = Type.Object({
  outcomes: Type.Array(
    Type.Object({
      name: Type.String(),
      status: Type.String({
        description:
          '`upgraded`, `up-to-date`, `not-upgradable` (pinned to a digest or commit), `signer-change-blocked` (the new content has another signer than the lock pins; `allow_signer_change` accepts it) or `failed`.',
      }),
      old_digest: Type.String(),
      new_digest: Type.String(),
      new_signer_identity: Type.Optional(Type.String()),
      reason: Type.Optional(FailureReason),
      error: Type.Optional(Type.String()),
    }),
  ),
});

export async function skillRoutes(app: SkepApp, ctx: ApiContext): Promise<void> {
  app.post(
    '/api/v1beta/skills/validate',
    {
      schema: {
        tags: ['skills'],
        summary: 'Validate a skill directory',
        body: Type.Object({ path: Type.String({ description: 'Absolute path of the skill directory.' }) }),
        response: withErrors(
          {
            200: Type.Object({
              valid: Type.Boolean(),
              errors: Type.Optional(Type.Array(Type.String())),
              warnings: Type.Optional(Type.Array(Type.String())),
            }),
          },
          400,
        ),
      },
    },
    async (request) => {
      const result = await ctx.skills.validate(request.body.path);
      return {
        valid: result.valid,
        ...(result.errors.length > 0 ? { errors: result.errors } : {}),
        ...(result.warnings.length > 0 ? { warnings: result.warnings } : {}),
      };
    },
  );

  app.get(
    '/api/v1beta/skills/content',
    {
      schema: {
        tags: ['skills'],
        summary:
          'Preview a skill (OCI reference, git:// reference, https URL or local build tag) without installing it',
        querystring: Type.Object({ ref: Type.Optional(Type.String()) }),
        response: withErrors(
          {
            200: Type.Object({
              name: Type.String(),
              description: Type.String(),
              version: Type.String(),
              license: Type.String(),
              body: Type.String(),
              files: Type.Array(Type.Object({ path: Type.String(), size: Type.Integer() })),
            }),
          },
          ...REGISTRY_ERRORS,
        ),
      },
    },
    async (request) => ctx.skills.content(request.query.ref),
  );

  app.post(
    '/api/v1beta/skills/build',
    {
      schema: {
        tags: ['skills'],
        summary: 'Package a skill directory into an OCI artifact in the local store',
        body: Type.Object({ path: Type.String(), tag: Type.Optional(Type.String()) }),
        response: withErrors({ 200: Type.Object({ reference: Type.String() }) }, 400),
      },
    },
    async (request) => ctx.skills.build(request.body.path, request.body.tag),
  );

  app.post(
    '/api/v1beta/skills/push',
    {
      schema: {
        tags: ['skills'],
        summary: 'Push a local build to the registry its tag names',
        body: Type.Object({
          reference: Type.String(),
          key: Type.Optional(Type.String()),
          identity_token: Type.Optional(Type.String()),
          no_sign: Type.Optional(Type.Boolean()),
        }),
        response: withErrors({ 204: NoContent }, 400, 401, 404, 429, 501, 502, 504),
      },
    },
    async (request, reply) => {
      await ctx.skills.push(request.body);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/v1beta/skills/sync',
    {
      schema: {
        tags: ['skills'],
        summary: 'Restore a project’s installed skills to match skep.lock.yaml',
        description:
          'Missing and drifted entries are reinstalled at their pinned digest (never a newer one); `check` only ' +
          'reports. Managed skills not in the lock are `removed_from_lock` (`prune` uninstalls them). `adopt` is ' +
          'not supported yet (501).',
        body: Type.Object(
          {
            project_root: ProjectRoot,
            clients: Type.Optional(Names),
            prune: Type.Optional(Type.Boolean()),
            check: Type.Optional(Type.Boolean()),
            adopt: Type.Optional(Type.Boolean()),
            allow_unsigned: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        response: withErrors({ 200: SyncResultBody }, 400, 501),
      },
    },
    async (request) => ctx.skills.sync(request.body),
  );

  app.post(
    '/api/v1beta/skills/upgrade',
    {
      schema: {
        tags: ['skills'],
        summary: 'Re-resolve a project’s lock entries and install newer content',
        description:
          'A moved tag or branch is installed and pinned; sources pinned to a digest or commit are ' +
          '`not-upgradable`. `preview` compares without installing; `fail_on_changes` answers 409 when anything ' +
          'would upgrade. 404 when a requested name is not in the lock file.',
        body: Type.Object(
          {
            project_root: ProjectRoot,
            names: Type.Optional(Names),
            preview: Type.Optional(Type.Boolean()),
            fail_on_changes: Type.Optional(Type.Boolean()),
            allow_ref_change: Type.Optional(Type.Boolean()),
            allow_signer_change: Type.Optional(Type.Boolean()),
            clients: Type.Optional(Names),
          },
          { additionalProperties: false },
        ),
        response: withErrors({ 200: UpgradeResultBody }, 400, 404, 409),
      },
    },
    async (request) => ctx.skills.upgrade(request.body),
  );

  app.get(
    '/api/v1beta/skills/builds',
    {
      schema: {
        tags: ['skills'],
        summary: 'List local builds',
        response: {
          200: Type.Object({
            builds: Type.Array(
              Type.Object({
                tag: Type.String(),
                digest: Type.String(),
                name: Type.String(),
                description: Type.String(),
                version: Type.String(),
              }),
            ),
          }),
        },
      },
    },
    async () => ({ builds: await ctx.skills.builds() }),
  );

  app.delete(
    '/api/v1beta/skills/builds/:tag',
    {
      schema: {
        tags: ['skills'],
        summary: 'Remove a local build (and blobs no other build uses)',
        params: Type.Object({ tag: Type.String() }),
        response: withErrors({ 204: NoContent }, 404),
      },
    },
    async (request, reply) => {
      await ctx.skills.removeBuild(request.params.tag);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/v1beta/skills',
    {
      schema: {
        tags: ['skills'],
        summary: 'Install a skill from an OCI registry, git or a local build',
        body: Type.Object({
          name: Type.String({
            description: 'Plain name (local build), OCI reference, or git://host/owner/repo[@ref][#path].',
          }),
          version: Type.Optional(Type.String()),
          scope: Type.Optional(Type.String()),
          project_root: Type.Optional(Type.String()),
          clients: Type.Optional(Type.Array(Type.String())),
          force: Type.Optional(Type.Boolean()),
          group: Type.Optional(Type.String()),
          allow_unsigned: Type.Optional(Type.Boolean()),
          public_keys: Type.Optional(
            Type.Array(Type.String(), {
              description:
                'Public keys (SPKI PEM text, or paths of PEM files on the server host) trusted for this install, besides the trusted-keys folder and SKEP_SKILLS_TRUSTED_KEYS (a Skep extension).',
            }),
          ),
        }),
        response: withErrors(
          { 201: Type.Object({ skill: InstalledSkillBody }) },
          400,
          401,
          403,
          404,
          409,
          422,
          429,
          502,
          504,
        ),
      },
    },
    async (request, reply) => {
      const skill = await ctx.skills.install(request.body);
      return reply
        .code(201)
        .header('location', `/api/v1beta/skills/${encodeURIComponent(skill.metadata.name)}`)
        .send({ skill: view(skill) });
    },
  );

  app.get(
    '/api/v1beta/skills',
    {
      schema: {
        tags: ['skills'],
        summary: 'List installed skills (sorted by name)',
        querystring: Type.Object({
          scope: Type.Optional(Type.String()),
          client: Type.Optional(Type.String()),
          project_root: Type.Optional(Type.String()),
          group: Type.Optional(Type.String()),
        }),
        response: withErrors({ 200: Type.Object({ skills: Type.Array(InstalledSkillBody) }) }, 400, 404),
      },
    },
    async (request) => ({ skills: (await ctx.skills.list(request.query)).map(view) }),
  );

  app.get(
    '/api/v1beta/skills/:name',
    {
      schema: {
        tags: ['skills'],
        summary: 'Details of an installed skill',
        params: Type.Object({ name: Type.String() }),
        querystring: ScopeQuery,
        response: withErrors(
          {
            200: Type.Object({
              metadata: SkillMetadata,
              installed_skill: InstalledSkillBody,
              unsigned: Type.Optional(Type.Boolean()),
            }),
          },
          400,
          404,
        ),
      },
    },
    async (request) => {
      const { installed, unsigned } = await ctx.skills.info(
        request.params.name,
        request.query.scope,
        request.query.project_root,
      );
      return {
        metadata: installed.metadata,
        installed_skill: view(installed),
        ...definedOnly({ unsigned }),
      };
    },
  );

  app.delete(
    '/api/v1beta/skills/:name',
    {
      schema: {
        tags: ['skills'],
        summary: 'Uninstall a skill (and dependencies nothing else needs)',
        params: Type.Object({ name: Type.String() }),
        querystring: ScopeQuery,
        response: withErrors({ 204: NoContent }, 400, 404),
      },
    },
    async (request, reply) => {
      await ctx.skills.uninstall(request.params.name, request.query.scope, request.query.project_root);
      return reply.code(204).send(null);
    },
  );
}
