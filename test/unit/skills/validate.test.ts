/** SKILL.md parsing and `POST /skills/validate` rules (ToolHive's). */
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseSkillMd, SkillParseError } from '../../../src/skills/skill-md.js';
import { testApp } from '../../helpers/api.js';

test('allowed-tools and toolhive.requires string-or-list rules', () => {
  const parsed = parseSkillMd(
    '---\nname: a-b\ndescription: d\nallowed-tools: Read, Write ,\ntoolhive.requires: "x y"\n---\nbody\n',
  );
  assert.deepEqual(parsed.frontmatter.allowedTools, ['Read', 'Write']);
  assert.deepEqual(parsed.frontmatter.requires, ['x', 'y']);
  assert.equal(parsed.body, 'body');
  assert.throws(() => parseSkillMd('no frontmatter'), SkillParseError);
  assert.throws(() => parseSkillMd('---\nname: x\n'), /invalid frontmatter/);
  assert.throws(() => parseSkillMd(`---\n${'a'.repeat(70_000)}`), /exceeds maximum size of 65536 bytes/);
  const many = Array.from({ length: 101 }, (_, i) => `  - dep${i}`).join('\n');
  assert.throws(
    () => parseSkillMd(`---\nname: a\ntoolhive.requires:\n${many}\n---\n`),
    /too many dependencies: 101 \(max 100\)/,
  );
});

test('validate errors and warnings through the API', async (t) => {
  const { app, home } = await testApp(t);
  const root = join(home.dir, 'skills');
  const write = (dir: string, text: string) => {
    mkdirSync(join(root, dir), { recursive: true });
    writeFileSync(join(root, dir, 'SKILL.md'), text);
    return join(root, dir);
  };
  const validate = async (path: string) =>
    app.inject({ method: 'POST', url: '/api/v1beta/skills/validate', payload: { path } });

  const missing = join(root, 'empty');
  mkdirSync(missing, { recursive: true });
  assert.deepEqual((await validate(missing)).json(), {
    valid: false,
    errors: ['SKILL.md not found in skill directory'],
  });

  const good = write(
    'good-skill',
    '---\nname: good-skill\ndescription: fine\nallowed-tools: Read, Write\n---\nbody\n',
  );
  assert.deepEqual((await validate(good)).json(), {
    valid: true,
    warnings: [
      'allowed-tools uses comma-delimited format, which is a ToolHive extension; the Agent Skills spec defines space-delimited as the canonical format',
    ],
  });

  const bad = write(
    'wrong-dir',
    `---\nname: Bad--Name\ndescription: ${'é'.repeat(513)}\ncompatibility: ${'x'.repeat(501)}\n---\n${'line\n'.repeat(501)}`,
  );
  const badResult = (await validate(bad)).json();
  assert.equal(badResult.valid, false);
  assert.deepEqual(badResult.errors, [
    'invalid skill name "Bad--Name": must be 2-64 lowercase alphanumeric characters or hyphens, starting and ending with alphanumeric',
    'description exceeds maximum length of 1024 characters',
    'compatibility field exceeds maximum length of 500 characters',
    'skill name "Bad--Name" must match directory name "wrong-dir"',
  ]);
  assert.match(badResult.warnings[0], /^SKILL.md has 50\d lines \(recommended max: 500\)$/);

  const noName = write('no-name', '---\ndescription: x\n---\n');
  assert.deepEqual((await validate(noName)).json().errors, ['name is required']);
  const broken = write('broken', '---\nname: [unclosed\n---\n');
  assert.match((await validate(broken)).json().errors[0], /^invalid SKILL.md: invalid frontmatter: /);

  const linked = write('linked', '---\nname: linked\ndescription: x\n---\n');
  symlinkSync('/etc/passwd', join(linked, 'passwd'));
  assert.deepEqual((await validate(linked)).json().errors, [
    'symlink found at "passwd": symlinks are not allowed in skill directories',
  ]);

  for (const [path, message] of [
    ['', 'path is required'],
    ['relative/dir', 'path must be absolute, got "relative/dir"'],
    ['/tmp/../etc', "path must not contain '..' traversal segments"],
    ['/tmp/a\u0000b', 'path contains null bytes'],
  ]) {
    const res = await validate(path as string);
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().message, message);
  }
  const buildLinked = await app.inject({
    method: 'POST',
    url: '/api/v1beta/skills/build',
    payload: { path: linked },
  });
  assert.equal(buildLinked.statusCode, 400);
});
