/**
 * Several real processes register clients, start and stop workloads and sync the same client
 * config files at once. The cross-process lock and atomic writes must keep every file
 * parseable at every moment (a reader polls them throughout), keep the user's own content,
 * and end with exactly the entries of the final state.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ClientsService, clientDefinition, readConfigEntries } from '../../../src/clients/index.js';
import { GroupService } from '../../../src/groups/index.js';
import { openStore } from '../../../src/store/index.js';
import { tempHome } from '../../helpers/home.js';

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'writer-worker.ts');
const PROCESSES = 6;
const ROUNDS = 4;
const CLIENTS = ['cursor', 'vscode', 'goose', 'codex', 'mistral-vibe'] as const;

const USER_CONTENT: Record<(typeof CLIENTS)[number], string> = {
  cursor: '{\n  "mcpServers": {\n    "mine": { "command": "x" }\n  },\n  "keep": true\n}\n',
  vscode: '// mine\n{\n  "servers": {\n    "mine": { "command": "x" }, // my server\n  },\n}\n',
  goose: '# mine\nextensions:\n  mine:\n    type: builtin # builtin\nkeep: true\n',
  codex: '# mine\nkeep = true\n\n[mcp_servers.mine]\ncommand = "x" # my server\n',
  'mistral-vibe': '# mine\nkeep = true\n\n[[mcp_servers]]\nname = "mine"\ntransport = "stdio" # my server\n',
};

test(
  'concurrent registrations and workload changes from several processes never corrupt a config file',
  {
    timeout: 180_000,
  },
  async (t) => {
    const skep = tempHome(t, 'skep-clients-concurrent-');
    const userHome = join(skep.dir, 'user-home');
    const workloadsDir = join(skep.dir, 'workloads');
    mkdirSync(workloadsDir, { recursive: true });

    // Prepare the store (groups) and the users' files before the writers start.
    const store = openStore(skep.config.paths.databaseFile);
    const groups = new GroupService(store);
    for (let i = 0; i < PROCESSES; i++) groups.create(`g${i}`);
    const reader = new ClientsService({ store, groups, env: { HOME: userHome }, platform: 'linux' });
    t.after(() => store.close());
    const files = CLIENTS.map((type) => ({
      type,
      def: clientDefinition(type),
      file: reader.configPath(type),
    }));
    for (const { type, file } of files) {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, USER_CONTENT[type]);
    }

    const children = Array.from({ length: PROCESSES }, (_, index) => {
      const job = { skepHome: skep.dir, userHome, workloadsDir, index, rounds: ROUNDS, clients: CLIENTS };
      const child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(job)], {
        stdio: ['ignore', 'inherit', 'pipe'],
        env: { ...process.env, SKEP_LOG_LEVEL: 'silent' },
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      t.after(() => {
        if (child.exitCode === null) child.kill('SIGKILL');
      });
      return new Promise<{ code: number | null; stderr: string }>((resolve) =>
        child.on('exit', (code) => resolve({ code, stderr })),
      );
    });

    // Poll every file while the writers run: each read must parse and hold the user's entry.
    let done = false;
    let reads = 0;
    const all = Promise.all(children).finally(() => {
      done = true;
    });
    while (!done) {
      for (const { def, file } of files) {
        const text = readFileSync(file, 'utf8');
        const entries = readConfigEntries(def, text, file);
        assert.ok('mine' in entries, `${file}: the user's entry is there (read ${reads})`);
        reads++;
      }
      await sleep(5);
    }
    const results = await all;
    for (const r of results) assert.equal(r.code, 0, `a writer failed: ${r.stderr}`);
    assert.ok(reads > 0);

    // Final state: every client is registered in every g<i>, every w<i> is running.
    const expected = Array.from({ length: PROCESSES }, (_, i) => `w${i}`).sort();
    for (const { type, def, file } of files) {
      const text = readFileSync(file, 'utf8');
      const entries = readConfigEntries(def, text, file);
      assert.deepEqual(Object.keys(entries).sort(), ['mine', ...expected].sort(), `${type} entries`);
      for (const comment of ['mine']) assert.ok(text.includes(comment));
      if (def.format !== 'json')
        assert.ok(text.includes('# ') || text.includes('// '), `${type}: comments kept`);
      assert.equal(existsSync(`${file}.lock`), false, `${type}: lock released`);
      const leftovers = readdirSync(dirname(file)).filter((f) => f.includes('.tmp-'));
      assert.deepEqual(leftovers, [], `${type}: no temp files left`);
    }
    assert.deepEqual(
      reader.list().map((r) => r.name),
      [...CLIENTS].sort(),
    );

    // Unregistering everything gives back the user's files.
    for (const type of CLIENTS) await reader.unregister(type);
    for (const { type, file, def } of files) {
      const text = readFileSync(file, 'utf8');
      if (def.format === 'yaml') assert.deepEqual(Object.keys(readConfigEntries(def, text, file)), ['mine']);
      else assert.equal(text, USER_CONTENT[type], `${type}: back to the user's original`);
    }
  },
);
