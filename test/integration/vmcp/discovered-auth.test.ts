/**
 * Outgoing auth in discovered mode (`outgoingAuth.source: discovered`): the virtual endpoint
 * calls each backend with that backend's own outgoing auth, read from its run configuration.
 * The backend `exchanged` is a real workload whose proxy takes inbound OIDC for its own
 * audience only and whose run configuration exchanges tokens (RFC 8693, oidc-provider) for that
 * audience: the virtual endpoint's call succeeds only if it exchanged the caller's token with the
 * backend's settings. `open` has no outgoing auth and is called as is.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXCHANGER, PROXY_AUDIENCE, startIdp } from '../auth/harness.js';
import { addGroup, callText, connect, lab, TEAM_SERVER, team, toolNames, virtual } from './helpers.js';

/** tsx's loader by absolute URL: the runner starts servers in another working directory. */
const TSX = import.meta.resolve('tsx');

test(
  'virtual MCP discovered outgoing auth: a backend’s own token exchange is used',
  { timeout: 300_000 },
  async (t) => {
    const idp = await startIdp(t);
    const l = lab(t);
    await addGroup(l, 'disc');
    const oidc = (audience: string) => ({ oidc: { issuer: idp.issuer, audience, jwks_url: idp.jwksUrl } });
    // The create API takes no token_exchange_config (as the reference's): the backend is made
    // from a run configuration, as `skep run --from-config` does.
    await l.manager.create(
      Object.assign(
        {
          name: 'exchanged',
          group: 'disc',
          image: `cmd://${process.execPath}`,
          cmd_arguments: ['--import', TSX, TEAM_SERVER, 'exchanged'],
          transport: 'streamable-http' as const,
        },
        oidc('https://exchanged.test'),
      ),
    );
    const rc = structuredClone(l.manager.rows.get('exchanged')!.config);
    await l.manager.deleteNow('exchanged');
    rc.token_exchange_config = {
      token_url: `${idp.issuer}/token`,
      client_id: EXCHANGER.id,
      client_secret: EXCHANGER.secret,
      audience: 'https://exchanged.test',
    };
    await l.manager.createFromConfig(rc);
    await l.run('exchanged');
    await team(l, 'open', 'disc');
    await virtual(l, 'hub', 'disc', { outgoingAuth: { source: 'discovered' } }, oidc(PROXY_AUDIENCE));

    const client = await connect(t, l.url('hub'), { token: await idp.clientToken() });
    const names = await toolNames(client);
    assert.ok(names.includes('exchanged_search') && names.includes('open_search'), names.join(','));
    // Only a token for https://exchanged.test gets past that backend's proxy: the virtual
    // endpoint exchanged the caller's token with the backend's own settings.
    assert.equal(await callText(client, 'exchanged_search', { query: 'x' }), 'exchanged found x');
    assert.equal(await callText(client, 'open_search', { query: 'o' }), 'open found o');
    assert.ok(
      idp.exchanges.some((x) => x.audience === 'https://exchanged.test' && x.clientId === EXCHANGER.id),
      JSON.stringify(idp.exchanges),
    );

    // The same group with inline auth and no strategy for `exchanged`: its proxy refuses the
    // caller's token (wrong audience), so the list fails naming it (partialFailureMode fail).
    await virtual(l, 'plain', 'disc', { outgoingAuth: { source: 'inline' } }, oidc(PROXY_AUDIENCE));
    const plain = await connect(t, l.url('plain'), { token: await idp.clientToken() });
    await assert.rejects(plain.listTools(), /backend exchanged failed to list its capabilities/);
  },
);
