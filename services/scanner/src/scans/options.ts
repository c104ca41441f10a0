import type { ScannerConfig } from '../config';
import type { ScansOptions } from './service';

/** The scans side as the environment configures it. */
export const scansOptionsFrom = (config: ScannerConfig): ScansOptions => ({
  identityAddress: config.IDENTITY_ADDR,
  budgetsAddress: config.BUDGETS_ADDR,
  costsAddress: config.COSTS_ADDR,
  rpcDeadlineMs: config.RPC_DEADLINE_MS,
  mode: config.SCANNER_MODE,
  staleMs: config.SCAN_STALE_MS,
  chargeGraceMs: config.SCAN_CHARGE_GRACE_MS,
  retryDeadlineMs: config.SCAN_RETRY_DEADLINE_MS,
  heartbeatMs: config.SCAN_HEARTBEAT_MS,
  ackWaitMs: config.SCAN_ACK_WAIT_MS,
  concurrency: config.SCAN_CONCURRENCY,
  extraDelayMs: config.SCAN_EXTRA_DELAY_MS,
});
