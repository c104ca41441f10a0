import { budgets, costs, notifier, scanner, scim, violations } from '@costgov/contracts';
import { createRpcClient, type RpcClientOptions } from '@costgov/rpc';
import type { GatewayDeps } from '../src/app';

type Backends = Pick<
  GatewayDeps,
  | 'projects'
  | 'scim'
  | 'budgets'
  | 'violations'
  | 'connections'
  | 'costData'
  | 'scans'
  | 'findings'
  | 'posture'
  | 'webhooks'
>;

/** Every backend client of the gateway, all pointed at one address where nothing answers. */
export function deadBackends(port: number, options: RpcClientOptions = {}): Backends {
  const address = `127.0.0.1:${port}`;
  return {
    projects: createRpcClient(budgets.ProjectsService, address, options),
    scim: createRpcClient(scim.ScimService, address, options),
    budgets: createRpcClient(budgets.BudgetsService, address, options),
    violations: createRpcClient(violations.ViolationsService, address, options),
    connections: createRpcClient(costs.ConnectionsService, address, options),
    costData: createRpcClient(costs.CostDataService, address, options),
    scans: createRpcClient(scanner.ScansService, address, options),
    findings: createRpcClient(scanner.FindingsService, address, options),
    posture: createRpcClient(scanner.PostureService, address, options),
    webhooks: createRpcClient(notifier.WebhooksService, address, options),
  };
}
