import type { Command } from 'commander';
import { time, type Field } from '../output';
import type { Act } from '../program';
import { scimTokenView, type ScimTokenView } from '../views';

const tokenFields: readonly Field<ScimTokenView>[] = [
  ['id', (token) => token.id],
  ['team', (token) => token.teamId],
  ['name', (token) => token.name],
  ['prefix', (token) => token.prefix],
  ['status', (token) => token.status],
  ['created', (token) => time(token.createdAt)],
  ['last used', (token) => time(token.lastUsedAt, 'never')],
  ['revoked', (token) => time(token.revokedAt)],
];

const tokenColumns: readonly Field<ScimTokenView>[] = [
  ['id', (token) => token.id],
  ['name', (token) => token.name],
  ['prefix', (token) => token.prefix],
  ['status', (token) => token.status],
  ['created', (token) => time(token.createdAt)],
  ['last used', (token) => time(token.lastUsedAt, 'never')],
];

export function registerScimTokens(program: Command, act: Act): void {
  const tokens = program
    .command('scim-tokens')
    .description("create, list and revoke a team's SCIM provisioning tokens");

  tokens
    .command('create')
    .description('create a SCIM token for an identity provider; its secret is printed this once')
    .requiredOption('--team <team-id>', 'team the token provisions')
    .option('--name <name>', 'which identity provider uses it', 'scim')
    .action(
      act(async ({ identity, output, now, forTeam }, options: { team: string; name: string }) => {
        const created = await identity.createScimToken({ name: options.name }, await forTeam(options.team));
        const token = scimTokenView(created.token!, now());
        output.secret(token, tokenFields, created.secret, {
          noun: 'SCIM token',
          asJson: { token, secret: created.secret },
        });
      }),
    );

  tokens
    .command('list')
    .description("list a team's SCIM tokens (never their secrets)")
    .requiredOption('--team <team-id>')
    .action(
      act(async ({ identity, output, now, forTeam }, options: { team: string }) => {
        const { tokens: list } = await identity.listScimTokens({}, await forTeam(options.team));
        const views = list.map((token) => scimTokenView(token, now()));
        output.list(views, tokenColumns, (token) => token.id, `No SCIM tokens in team ${options.team}.`);
      }),
    );

  tokens
    .command('revoke')
    .description('revoke a SCIM token at once')
    .requiredOption('--team <team-id>')
    .argument('<token-id>')
    .action(
      act(async ({ identity, output, now, forTeam }, id: string, options: { team: string }) => {
        const token = await identity.revokeScimToken({ id }, await forTeam(options.team));
        output.show(scimTokenView(token, now()), tokenFields, (t) => t.id);
      }),
    );
}
