/**
 * For every one of the 25 client types, with a temporary HOME: registering writes the running
 * workloads of the client's groups in that client's format; the file still parses with a real
 * parser; the user's own settings, servers and comments survive; stopping a workload removes
 * its entry; unregistering removes only Skep's entries.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, test } from 'node:test';
import { BACKUP_SUFFIX, CLIENT_TYPES, clientDefinition } from '../../../src/clients/index.js';
import {
  EXPECTED,
  parseWithRealParser,
  serversOf,
  userFixture,
  userServer,
  userServerName,
} from './fixtures.js';
import { harness, running } from './harness.js';

describe('every client type', () => {
  for (const type of CLIENT_TYPES) {
    const def = clientDefinition(type);

    test(`${type}: register, live sync and unregister keep the user's ${def.format} file intact`, async (t) => {
      const h = harness(t);
      h.groups.create('other');
      const file = h.service.configPath(type);
      const fixture = userFixture(def);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, fixture.text);

      // Registering with no running workload changes nothing in the file.
      assert.deepEqual(await h.service.register(type), { name: type, groups: ['default'] });
      assert.equal(readFileSync(file, 'utf8'), fixture.text);

      // w1 and w2 run in `default`; w3 is stopped; w4 runs in a group the client is not in.
      h.workloads.push(
        running('w1', 4101),
        running('w2', 4102, { transport_type: 'sse' }),
        running('w3', 4103, { status: 'stopped' }),
        running('w4', 4104, { group: 'other' }),
      );
      await h.service.syncClientConfigs();
      const text = readFileSync(file, 'utf8');
      const data = parseWithRealParser(def, text);
      const servers = serversOf(type, data);
      assert.deepEqual(servers['w1'], EXPECTED[type][0]);
      assert.deepEqual(servers['w2'], EXPECTED[type][1]);
      assert.equal(servers['w3'], undefined, 'a stopped workload is not written');
      assert.equal(servers['w4'], undefined, 'a workload of another group is not written');
      assert.deepEqual(servers[userServerName(def)], userServer(def), 'the user server is untouched');
      for (const comment of fixture.comments) assert.ok(text.includes(comment), `comment kept: ${comment}`);
      const before = parseWithRealParser(def, fixture.text);
      for (const key of Object.keys(before)) {
        if (key !== def.layout.path[0]) assert.deepEqual(data[key], before[key], `setting ${key} kept`);
      }
      // One backup of the previous content.
      assert.equal(readFileSync(`${file}${BACKUP_SUFFIX}`, 'utf8'), fixture.text);

      // A second sync with nothing new is a no-op: the file is not rewritten.
      await h.service.syncClientConfigs();
      assert.equal(readFileSync(file, 'utf8'), text);

      // Stopping w1 removes its entry and only that one.
      h.workloads[0]!.status = 'stopped';
      await h.service.syncClientConfigs();
      const afterStop = serversOf(type, parseWithRealParser(def, readFileSync(file, 'utf8')));
      assert.equal(afterStop['w1'], undefined);
      assert.deepEqual(afterStop['w2'], EXPECTED[type][1]);

      // Unregistering removes Skep's entries and nothing else.
      await h.service.unregister(type);
      const finalText = readFileSync(file, 'utf8');
      if (def.format === 'yaml') {
        // yaml re-prints the document: same data and comments, indentation may be normalized.
        assert.deepEqual(parseWithRealParser(def, finalText), before);
        for (const comment of fixture.comments) assert.ok(finalText.includes(comment));
      } else {
        assert.equal(finalText, fixture.text, 'the file is byte-for-byte the user original');
      }
      assert.equal(h.service.list().length, 0);
      assert.equal(existsSync(`${file}.lock`), false, 'the lock file is released');
    });

    test(`${type}: a missing config file and its folders are created on the first entry`, async (t) => {
      const h = harness(t);
      const file = h.service.configPath(type);
      assert.equal(existsSync(file), false);
      await h.service.register(type);
      assert.equal(existsSync(file), false, 'nothing to write, no file');
      h.workloads.push(running('w1', 4101));
      await h.service.syncClientConfigs();
      const servers = serversOf(type, parseWithRealParser(def, readFileSync(file, 'utf8')));
      assert.deepEqual(servers, { w1: EXPECTED[type][0] });
      assert.equal(existsSync(`${file}${BACKUP_SUFFIX}`), false, 'no backup of a file that did not exist');
    });
  }
});
