import { dailyCostAnomaly } from './daily-anomaly';
import { egressOutpacingCompute } from './egress-outpacing-compute';
import { extendedSupportCharges } from './extended-support';
import { idlePublicIp } from './idle-public-ip';
import { inconsistentTagKeys } from './inconsistent-tag-keys';
import { inconsistentTagValues } from './inconsistent-tag-values';
import { missingRequiredTags } from './missing-required-tags';
import { newCostlyResource } from './new-costly-resource';
import { nonProductionAlwaysOn } from './nonprod-always-on';
import { previousGeneration } from './previous-generation';
import { serviceCostAnomaly } from './service-anomaly';
import { steadyOnDemand } from './steady-on-demand';
import { storageGrowth } from './storage-growth';
import type { Rule } from './types';
import { unallocatedSpend } from './unallocated-spend';
import { unattributedSpend } from './unattributed-spend';
import { unusedCapacityReservation } from './unused-capacity-reservation';
import { unusedCommitment } from './unused-commitment';

/** Every rule a scan runs, in the order the catalogue lists them. */
export const allRules: readonly Rule[] = [
  missingRequiredTags,
  inconsistentTagKeys,
  inconsistentTagValues,
  unallocatedSpend,
  unattributedSpend,
  nonProductionAlwaysOn,
  steadyOnDemand,
  unusedCommitment,
  unusedCapacityReservation,
  idlePublicIp,
  previousGeneration,
  extendedSupportCharges,
  dailyCostAnomaly,
  serviceCostAnomaly,
  storageGrowth,
  egressOutpacingCompute,
  newCostlyResource,
];

/** The catalogue as FindingsService.ListRules and GET /v1/guard/rules serve it. */
export const rules = allRules.map(
  ({ id, severity, category, title, description, recommendation, needs, savings, neverFlags }) => ({
    id,
    severity,
    category,
    title,
    description,
    recommendation,
    needs,
    savings,
    neverFlags,
  }),
);
