import { Option, type Command } from 'commander';
import { wholeNumber } from '../arguments';
import type { components } from '@costgov/client';
import { answer, guardClient, withApiOptions, type ApiOptions } from '../api';
import { time, type Field } from '../output';
import type { Act } from '../program';
import { connectionView, type ConnectionView } from '../views';

type Provider = components['schemas']['ConnectionProvider'];
type Status = components['schemas']['ConnectionStatus'];

const providers: Provider[] = ['aws', 'azure', 'gcp', 'oci', 'other'];
const statuses: Status[] = ['active', 'disabled'];

const connectionFields: readonly Field<ConnectionView>[] = [
  ['id', (c) => c.id],
  ['name', (c) => c.name],
  ['provider', (c) => c.provider],
  ['status', (c) => c.status],
  ['last ingested', (c) => time(c.lastIngestedAt, 'never')],
  ['created', (c) => time(c.createdAt)],
  ['updated', (c) => time(c.updatedAt)],
];

const connectionColumns: readonly Field<ConnectionView>[] = [
  ['id', (c) => c.id],
  ['name', (c) => c.name],
  ['provider', (c) => c.provider],
  ['status', (c) => c.status],
  ['last ingested', (c) => time(c.lastIngestedAt, 'never')],
];

interface ListOptions extends ApiOptions {
  provider?: Provider;
  status?: Status;
  page: number;
  perPage: number;
}

/** `costgov connections …`: the team's connections through the REST API, with the team's API key. */
export function registerConnections(
  program: Command,
  act: Act,
  env: Record<string, string | undefined>,
): void {
  const connections = program
    .command('connections')
    .description("create, list, show, update and delete the API key's team's connections (REST API)");
  const api = (name: string) => withApiOptions(connections.command(name), env);

  api('list')
    .description('list connections, newest first')
    .addOption(new Option('--provider <provider>', 'only this provider').choices(providers))
    .addOption(new Option('--status <status>', 'only this status').choices(statuses))
    .addOption(new Option('--page <n>', 'page to show').argParser(wholeNumber(1_000_000)).default(1))
    .addOption(
      new Option('--per-page <n>', 'connections per page, 1..100').argParser(wholeNumber(100)).default(100),
    )
    .action(
      act(async ({ output }, options: ListOptions) => {
        const reply = await answer(
          guardClient(options).GET('/v1/guard/connections', {
            params: {
              query: {
                page: options.page,
                per_page: options.perPage,
                provider: options.provider,
                status: options.status,
              },
            },
          }),
        );
        output.list(reply.data.map(connectionView), connectionColumns, (c) => c.id, 'No connections.');
        const meta = reply.meta;
        if (meta && meta.current_page < meta.total_pages)
          output.note(
            `page ${meta.current_page} of ${meta.total_pages} (${meta.total_count} connections); --page ${meta.current_page + 1} for more`,
          );
      }),
    );

  api('create')
    .description('create a connection for one cloud account')
    .argument('<name>', 'unique within the team, e.g. aws-prod-payer')
    .addOption(new Option('--provider <provider>', 'cloud provider').choices(providers).makeOptionMandatory())
    .action(
      act(async ({ output }, name: string, options: ApiOptions & { provider: Provider }) => {
        const reply = await answer(
          guardClient(options).POST('/v1/guard/connections', { body: { name, provider: options.provider } }),
        );
        output.show(connectionView(reply.data), connectionFields, (c) => c.id);
      }),
    );

  api('get')
    .description('show one connection')
    .argument('<connection-id>')
    .action(
      act(async ({ output }, id: string, options: ApiOptions) => {
        const reply = await answer(
          guardClient(options).GET('/v1/guard/connections/{id}', { params: { path: { id } } }),
        );
        output.show(connectionView(reply.data), connectionFields, (c) => c.id);
      }),
    );

  api('update')
    .description('rename a connection or change its status')
    .argument('<connection-id>')
    .option('--name <name>', 'new name')
    .addOption(new Option('--status <status>', 'active, or disabled to refuse uploads').choices(statuses))
    .action(
      act(
        async (
          { output },
          id: string,
          options: ApiOptions & { name?: string; status?: Status },
          command: Command,
        ) => {
          if (options.name === undefined && options.status === undefined)
            command.error('error: give at least one of --name, --status', {
              exitCode: 2,
              code: 'costgov.noChange',
            });
          const reply = await answer(
            guardClient(options).PATCH('/v1/guard/connections/{id}', {
              params: { path: { id } },
              body: { name: options.name, status: options.status },
            }),
          );
          output.show(connectionView(reply.data), connectionFields, (c) => c.id);
        },
      ),
    );

  api('delete')
    .description('delete a connection and all cost data stored through it')
    .argument('<connection-id>')
    .action(
      act(async ({ output }, id: string, options: ApiOptions) => {
        await answer(guardClient(options).DELETE('/v1/guard/connections/{id}', { params: { path: { id } } }));
        output.done(`Deleted connection ${id} and its cost data.`, id, { deleted: id });
      }),
    );
}
