export { startGateway, type RunningGateway } from './server';
export { gatewayConfig, type GatewayConfig } from './config';
