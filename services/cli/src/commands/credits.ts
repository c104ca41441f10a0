import type { Command } from 'commander';
import { wholeNumber } from '../arguments';
import type { Act } from '../program';
import { teamView } from '../views';
import { teamFields } from './teams';

export function registerCredits(program: Command, act: Act): void {
  const credits = program.command('credits').description("manage a team's scan credits");

  credits
    .command('grant')
    .description("add scan credits to a team's balance")
    .requiredOption('--team <team-id>')
    .argument('<credits>', 'how many credits to add', wholeNumber(Number.MAX_SAFE_INTEGER))
    .action(
      act(async ({ identity, output }, amount: number, options: { team: string }) => {
        const team = await identity.grantScanCredits({ teamId: options.team, credits: BigInt(amount) });
        // Quiet prints the new balance: the value a script granting credits wants back.
        output.show(teamView(team), teamFields, (t) => String(t.scanCredits));
      }),
    );
}
