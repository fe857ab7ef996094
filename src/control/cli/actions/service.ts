/**
 * `skep service install|uninstall|status`: start `skep serve` with the user's session, so the
 * workloads it resumes come back after a reboot. On Linux a systemd user unit
 * (`$XDG_CONFIG_HOME/systemd/user/skep.service`, systemd.service(5)); on macOS a launchd agent
 * (`~/Library/LaunchAgents/dev.skep.serve.plist`, launchd.plist(5)).
 *
 * The unit runs the same Node and the same built CLI as the command that installed it, with the
 * variables that choose Skep's folders (`SKEP_HOME`, `XDG_*_HOME`) and `PATH` (so servers find
 * npx, uvx and podman as they do in a shell) — and nothing else: no secret, no token, no
 * password ever goes into the unit.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { findExecutable, SkepError, writeFileAtomic } from '../../../shared/index.js';
import { cliEntry } from '../../../workloads/index.js';
import { printOutcome } from '../output.js';

export const SYSTEMD_UNIT = 'skep.service';
export const LAUNCHD_LABEL = 'dev.skep.serve';

/** The variables a unit carries over from the installing shell: where Skep's files are, and PATH. */
const CARRIED_ENV = [
  'SKEP_HOME',
  'XDG_CONFIG_HOME',
  'XDG_STATE_HOME',
  'XDG_DATA_HOME',
  'XDG_CACHE_HOME',
  'PATH',
];

export interface ServiceTarget {
  kind: 'systemd' | 'launchd';
  /** The unit or agent file. */
  file: string;
}

/** Where this platform keeps a per-user service definition. */
export function serviceTarget(
  env: NodeJS.ProcessEnv = process.env,
  platform = process.platform,
): ServiceTarget {
  const home = env['HOME'] ?? homedir();
  if (platform === 'linux') {
    const config = env['XDG_CONFIG_HOME'] ? env['XDG_CONFIG_HOME'] : join(home, '.config');
    return { kind: 'systemd', file: join(config, 'systemd', 'user', SYSTEMD_UNIT) };
  }
  if (platform === 'darwin') {
    return { kind: 'launchd', file: join(home, 'Library', 'LaunchAgents', `${LAUNCHD_LABEL}.plist`) };
  }
  throw new SkepError(
    'not_implemented',
    `skep service supports Linux (systemd) and macOS (launchd), not ${platform}; start 'skep serve' from your session's startup instead`,
  );
}

export interface ServeCommand {
  /** argv: the Node binary, the CLI entry, `serve` and its options. */
  argv: string[];
  /** Carried-over environment, in a fixed order. */
  env: [string, string][];
}

/** What the unit runs: this Node, this built CLI, `serve`. */
export function serveCommand(env: NodeJS.ProcessEnv = process.env, entry = cliEntry()): ServeCommand {
  if (!entry.endsWith('.mjs')) {
    throw new SkepError(
      'not_implemented',
      `a service must run the built CLI, not ${entry}: run 'npm run build', then 'node dist/skep.mjs service install'`,
    );
  }
  const carried: [string, string][] = [];
  for (const name of CARRIED_ENV) {
    const value = env[name];
    if (value !== undefined && value !== '') carried.push([name, value]);
  }
  return { argv: [process.execPath, entry, 'serve'], env: carried };
}

/** One word of an ExecStart= line or an Environment= assignment, quoted (systemd.syntax(7)). */
function systemdQuote(word: string): string {
  // `%` starts a specifier and `$` a variable expansion in ExecStart=; both are doubled.
  const escaped = word
    .replace(/\\/g, '\\\\')
    .replace(/"/g, '\\"')
    .replace(/\n/g, '\\n')
    .replace(/%/g, '%%')
    .replace(/\$/g, '$$$$');
  return `"${escaped}"`;
}

export function renderSystemdUnit(cmd: ServeCommand): string {
  const lines = [
    '# Written by `skep service install`; `skep service uninstall` removes it.',
    '[Unit]',
    'Description=Skep: MCP servers for this user (skep serve)',
    '',
    '[Service]',
    'Type=simple',
    ...cmd.env.map(([name, value]) => `Environment=${systemdQuote(`${name}=${value}`)}`),
    `ExecStart=${cmd.argv.map(systemdQuote).join(' ')}`,
    'Restart=on-failure',
    'RestartSec=5',
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ];
  return lines.join('\n');
}

const xml = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export function renderLaunchdPlist(cmd: ServeCommand, logFile: string): string {
  const strings = (items: string[], indent: string): string =>
    items.map((s) => `${indent}<string>${xml(s)}</string>`).join('\n');
  const envEntries = cmd.env
    .map(([k, v]) => `      <key>${xml(k)}</key>\n      <string>${xml(v)}</string>`)
    .join('\n');
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    '<!-- Written by `skep service install`; `skep service uninstall` removes it. -->',
    '<plist version="1.0">',
    '  <dict>',
    '    <key>Label</key>',
    `    <string>${LAUNCHD_LABEL}</string>`,
    '    <key>ProgramArguments</key>',
    '    <array>',
    strings(cmd.argv, '      '),
    '    </array>',
    '    <key>EnvironmentVariables</key>',
    '    <dict>',
    envEntries,
    '    </dict>',
    '    <key>RunAtLoad</key>',
    '    <true/>',
    '    <key>KeepAlive</key>',
    '    <dict>',
    '      <key>SuccessfulExit</key>',
    '      <false/>',
    '    </dict>',
    '    <key>StandardOutPath</key>',
    `    <string>${xml(logFile)}</string>`,
    '    <key>StandardErrorPath</key>',
    `    <string>${xml(logFile)}</string>`,
    '  </dict>',
    '</plist>',
    '',
  ].join('\n');
}

interface Ran {
  ok: boolean;
  output: string;
}

/** Runs a service-manager command; a missing program or a missing user session is not thrown. */
function run(program: string, args: string[]): Ran {
  const result = spawnSync(program, args, { encoding: 'utf8', timeout: 30_000 });
  if (result.error) return { ok: false, output: result.error.message };
  return { ok: result.status === 0, output: `${result.stdout ?? ''}${result.stderr ?? ''}`.trim() };
}

/** The commands that load, start, stop and query the service on this platform. */
function manager(target: ServiceTarget, env: NodeJS.ProcessEnv) {
  if (target.kind === 'systemd') {
    return {
      available: findExecutable('systemctl', env) !== undefined,
      activate: [
        ['systemctl', '--user', 'daemon-reload'],
        ['systemctl', '--user', 'enable', '--now', SYSTEMD_UNIT],
      ],
      deactivate: [['systemctl', '--user', 'disable', '--now', SYSTEMD_UNIT]],
      afterRemove: [['systemctl', '--user', 'daemon-reload']],
      state: (): string => {
        const enabled = run('systemctl', ['--user', 'is-enabled', SYSTEMD_UNIT]).output || 'unknown';
        const active = run('systemctl', ['--user', 'is-active', SYSTEMD_UNIT]).output || 'unknown';
        return `${enabled}, ${active}`;
      },
    };
  }
  const uid = process.getuid?.() ?? 0;
  return {
    available: findExecutable('launchctl', env) !== undefined,
    activate: [['launchctl', 'bootstrap', `gui/${uid}`, target.file]],
    deactivate: [['launchctl', 'bootout', `gui/${uid}/${LAUNCHD_LABEL}`]],
    afterRemove: [],
    state: (): string =>
      run('launchctl', ['print', `gui/${uid}/${LAUNCHD_LABEL}`]).ok ? 'loaded' : 'not loaded',
  };
}

const shellLine = (argv: string[]): string => argv.join(' ');

export interface ServiceOpts {
  json?: boolean;
  /** Only write the file; do not enable or start it. */
  start?: boolean;
}

/** `skep service install` (commander passes the options, then the command). */
export const serviceInstall = (opts: ServiceOpts): Promise<void> => installService(opts, process.env);

export async function installService(opts: ServiceOpts, env: NodeJS.ProcessEnv): Promise<void> {
  const target = serviceTarget(env);
  const cmd = serveCommand(env);
  const text =
    target.kind === 'systemd'
      ? renderSystemdUnit(cmd)
      : renderLaunchdPlist(cmd, join(env['HOME'] ?? homedir(), 'Library', 'Logs', 'skep-serve.log'));
  // Nothing secret is in it, but nobody else may change what runs as this user at login.
  await writeFileAtomic(target.file, text, 0o644);
  const mgr = manager(target, env);
  const steps: string[] = [];
  let activated = false;
  if (opts.start !== false && mgr.available) {
    activated = true;
    for (const argv of mgr.activate) {
      const [program, ...args] = argv as [string, ...string[]];
      const result = run(program, args);
      if (!result.ok) {
        activated = false;
        steps.push(`'${shellLine(argv)}' failed: ${result.output || 'no output'}`);
        break;
      }
    }
  }
  const todo = activated ? [] : mgr.activate.map(shellLine);
  const lines = [`wrote ${target.file}`];
  if (activated) lines.push('enabled and started: skep serve now starts with your session');
  else {
    lines.push(...steps);
    if (!mgr.available) lines.push(`${target.kind === 'systemd' ? 'systemctl' : 'launchctl'} is not on PATH`);
    lines.push('to start it with your session, run:', ...todo.map((t) => `  ${t}`));
  }
  printOutcome(opts, { file: target.file, kind: target.kind, activated, todo }, lines.join('\n'));
}

/** `skep service uninstall`. */
export const serviceUninstall = (opts: ServiceOpts): Promise<void> => uninstallService(opts, process.env);

export async function uninstallService(opts: ServiceOpts, env: NodeJS.ProcessEnv): Promise<void> {
  const target = serviceTarget(env);
  const present = existsSync(target.file);
  const mgr = manager(target, env);
  if (present && mgr.available) {
    for (const [program, ...args] of mgr.deactivate as [string, ...string[]][]) run(program, args);
  }
  rmSync(target.file, { force: true });
  if (present && mgr.available) {
    for (const [program, ...args] of mgr.afterRemove as [string, ...string[]][]) run(program, args);
  }
  printOutcome(
    opts,
    { file: target.file, removed: present },
    present ? `stopped and removed ${target.file}` : `no service installed (${target.file} does not exist)`,
  );
}

/** `skep service status` (commander passes the options, then the command). */
export const serviceStatus = (opts: ServiceOpts): Promise<void> => statusService(opts, process.env);

export async function statusService(opts: ServiceOpts, env: NodeJS.ProcessEnv): Promise<void> {
  const target = serviceTarget(env);
  const installed = existsSync(target.file);
  const mgr = manager(target, env);
  const state = installed && mgr.available ? mgr.state() : undefined;
  const runs = installed ? serviceArgv(readFileSync(target.file, 'utf8'), target.kind) : undefined;
  const lines = installed
    ? [`installed: ${target.file}`, ...(runs ? [`runs: ${runs}`] : []), ...(state ? [`state: ${state}`] : [])]
    : [`not installed (skep service install writes ${target.file})`];
  printOutcome(
    opts,
    { file: target.file, kind: target.kind, installed, state: state ?? null },
    lines.join('\n'),
  );
}

/** The command line an installed unit runs, for `status` (best effort, for display). */
function serviceArgv(text: string, kind: ServiceTarget['kind']): string | undefined {
  if (kind === 'systemd') return /^ExecStart=(.*)$/m.exec(text)?.[1];
  const args = /<key>ProgramArguments<\/key>\s*<array>([\s\S]*?)<\/array>/.exec(text)?.[1];
  return args === undefined
    ? undefined
    : [...args.matchAll(/<string>(.*?)<\/string>/g)].map((m) => m[1]).join(' ');
}
