/**
 * The webhook stages (ToolHive's webhook middlewares): `mutating-webhook` then
 * `validating-webhook`, each built from `mutating_webhooks` / `validating_webhooks` (or a
 * `middleware_configs` entry `{webhooks, server_name, transport}`). Like the reference they look
 * only at requests the proxy parsed as one JSON-RPC request or notification (`ctx.mcp`): every
 * method, `initialize`, `ping` and notifications included; GETs, DELETEs and a client's responses
 * pass. A mutated body goes back through `ctx.replaceBody`, so the stages after this one
 * (authorization, audit) and the server see the request as the webhooks left it.
 */
import { callerClaims } from '../identity.js';
import { PROTOCOL_ERRORS, refusalBody } from '../../../protocol/index.js';
import type { ProxyRequestContext } from '../../proxy/index.js';
import {
  parseWebhookStageConfig,
  type WebhookChainInput,
  type WebhookKind,
  type WebhookRuntime,
  type WebhookStageConfig,
} from '../../middleware/webhooks/index.js';
import type { Stage, StageDeps, StageFactory } from '../types.js';

/** `sharedPrincipalOf` of the webhooks' run-time half, loaded with the stage. */
type PrincipalOf = typeof WebhookRuntime.sharedPrincipalOf;

function chainInput(
  ctx: ProxyRequestContext,
  mcp: NonNullable<ProxyRequestContext['mcp']>,
  config: WebhookStageConfig,
  principalOf: PrincipalOf,
): WebhookChainInput {
  return {
    bodyText: ctx.bodyText ?? JSON.stringify(ctx.body),
    body: ctx.body,
    id: mcp.id,
    principal: principalOf(callerClaims(ctx), ctx.identity.subject, ctx.identity.claims !== undefined),
    context: {
      server_name: config.serverName ?? ctx.serverName,
      // The reference sends Go's RemoteAddr ("ip:port"); the proxy context has the address only.
      source_ip: ctx.remoteAddress ?? '',
      transport: config.transport ?? ctx.backendTransport,
    },
  };
}

function webhookStage(kind: WebhookKind): StageFactory {
  const type = `${kind}-webhook`;
  return {
    type,
    fromRunConfig(config) {
      const webhooks = kind === 'validating' ? config.validating_webhooks : config.mutating_webhooks;
      if (webhooks === undefined || webhooks.length === 0) return undefined;
      return { webhooks, server_name: config.name, transport: config.transport };
    },
    async check(parameters: unknown) {
      // Everything but the HMAC secret's value, which is looked up when the workload starts.
      await parseWebhookStageConfig(parameters, kind, async () => 'checked at start');
    },
    async create(parameters: unknown, deps: StageDeps): Promise<Stage> {
      const config = await parseWebhookStageConfig(parameters, kind, deps.secretLookup);
      // Loaded here, so that a workload without webhooks never loads the client (runner footprint).
      const {
        sharedPrincipalOf: principalOf,
        runMutatingChain,
        runValidatingChain,
        WebhookClient,
        webhookRejection,
      } = await import('../../middleware/webhooks/runtime.js');
      const clients = config.webhooks.map(
        (webhook) => new WebhookClient(webhook, deps.now === undefined ? {} : { now: deps.now }),
      );
      const logger = deps.logger.child({ stage: type });
      const now = deps.now ?? Date.now;
      const handle =
        kind === 'validating'
          ? async (ctx: ProxyRequestContext) => {
              if (ctx.mcp === undefined) return undefined;
              return runValidatingChain(clients, chainInput(ctx, ctx.mcp, config, principalOf), logger, now);
            }
          : async (ctx: ProxyRequestContext) => {
              const mcp = ctx.mcp;
              if (mcp === undefined) return undefined;
              const result = await runMutatingChain(
                clients,
                chainInput(ctx, mcp, config, principalOf),
                logger,
                now,
              );
              if (result.rejection !== undefined) return result.rejection;
              if (!result.changed) return undefined;
              // As in ToolHive, a batch is refused as the parser refuses one. Patches cannot
              // replace the request itself (every path is under /mcp_request/), so this
              // guards the contract rather than a case a webhook can produce today.
              if (Array.isArray(result.body))
                return {
                  status: PROTOCOL_ERRORS.batch_refused.status,
                  headers: { 'content-type': 'application/json' },
                  body: refusalBody('batch_refused', undefined),
                };
              try {
                ctx.replaceBody(result.body);
              } catch (err) {
                if (!(err instanceof TypeError)) throw err;
                logger.error({ reason: err.message }, 'mutating webhooks produced an invalid MCP request');
                return webhookRejection(500, 'Webhook produced an invalid MCP request', mcp.id);
              }
              return undefined;
            };
      return {
        name: type,
        handle,
        async close() {
          await Promise.all(clients.map((client) => client.close()));
        },
      };
    },
  };
}

export const mutatingWebhookStage: StageFactory = webhookStage('mutating');
export const validatingWebhookStage: StageFactory = webhookStage('validating');
