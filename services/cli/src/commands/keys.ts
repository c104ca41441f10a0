import { Option, type Command } from 'commander';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { commaList, duration, instant } from '../arguments';
import { time, type Field } from '../output';
import type { Act } from '../program';
import { apiKeyView, type ApiKeyView } from '../views';

const keyFields: readonly Field<ApiKeyView>[] = [
  ['id', (key) => key.id],
  ['team', (key) => key.teamId],
  ['name', (key) => key.name],
  ['scopes', (key) => key.scopes.join(', ')],
  ['prefix', (key) => key.prefix],
  ['status', (key) => key.status],
  ['created', (key) => time(key.createdAt)],
  ['expires', (key) => time(key.expiresAt, 'never')],
  ['last used', (key) => time(key.lastUsedAt, 'never')],
  ['revoked', (key) => time(key.revokedAt)],
];

const keyColumns: readonly Field<ApiKeyView>[] = [
  ['id', (key) => key.id],
  ['name', (key) => key.name],
  ['prefix', (key) => key.prefix],
  ['scopes', (key) => key.scopes.join(',')],
  ['status', (key) => key.status],
  ['expires', (key) => time(key.expiresAt, 'never')],
  ['last used', (key) => time(key.lastUsedAt, 'never')],
];

interface CreateOptions {
  team: string;
  name: string;
  scopes: string[];
  expiresIn?: number;
  expiresAt?: Date;
}

export function registerKeys(program: Command, act: Act): void {
  const keys = program.command('keys').description("create, list and revoke a team's API keys");

  keys
    .command('create')
    .description('create an API key; its secret is printed this once')
    .requiredOption('--team <team-id>', 'team the key belongs to')
    .requiredOption('--name <name>', 'what the key is for, e.g. ci-pipeline')
    .addOption(
      new Option('--scopes <scopes>', 'comma-separated: guard:read, guard:write, scans:write')
        .argParser(commaList)
        .default(['guard:read', 'guard:write'], 'guard:read,guard:write'),
    )
    .addOption(
      new Option('--expires-in <duration>', 'expire after 90m, 12h, 30d, …')
        .argParser(duration)
        .conflicts('expiresAt'),
    )
    .addOption(new Option('--expires-at <iso>', 'expire at this ISO 8601 date-time').argParser(instant))
    .action(
      act(async ({ identity, output, now, forTeam }, options: CreateOptions) => {
        const expiresAt =
          options.expiresIn !== undefined ? new Date(now().getTime() + options.expiresIn) : options.expiresAt;
        const created = await identity.createApiKey(
          {
            name: options.name,
            scopes: options.scopes,
            expiresAt: expiresAt && timestampFromDate(expiresAt),
          },
          await forTeam(options.team),
        );
        const key = apiKeyView(created.key!, now());
        output.secret(key, keyFields, created.secret, {
          noun: 'API key',
          asJson: { key, secret: created.secret },
        });
      }),
    );

  keys
    .command('list')
    .description("list a team's API keys (never their secrets)")
    .requiredOption('--team <team-id>')
    .action(
      act(async ({ identity, output, now, forTeam }, options: { team: string }) => {
        const { keys: list } = await identity.listApiKeys({}, await forTeam(options.team));
        const views = list.map((key) => apiKeyView(key, now()));
        output.list(views, keyColumns, (key) => key.id, `No API keys in team ${options.team}.`);
      }),
    );

  keys
    .command('revoke')
    .description('revoke an API key at once, on every gateway')
    .requiredOption('--team <team-id>')
    .argument('<key-id>')
    .action(
      act(async ({ identity, output, now, forTeam }, id: string, options: { team: string }) => {
        const key = await identity.revokeApiKey({ id }, await forTeam(options.team));
        output.show(apiKeyView(key, now()), keyFields, (k) => k.id);
      }),
    );
}
