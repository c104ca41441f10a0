// A real server with a budgets.ProjectsService whose handlers each test replaces, for libs/rpc's tests.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { budgets } from '@costgov/contracts';
import { createRpcServer, type RpcServer, type ServiceImpl } from '../src/server';

type Projects = ServiceImpl<typeof budgets.ProjectsService>;

const notStubbed = async (): Promise<never> => {
  throw new Error('This test did not stub the method it called.');
};

export function recordingLogger() {
  const lines = { debug: [] as unknown[][], error: [] as unknown[][] };
  const logger = {
    debug: (...args: unknown[]) => void lines.debug.push(args),
    error: (...args: unknown[]) => void lines.error.push(args),
  };
  return { lines, logger };
}

export interface ProjectsServer {
  server: RpcServer;
  address: string;
  /** The handlers behind the server; assign one to change what the next call does. */
  handlers: Projects;
  logs: ReturnType<typeof recordingLogger>['lines'];
}

/** Starts the server on `127.0.0.1:port`; port 0 (the default) picks a free one. */
export async function startProjectsServer(port = 0): Promise<ProjectsServer> {
  const { lines, logger } = recordingLogger();
  const handlers: Projects = {
    createProject: notStubbed,
    getProject: notStubbed,
    listProjects: notStubbed,
    updateProject: notStubbed,
    deleteProject: notStubbed,
  };
  const server = createRpcServer({ logger });
  server.add(budgets.ProjectsService, {
    createProject: (request, ctx) => handlers.createProject(request, ctx),
    getProject: (request, ctx) => handlers.getProject(request, ctx),
    listProjects: (request, ctx) => handlers.listProjects(request, ctx),
    updateProject: (request, ctx) => handlers.updateProject(request, ctx),
    deleteProject: (request, ctx) => handlers.deleteProject(request, ctx),
  });
  const bound = await server.listen(`127.0.0.1:${port}`);
  return { server, address: `127.0.0.1:${bound}`, handlers, logs: lines };
}

/**
 * A TCP relay to `target` that counts the connections made through it. freeze() stops forwarding on the
 * connections open so far without closing them, as a peer lost without a reset looks; new ones work.
 */
export async function countingRelay(
  target: number,
): Promise<{ port: number; connections: () => number; freeze(): void; close(): void }> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const relay: Server = createServer((inbound) => {
    connections += 1;
    const outbound = connect(target, '127.0.0.1');
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => sockets.delete(socket));
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const address = relay.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    connections: () => connections,
    freeze: () => {
      for (const socket of sockets) {
        socket.unpipe();
        socket.pause();
      }
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      relay.close();
    },
  };
}
