/**
 * `awssts`: the caller's role (from a claim, or the fallback role) is assumed through AWS STS
 * and every request to the remote server is signed with SigV4 (`aws_sts_config`).
 */
import { definedOnly, SkepError } from '../../../shared/index.js';
import type { StageFactory } from '../types.js';
import { paramsObject, runConfigBlock, stringParam } from './params.js';

const TYPE = 'awssts';

export const awsStsStage: StageFactory = {
  type: TYPE,
  fromRunConfig: (config) =>
    config.aws_sts_config === undefined
      ? undefined
      : { aws_sts_config: config.aws_sts_config, ...definedOnly({ target_url: config.remote_url }) },
  async create(parameters, deps) {
    const params = paramsObject(TYPE, parameters);
    const sts = runConfigBlock(TYPE, params, 'aws_sts_config', 'aws_sts_config');
    if (sts === undefined)
      throw new SkepError('invalid_config', "middleware_configs: 'awssts' needs aws_sts_config");
    if ((stringParam(TYPE, params, 'target_url') ?? deps.config.remote_url) === undefined)
      throw new SkepError(
        'invalid_config',
        'aws_sts_config signs requests to a remote server: set remote_url',
      );
    const { createAwsStsMiddleware, sdkAssumeRole } = await import('../../middleware/auth/aws-sts.js');
    let assumeRole = deps.assumeRole;
    let close: (() => void) | undefined;
    if (assumeRole === undefined) {
      const client = sdkAssumeRole(sts.region ?? '', deps.stsEndpoint);
      close = () => client.close();
      assumeRole = client.assumeRole;
    }
    const middleware = createAwsStsMiddleware(
      {
        region: sts.region ?? '',
        ...(sts.service ? { service: sts.service } : {}),
        ...(sts.fallback_role_arn ? { fallbackRoleArn: sts.fallback_role_arn } : {}),
        ...(sts.role_claim ? { roleClaim: sts.role_claim } : {}),
        ...definedOnly({ sessionDuration: sts.session_duration }),
        ...(sts.session_name_claim ? { sessionNameClaim: sts.session_name_claim } : {}),
        ...(sts.role_mappings
          ? {
              roleMappings: sts.role_mappings.map((m) => ({
                roleArn: m.role_arn ?? '',
                ...definedOnly({ claim: m.claim, matcher: m.matcher, priority: m.priority }),
              })),
            }
          : {}),
      },
      { logger: deps.logger, assumeRole, ...definedOnly({ now: deps.now }) },
    );
    return close === undefined ? middleware : Object.assign(middleware, { close });
  },
};
