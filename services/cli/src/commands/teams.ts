import { InvalidArgumentError, Option, type Command } from 'commander';
import { wholeNumber } from '../arguments';
import { time, type Field } from '../output';
import { defaultCostsAddress, type Act } from '../program';
import { teamView, type LimitsView, type TeamView } from '../views';

const limits = ({ requestsPerMinute, concurrentRequests }: LimitsView) =>
  `${requestsPerMinute} requests/min, ${concurrentRequests} in flight`;

export const teamFields: readonly Field<TeamView>[] = [
  ['id', (team) => team.id],
  ['name', (team) => team.name],
  ['plan', (team) => team.plan],
  ['default role', (team) => team.defaultRole],
  ['scan credits', (team) => String(team.scanCredits)],
  ['api limits', (team) => limits(team.apiLimits)],
  ['scim limits', (team) => limits(team.scimLimits)],
  ['created', (team) => time(team.createdAt)],
];

const teamColumns: readonly Field<TeamView>[] = [
  ['id', (team) => team.id],
  ['name', (team) => team.name],
  ['plan', (team) => team.plan],
  ['credits', (team) => String(team.scanCredits)],
  ['created', (team) => time(team.createdAt)],
];

interface TeamSettingsView {
  teamId: string;
  requiredTags: string[];
}

const settingsFields: readonly Field<TeamSettingsView>[] = [
  ['team', (settings) => settings.teamId],
  ['required tags', (settings) => settings.requiredTags.join(', ') || '-'],
];

interface AnomalyImpactView {
  teamId: string;
  /** null: the scanner's default (ANOMALY_MIN_DAILY_IMPACT, 50 USD in the data's currency). */
  anomalyMinDailyImpact: number | null;
}

const anomalyImpactFields: readonly Field<AnomalyImpactView>[] = [
  ['team', (settings) => settings.teamId],
  [
    'anomaly min daily impact',
    (settings) =>
      settings.anomalyMinDailyImpact === null ? 'scanner default' : String(settings.anomalyMinDailyImpact),
  ],
];

interface RawRetentionView {
  teamId: string;
  /** null: raw rows are kept forever. */
  rawRetentionMonths: number | null;
}

const rawRetentionFields: readonly Field<RawRetentionView>[] = [
  ['team', (settings) => settings.teamId],
  [
    'raw retention',
    (settings) =>
      settings.rawRetentionMonths === null ? 'forever' : `${settings.rawRetentionMonths} months`,
  ],
];

/** Whole months from 1 to 1200 (a hundred years). */
function months(text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1 || value > 1200)
    throw new InvalidArgumentError('Expected a whole number of months from 1 to 1200.');
  return value;
}

/** An amount of money from 0, as the data's currency writes it (e.g. 50 or 12.5). */
function amount(text: string): number {
  const value = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !Number.isFinite(value))
    throw new InvalidArgumentError('Expected an amount from 0, like 50 or 12.5.');
  return value;
}

/** The proto's RequestLimits are int32. */
const limit = wholeNumber(2 ** 31 - 1);

interface LimitOptions {
  apiRpm?: number;
  apiConcurrency?: number;
  scimRpm?: number;
  scimConcurrency?: number;
}

export function registerTeams(program: Command, act: Act): void {
  const teams = program.command('teams').description('create, list and configure teams');

  teams
    .command('create')
    .description('create a team')
    .argument('<name>', 'unique name of the team')
    .option('--plan <plan>', 'free, team or enterprise', 'team')
    .action(
      act(async ({ identity, output }, name: string, options: { plan: string }) => {
        const team = teamView(await identity.createTeam({ name, plan: options.plan }));
        output.show(team, teamFields, (t) => t.id);
      }),
    );

  teams
    .command('list')
    .description('list all teams')
    .action(
      act(async ({ identity, output }) => {
        const { teams: list } = await identity.listTeams({});
        output.list(list.map(teamView), teamColumns, (t) => t.id, 'No teams.');
      }),
    );

  teams
    .command('show')
    .description('show a team, its plan, credits and request limits')
    .argument('<team-id>')
    .action(
      act(async ({ identity, output }, id: string) => {
        output.show(teamView(await identity.getTeam({ id })), teamFields, (t) => t.id);
      }),
    );

  teams
    .command('limits')
    .description(
      "set a team's request limits; options not given keep their current value, 0 restores the default",
    )
    .argument('<team-id>')
    .option('--api-rpm <n>', 'Guard API requests per minute per credential', limit)
    .option('--api-concurrency <n>', 'Guard API requests in flight per credential', limit)
    .option('--scim-rpm <n>', 'SCIM requests per minute per token', limit)
    .option('--scim-concurrency <n>', 'SCIM requests in flight per token', limit)
    .action(
      act(async ({ identity, output }, teamId: string, options: LimitOptions, command: Command) => {
        if (Object.values(options).every((value) => value === undefined)) {
          command.error(
            'error: give at least one of --api-rpm, --api-concurrency, --scim-rpm, --scim-concurrency',
            { exitCode: 2, code: 'costgov.noLimits' },
          );
        }
        // Limits not given are left as they are; 0 restores the platform default.
        const team = await identity.setTeamLimits({
          teamId,
          apiRequestsPerMinute: options.apiRpm,
          apiConcurrentRequests: options.apiConcurrency,
          scimRequestsPerMinute: options.scimRpm,
          scimConcurrentRequests: options.scimConcurrency,
        });
        output.show(teamView(team), teamFields, (t) => t.id);
      }),
    );

  teams
    .command('required-tags')
    .description(
      "show or set the tag keys a team's cost must carry (tag-coverage findings and posture); keys given replace the set; " +
        'keys match whatever their case and -, _ or spaces (CostCenter is cost-center)',
    )
    .argument('<team-id>')
    .argument('[keys...]', 'tag keys, e.g. env owner cost-center')
    .option('--clear', 'require no tag key')
    .action(
      act(
        async (
          { identity, output, forTeam },
          teamId: string,
          keys: string[],
          options: { clear?: boolean },
          command: Command,
        ) => {
          if (options.clear && keys.length > 0) {
            command.error('error: give tag keys or --clear, not both', {
              exitCode: 2,
              code: 'costgov.tagsAndClear',
            });
          }
          const context = await forTeam(teamId);
          // No keys and no --clear only shows the keys; the service checks each key given.
          const settings =
            keys.length > 0 || options.clear
              ? await identity.setRequiredTags({ requiredTags: keys }, context)
              : await identity.getTeamSettings({}, context);
          const view: TeamSettingsView = { teamId: settings.teamId, requiredTags: settings.requiredTags };
          output.show(view, settingsFields, (s) => s.requiredTags.join('\n'));
        },
      ),
    );

  teams
    .command('anomaly-impact')
    .description(
      "show or set the least rise of a day's usage-based spend over its baseline (in the currency of the team's cost data) that the scanner flags as an anomaly",
    )
    .argument('<team-id>')
    .argument('[amount]', 'e.g. 50 or 12.5', amount)
    .option('--clear', "use the scanner's default (ANOMALY_MIN_DAILY_IMPACT, 50 USD in the data's currency)")
    .action(
      act(
        async (
          { identity, output, forTeam },
          teamId: string,
          value: number | undefined,
          options: { clear?: boolean },
          command: Command,
        ) => {
          if (options.clear && value !== undefined) {
            command.error('error: give an amount or --clear, not both', {
              exitCode: 2,
              code: 'costgov.amountAndClear',
            });
          }
          const context = await forTeam(teamId);
          const settings =
            value !== undefined || options.clear
              ? await identity.setAnomalyMinDailyImpact({ anomalyMinDailyImpact: value }, context)
              : await identity.getTeamSettings({}, context);
          const view: AnomalyImpactView = {
            teamId: settings.teamId,
            anomalyMinDailyImpact: settings.anomalyMinDailyImpact ?? null,
          };
          output.show(view, anomalyImpactFields, (s) => String(s.anomalyMinDailyImpact ?? ''));
        },
      ),
    );
  teams
    .command('raw-retention')
    .description(
      "show or set how many months before the current one the team's raw cost rows are kept (older billing periods are dropped whole; the daily rollups that spend and budgets read are kept)",
    )
    .argument('<team-id>')
    .argument('[months]', 'e.g. 13', months)
    .option('--clear', 'keep raw rows forever (the default)')
    .addOption(
      new Option(
        '--costs <host:port>',
        `address of the costs service (env COSTS_ADDR, else ${defaultCostsAddress})`,
      ),
    )
    .action(
      act(
        async (
          { retention, output, forTeam },
          teamId: string,
          value: number | undefined,
          options: { clear?: boolean },
          command: Command,
        ) => {
          if (options.clear && value !== undefined) {
            command.error('error: give a number of months or --clear, not both', {
              exitCode: 2,
              code: 'costgov.monthsAndClear',
            });
          }
          const context = await forTeam(teamId);
          const settings =
            value !== undefined || options.clear
              ? await retention().setRawRetention({ rawRetentionMonths: value }, context)
              : await retention().getRawRetention({}, context);
          const view: RawRetentionView = {
            teamId: settings.teamId,
            rawRetentionMonths: settings.rawRetentionMonths ?? null,
          };
          output.show(view, rawRetentionFields, (s) => String(s.rawRetentionMonths ?? ''));
        },
      ),
    );
}
