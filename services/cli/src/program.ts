import { Command, CommanderError, Option } from 'commander';
import { costs, identity } from '@costgov/contracts';
import { DomainError } from '@costgov/errors';
import { createRpcClient, type CallContext, type RpcClient } from '@costgov/rpc';
import { version } from '../package.json';
import { registerCheck } from './commands/check';
import { registerConnections } from './commands/connections';
import { registerCredits } from './commands/credits';
import { registerIngest } from './commands/ingest';
import { registerKeys } from './commands/keys';
import { registerRates } from './commands/rates';
import { registerScimTokens } from './commands/scim-tokens';
import { registerTeams } from './commands/teams';
import { createOutput, type Io, type Output, type OutputMode } from './output';

export type IdentityClient = RpcClient<typeof identity.IdentityService>;
export type RatesClient = RpcClient<typeof costs.RatesService>;
export type RetentionClient = RpcClient<typeof costs.RetentionService>;

/** What an action works with: the identity service, where to print, and the clock. */
export interface Session {
  identity: IdentityClient;
  /** The costs service's exchange rates, at `--costs`; connected on first use. */
  rates(): RatesClient;
  /** The costs service's retention of raw rows per team, at `--costs`; connected on first use. */
  retention(): RetentionClient;
  output: Output;
  now: () => Date;
  /** Ends the run with this exit code once the action returns (a gate's verdict), rather than 0. */
  exitWith(code: number): void;
  /**
   * The call context of a team-scoped call, once the team is known to exist: the service answers an
   * unknown team with an empty list, or an internal error on create, rather than "not found".
   */
  forTeam(teamId: string): Promise<CallContext>;
}

/** Wraps an action so it receives a Session before what commander passes: arguments, options, the command. */
export type Act = <A extends unknown[]>(
  action: (session: Session, ...args: A) => Promise<void>,
) => (...args: unknown[]) => Promise<void>;

/** Exit codes: what a script branches on. */
export const exitCodes = { ok: 0, refused: 1, usage: 2, unreachable: 3 } as const;

export const defaultIdentityAddress = '127.0.0.1:50051';
export const defaultCostsAddress = '127.0.0.1:50054';

interface GlobalOptions {
  identity: string;
  /** Set on the commands that talk to the costs service (rates, teams raw-retention). */
  costs?: string;
  json?: boolean;
  quiet?: boolean;
}

/** gRPC's DEADLINE_EXCEEDED, as the transport error behind an UnavailableError reports it. */
const deadlineExceeded = 4;

/**
 * Runs the CLI on `argv` (without node and the script) and resolves to its exit code. Usage errors
 * are commander's (message and usage text); a refusal of the service prints its message and field
 * violations; an unreachable service says how to start it. Nothing here exits the process.
 */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  // The service a failure to connect is reported about: identity, unless the action asked costs.
  let exitCode: number = exitCodes.ok;
  let target = {
    service: 'identity',
    address: io.env.IDENTITY_ADDR || defaultIdentityAddress,
    env: 'IDENTITY_ADDR',
  };

  function act<A extends unknown[]>(action: (session: Session, ...args: A) => Promise<void>) {
    return async (...args: unknown[]) => {
      const command = args.at(-1) as Command;
      const globals = command.optsWithGlobals<GlobalOptions>();
      target = { service: 'identity', address: globals.identity, env: 'IDENTITY_ADDR' };
      const mode: OutputMode = globals.json ? 'json' : globals.quiet ? 'quiet' : 'human';
      // Created on first use, inside the action: an address gRPC cannot parse is then the failure of the
      // command that needs the service, and `check` (REST only) never meets it.
      const identityAddress = target.address;
      let identityClient: IdentityClient | undefined;
      const client = () => (identityClient ??= createRpcClient(identity.IdentityService, identityAddress));
      let ratesClient: RatesClient | undefined;
      let retentionClient: RetentionClient | undefined;
      const costsAddress = () => {
        const address = globals.costs ?? (io.env.COSTS_ADDR || defaultCostsAddress);
        target = { service: 'costs', address, env: 'COSTS_ADDR' };
        return address;
      };
      try {
        const session: Session = {
          get identity() {
            return client();
          },
          rates: () => (ratesClient ??= createRpcClient(costs.RatesService, costsAddress())),
          retention: () => (retentionClient ??= createRpcClient(costs.RetentionService, costsAddress())),
          output: createOutput(io, mode),
          now: () => new Date(),
          exitWith: (code) => {
            exitCode = code;
          },
          forTeam: async (teamId) => {
            await client().getTeam({ id: teamId });
            return { teamId };
          },
        };
        await action(session, ...(args as A));
      } finally {
        identityClient?.close();
        ratesClient?.close();
        retentionClient?.close();
      }
    };
  }

  try {
    await buildProgram(io, act).parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (error) {
    return reportFailure(error, io, target);
  }
}

function buildProgram(io: Io, act: Act): Command {
  const program = new Command('costgov')
    .description(
      'Operate a costgov installation: teams, API keys, SCIM tokens, scan credits and exchange rates; manage connections, upload cost data (ingest) and gate a pipeline on a project (check) through the REST API.',
    )
    .version(version)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .showHelpAfterError()
    .configureHelp({ showGlobalOptions: true })
    .addOption(
      new Option('--identity <host:port>', 'address of the identity service (env IDENTITY_ADDR)').default(
        io.env.IDENTITY_ADDR || defaultIdentityAddress,
      ),
    )
    .addOption(new Option('--json', 'print JSON instead of text').conflicts('quiet'))
    .addOption(
      new Option(
        '-q, --quiet',
        'print only the value a script needs: ids, a new secret, a credit balance',
      ).conflicts('json'),
    );
  // Subcommands copy the settings above (exit override, output, help) when they are created.
  registerTeams(program, act);
  registerKeys(program, act);
  registerScimTokens(program, act);
  registerCredits(program, act);
  registerConnections(program, act, io.env);
  registerIngest(program, act, io);
  registerRates(program, act, io.env);
  registerCheck(program, act, io);
  return program;
}

function reportFailure(
  error: unknown,
  io: Io,
  { service, address, env }: { service: string; address: string; env: string },
): number {
  // Commander has printed its message and the usage text already; --help and --version end here too.
  if (error instanceof CommanderError) return error.exitCode === 0 ? exitCodes.ok : exitCodes.usage;

  if (error instanceof DomainError && error.code === 'service_unavailable') {
    const transportCode = (error.cause as { code?: unknown } | undefined)?.code;
    const message =
      transportCode === undefined
        ? error.message
        : transportCode === deadlineExceeded
          ? `the ${service} service at ${address} did not answer in time; is it overloaded or stuck?`
          : `cannot reach the ${service} service at ${address}; is it running? (npm start, or set ${env})`;
    io.stderr.write(`error: ${message}\n`);
    return exitCodes.unreachable;
  }

  if (error instanceof DomainError) {
    const details = error.details.map(({ field, message }) => `  ${field}: ${message}\n`).join('');
    io.stderr.write(`error: ${error.message}\n${details}`);
    return exitCodes.refused;
  }

  io.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  return exitCodes.refused;
}
