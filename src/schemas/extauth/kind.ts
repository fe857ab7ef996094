/** MCPExternalAuthConfig as a kind definition, from which its CRD is generated. */
import { AGE_COLUMN, column, conditionColumn, defineKind } from '../kind.js';
import { EXTAUTH_KIND, EXTAUTH_PLURAL, ExtAuthSpecSchema, ExtAuthStatusSchema } from './schema.js';

export const MCP_EXTERNAL_AUTH_CONFIG = defineKind({
  kind: EXTAUTH_KIND,
  plural: EXTAUTH_PLURAL,
  shortNames: ['extauth', 'mcpextauth'],
  description:
    'MCPExternalAuthConfig configures how a tool server or proxy authenticates to external services.',
  spec: ExtAuthSpecSchema,
  status: ExtAuthStatusSchema,
  printerColumns: [
    column('Type', '.spec.type'),
    conditionColumn('Valid'),
    Object.assign(column('Hash', '.status.configHash'), { priority: 1 }),
    AGE_COLUMN,
  ],
});
