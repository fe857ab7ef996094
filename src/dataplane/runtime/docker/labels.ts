/** Labels on every container and network Skep creates; orphan clean-up and tests find them by these. */
export const LABEL_MANAGED = 'dev.skep.managed';
export const LABEL_INSTANCE = 'dev.skep.instance';
export const LABEL_WORKLOAD = 'dev.skep.workload';
export const LABEL_ROLE = 'dev.skep.role';
