/** Every route module of the management API, registered in this order. */
import type { SkepApp } from '../app.js';
import type { ApiContext } from '../../app/index.js';
import { clientRoutes } from './clients.js';
import { groupRoutes } from './groups.js';
import { metricsRoutes } from './metrics.js';
import { registryRoutes } from './registry.js';
import { secretRoutes } from './secrets.js';
import { skillRoutes } from './skills.js';
import { systemRoutes } from './system.js';
import { workloadRoutes } from './workloads.js';

export type RouteModule = (app: SkepApp, ctx: ApiContext) => Promise<void>;

export const routeModules: readonly RouteModule[] = [
  // First: its onResponse hook counts the requests of every route registered after it.
  metricsRoutes,
  systemRoutes,
  groupRoutes,
  secretRoutes,
  skillRoutes,
  workloadRoutes,
  clientRoutes,
  registryRoutes,
];
