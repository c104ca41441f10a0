import { BadRequestError } from '@costgov/errors';
import type { CallContext } from './context';

/** The context of a call that names its team (x-team-id), as a team-scoped handler receives it. */
export type TeamCallContext = CallContext & { teamId: string };

/**
 * A handler of a team's data: a call without a team is refused (400) before it runs. The handler gets
 * the call's own context, narrowed, so what it sets there (`replayed`) reaches the server.
 */
export function teamScoped<Request, Response>(
  handler: (request: Request, ctx: TeamCallContext) => Promise<Response>,
): (request: Request, ctx: CallContext) => Promise<Response> {
  return async (request, ctx) => {
    if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
    return handler(request, ctx as TeamCallContext);
  };
}
