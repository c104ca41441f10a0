/**
 * FOCUS ChargeCategory values whose charges cannot carry tags: taxes, credits, purchases (commitments,
 * support and marketplace fees) and adjustments. With the charges that have no ResourceId, they are left
 * out of every tag-based share (tags-missing-required, spend-unallocated-share,
 * spend-unattributed-share) and of the cost posture's tag coverage; costs' GetScanData and
 * GetTagCoverage apply the same list in SQL.
 */
export const untaggableCategories: ReadonlySet<string> = new Set(['Tax', 'Credit', 'Purchase', 'Adjustment']);
