/**
 * The permission profile (ToolHive's PermissionProfile): what a server's sandbox may read, write and
 * reach. One shape for a registry entry's `permissions`, a run configuration's
 * `permission_profile` and the runtimes that apply it (`src/dataplane/runtime/docker/profile.ts`).
 */
import { type Static, Type } from 'typebox';
import { Opt, Strs } from './shorthand.js';

export const PermissionProfileSchema = Type.Object({
  name: Opt(Type.String()),
  network: Opt(
    Type.Object({
      inbound: Opt(Type.Object({ allow_host: Opt(Strs()) })),
      mode: Opt(Type.String()),
      outbound: Opt(
        Type.Object({
          allow_host: Opt(Strs()),
          allow_port: Opt(Type.Array(Type.Integer())),
          insecure_allow_all: Opt(Type.Boolean()),
        }),
      ),
    }),
  ),
  privileged: Opt(Type.Boolean()),
  read: Opt(Strs()),
  write: Opt(Strs()),
});
export type PermissionProfile = Static<typeof PermissionProfileSchema>;
