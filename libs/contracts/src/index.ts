export * from './gen/costgov/common/v1/common_pb';
export * as identity from './gen/costgov/identity/v1/identity_pb';
export * as scim from './gen/costgov/identity/v1/scim_pb';
export * as budgets from './gen/costgov/budgets/v1/budgets_pb';
export * as events from './gen/costgov/events/v1/events_pb';
export * as rpcStatus from './gen/google/rpc/status_pb';
export * as rpcErrors from './gen/google/rpc/error_details_pb';
export * as costs from './gen/costgov/costs/v1/costs_pb';
export * as violations from './gen/costgov/violations/v1/violations_pb';
