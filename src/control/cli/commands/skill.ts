/** `skep skill validate|build|push|builds|content|install|list|info|rm|sync|upgrade`. */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { definedOnly, SkepError, terminalSafe } from '../../../shared/index.js';
import { withContext } from '../context.js';
import { addCall, addListing } from '../command-shapes.js';
import { type JsonOpt, printJson, printListing, printOutcome, printTable } from '../output.js';

/** Exit codes of `sync` and `upgrade` (ToolHive's). */
const EXIT_CHECK_FAILED = 2;
const EXIT_PARTIAL = 3;

/** `--project-root`, else the nearest directory upwards from here that holds `.git`. */
function projectRootFrom(flag: string | undefined): string {
  if (flag !== undefined) return resolve(flag);
  for (let dir = process.cwd(); ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir;
    if (dirname(dir) === dir) return process.cwd();
  }
}

const list = (value: string) => value.split(',').filter((c) => c !== '');

/**
 * What `--sign` without a key says when no OIDC token is available: where a token comes from,
 * and that a key signs offline.
 */
const NO_TOKEN_MESSAGE =
  'keyless signing needs an OIDC identity token, and none is available here: set SIGSTORE_ID_TOKEN ' +
  '(in GitHub Actions, grant the job `permissions: id-token: write` and request a token with the audience ' +
  '"sigstore" from ACTIONS_ID_TOKEN_REQUEST_URL; with Google Cloud, `gcloud auth print-identity-token ' +
  '--audiences=sigstore`). Or sign with a key, which works offline: --sign --key <ECDSA P-256 private key PEM>';

export function registerSkill(program: Command): void {
  const skill = program.command('skill').description('Validate, build, share and install agent skills');

  addCall(skill, 'validate <path>', 'Validate a skill directory (SKILL.md rules and limits)', {
    run: (ctx, path) => ctx.skills.validate(resolve(path)),
    print: (result, opts) => {
      if (opts.json === true) printJson(result);
      else {
        for (const e of result.errors) process.stdout.write(`error: ${terminalSafe(e)}\n`);
        for (const w of result.warnings) process.stdout.write(`warning: ${terminalSafe(w)}\n`);
        if (result.valid) process.stdout.write('skill is valid\n');
      }
      if (!result.valid) process.exitCode = 1;
    },
  });

  skill
    .command('build <path>')
    .description('Package a skill directory into an OCI artifact in the local store')
    .option('-t, --tag <tag>', 'bare tag or full OCI reference (default: the skill name)')
    .option('--json', 'print JSON')
    .action(async (path: string, opts: JsonOpt & { tag?: string }) => {
      const out = await withContext((ctx) => ctx.skills.build(resolve(path), opts.tag));
      printOutcome(opts, out, out.reference);
    });

  skill
    .command('push <reference>')
    .description('Push a local build to the registry named by its reference, signed with --sign')
    .option('--sign', 'sign the pushed artifact (with --key, or keyless with an OIDC token)')
    .option(
      '--key <file>',
      'ECDSA P-256 private key PEM to sign with (implies --sign; passphrase in COSIGN_PASSWORD)',
    )
    .option(
      '--keyless',
      'sign keyless (implies --sign): a Fulcio certificate for the OIDC token in SIGSTORE_ID_TOKEN, logged in Rekor',
    )
    .option('--identity-token <token>', 'OIDC identity token for keyless signing (prefer SIGSTORE_ID_TOKEN)')
    .option('--no-sign', 'push unsigned')
    .option('--json', 'print JSON')
    .action(
      async (
        reference: string,
        opts: JsonOpt & { sign?: boolean; key?: string; keyless?: boolean; identityToken?: string },
      ) => {
        // commander turns `--sign`/`--no-sign` into one boolean: absent means neither was given.
        const key = opts.key === undefined ? undefined : resolve(opts.key);
        const token = opts.identityToken ?? process.env['SIGSTORE_ID_TOKEN'];
        if (opts.keyless === true && key !== undefined)
          throw new SkepError('bad_request', '--keyless and --key exclude each other: sign with one of them');
        if ((opts.sign === true || opts.keyless === true) && key === undefined && token === undefined) {
          throw new SkepError('bad_request', NO_TOKEN_MESSAGE);
        }
        const pushed = await withContext((ctx) =>
          ctx.skills.push({
            reference,
            ...(key !== undefined
              ? { key }
              : (opts.sign === true || opts.keyless === true) && token !== undefined
                ? { identity_token: token }
                : opts.identityToken !== undefined
                  ? { identity_token: opts.identityToken }
                  : {}),
            ...(opts.sign === false ? { no_sign: true } : {}),
          }),
        );
        printOutcome(
          opts,
          { reference, ...pushed },
          pushed.signer === undefined
            ? `pushed ${reference} (${pushed.digest}), unsigned`
            : `pushed ${reference} (${pushed.digest}), signed by ${pushed.signer} (${pushed.signature})`,
        );
      },
    );

  addListing(skill, 'builds', 'List local builds', {
    load: () => withContext((ctx) => ctx.skills.builds()),
    json: (builds) => ({ builds }),
    headers: ['TAG', 'NAME', 'VERSION', 'DIGEST'],
    row: (b) => [b.tag, b.name, b.version, b.digest],
  });

  addCall(
    skill,
    'content <ref>',
    'Show a skill (OCI reference, git:// reference or local build) without installing it',
    {
      run: (ctx, ref) => ctx.skills.content(ref),
      print: (content, opts) => {
        if (opts.json === true) printJson(content);
        else {
          // A skill from a registry: its name and description are the publisher's text.
          process.stdout.write(
            terminalSafe(`${content.name} ${content.version}\n${content.description}\n\n`),
          );
          printTable(
            ['FILE', 'SIZE'],
            content.files.map((f) => [f.path, f.size]),
          );
        }
      },
    },
  );

  skill
    .command('install <name>')
    .description(
      'Install a skill from an OCI registry, git (git://host/owner/repo[@ref][#path]) or a local build',
    )
    .option('--version <version>', 'version (tag) to install')
    .option('--scope <scope>', 'user (default) or project')
    .option('--project-root <dir>', 'git repository for project scope')
    .option('--clients <list>', 'comma-separated client types (default: every detected skill client)')
    .option('--group <group>', 'group to add the skill to', 'default')
    .option('--force', 'overwrite a skill folder Skep did not install')
    .option('--allow-unsigned', 'accept an unsigned artifact for a project install')
    .option(
      '--key <file>',
      'trust this public key PEM (repeatable) besides the trusted-keys folder and SKEP_SKILLS_TRUSTED_KEYS',
      (value: string, previous: string[] = []) => [...previous, resolve(value)],
    )
    .option('--json', 'print JSON')
    .action(
      async (
        name: string,
        opts: JsonOpt & {
          version?: string;
          scope?: string;
          projectRoot?: string;
          clients?: string;
          group?: string;
          force?: boolean;
          allowUnsigned?: boolean;
          key?: string[];
        },
      ) => {
        const installed = await withContext((ctx) =>
          ctx.skills.install({
            name,
            version: opts.version,
            scope: opts.scope,
            project_root: opts.projectRoot === undefined ? undefined : resolve(opts.projectRoot),
            clients: opts.clients?.split(',').map((c) => c.trim()),
            group: opts.group,
            force: opts.force === true,
            allow_unsigned: opts.allowUnsigned === true,
            ...(opts.key === undefined ? {} : { public_keys: opts.key }),
          }),
        );
        printOutcome(
          opts,
          { skill: installed },
          `installed ${installed.metadata.name} (${installed.digest}) for ${installed.clients.join(', ')}`,
        );
      },
    );

  skill
    .command('list')
    .alias('ls')
    .description('List installed skills')
    .option('--scope <scope>', 'user or project (default: all)')
    .option('--client <client>', 'only skills installed for this client')
    .option('--project-root <dir>', 'only skills of this project')
    .option('--group <group>', 'only skills in this group')
    .option('--json', 'print JSON')
    .action(
      async (opts: JsonOpt & { scope?: string; client?: string; projectRoot?: string; group?: string }) => {
        const skills = await withContext((ctx) =>
          ctx.skills.list({
            ...definedOnly({ scope: opts.scope, client: opts.client }),
            ...(opts.projectRoot === undefined ? {} : { project_root: resolve(opts.projectRoot) }),
            ...definedOnly({ group: opts.group }),
          }),
        );
        printListing(
          opts,
          { skills },
          ['NAME', 'VERSION', 'SCOPE', 'CLIENTS', 'REFERENCE'],
          skills.map((s) => [s.metadata.name, s.metadata.version, s.scope, s.clients.join(','), s.reference]),
        );
      },
    );

  skill
    .command('info <name>')
    .description('Show an installed skill')
    .option('--scope <scope>', 'user (default) or project')
    .option('--project-root <dir>', 'git repository for project scope')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: JsonOpt & { scope?: string; projectRoot?: string }) => {
      const info = await withContext((ctx) =>
        ctx.skills.info(
          name,
          opts.scope,
          opts.projectRoot === undefined ? undefined : resolve(opts.projectRoot),
        ),
      );
      if (opts.json === true)
        printJson({ metadata: info.installed.metadata, installed_skill: info.installed });
      else {
        const s = info.installed;
        process.stdout.write(
          terminalSafe(
            `${s.metadata.name} ${s.metadata.version}\n${s.metadata.description}\nscope: ${s.scope}\nreference: ${s.reference}\ndigest: ${s.digest}\nclients: ${s.clients.join(', ')}\n`,
          ),
        );
      }
    });

  skill
    .command('rm <name>')
    .alias('uninstall')
    .description('Uninstall a skill')
    .option('--scope <scope>', 'user (default) or project')
    .option('--project-root <dir>', 'git repository for project scope')
    .action(async (name: string, opts: { scope?: string; projectRoot?: string }) => {
      await withContext((ctx) =>
        ctx.skills.uninstall(
          name,
          opts.scope,
          opts.projectRoot === undefined ? undefined : resolve(opts.projectRoot),
        ),
      );
      process.stdout.write(`skill ${name} removed\n`);
    });

  skill
    .command('sync')
    .description(
      'Restore the project’s skills to skep.lock.yaml (exit 2: --check found differences; 3: some failed)',
    )
    .option('--project-root <dir>', 'the project (default: the git repository around this directory)')
    .option('--clients <list>', 'comma-separated clients (default: every detected one)', list)
    .option('--check', 'only report; change nothing')
    .option('--prune', 'uninstall managed skills the lock no longer lists')
    .option('--json', 'print JSON')
    .action(
      async (
        opts: JsonOpt & { projectRoot?: string; clients?: string[]; check?: boolean; prune?: boolean },
      ) => {
        const result = await withContext((ctx) =>
          ctx.skills.sync({
            project_root: projectRootFrom(opts.projectRoot),
            ...definedOnly({ clients: opts.clients }),
            ...(opts.check === true ? { check: true } : {}),
            ...(opts.prune === true ? { prune: true } : {}),
          }),
        );
        if (opts.json === true) printJson(result);
        else {
          const rows: [string, string][] = [];
          for (const [state, names] of Object.entries(result)) {
            if (state === 'failed') continue;
            for (const name of names as string[]) rows.push([name, state.replaceAll('_', ' ')]);
          }
          for (const f of result.failed) rows.push([f.name, `failed (${f.reason}): ${f.error}`]);
          printTable(['SKILL', 'STATE'], rows);
        }
        if (result.failed.length > 0) process.exitCode = EXIT_PARTIAL;
        else if (opts.check === true && result.drifted.length + result.missing.length > 0)
          process.exitCode = EXIT_CHECK_FAILED;
      },
    );

  skill
    .command('upgrade [names...]')
    .description(
      'Install newer content for the project’s lock entries (exit 2: --fail-on-changes; 3: some failed)',
    )
    .option('--project-root <dir>', 'the project (default: the git repository around this directory)')
    .option('--clients <list>', 'comma-separated clients (default: every detected one)', list)
    .option('--preview', 'resolve and compare only')
    .option('--fail-on-changes', 'fail when anything would upgrade')
    .option('--json', 'print JSON')
    .action(
      async (
        names: string[],
        opts: JsonOpt & {
          projectRoot?: string;
          clients?: string[];
          preview?: boolean;
          failOnChanges?: boolean;
        },
      ) => {
        let result;
        try {
          result = await withContext((ctx) =>
            ctx.skills.upgrade({
              project_root: projectRootFrom(opts.projectRoot),
              ...(names.length === 0 ? {} : { names }),
              ...definedOnly({ clients: opts.clients }),
              ...(opts.preview === true ? { preview: true } : {}),
              ...(opts.failOnChanges === true ? { fail_on_changes: true } : {}),
            }),
          );
        } catch (err) {
          if (opts.failOnChanges === true && (err as { code?: string }).code === 'conflict') {
            process.stderr.write(`${terminalSafe((err as Error).message)}\n`);
            process.exitCode = EXIT_CHECK_FAILED;
            return;
          }
          throw err;
        }
        printListing(
          opts,
          result,
          ['SKILL', 'STATUS', 'FROM', 'TO'],
          result.outcomes.map((o) => [
            o.name,
            o.error === undefined ? o.status : `${o.status}: ${o.error}`,
            o.old_digest,
            o.new_digest,
          ]),
        );
        if (result.outcomes.some((o) => o.status === 'failed')) process.exitCode = EXIT_PARTIAL;
      },
    );
}
