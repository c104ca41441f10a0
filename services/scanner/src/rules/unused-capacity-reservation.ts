import { defineRule } from './define';
import { coveredDays, money, perMonth, projectedDays, spanText } from './window';

/** Reserved capacity (FOCUS 1.1 CapacityReservationStatus Unused) billed while nothing ran in it. */
export const unusedCapacityReservation = defineRule({
  id: 'commitments-unused-capacity-reservation',
  severity: 'medium',
  category: 'commitments',
  title: 'Unused capacity reservation',
  description: 'A capacity reservation was billed for capacity no instance used.',
  recommendation: 'Cancel the reservation, shrink it to what runs, or launch the planned instances into it.',
  needs: 'CapacityReservationStatus (FOCUS 1.1+) rows marked Unused; any number of days.',
  savings: "The unused rows' cost per covered day (first to last seen of the reservation) times 30.44.",
  neverFlags: 'Reservations whose capacity was used; files without the capacity reservation columns.',
  resources(data, { currency }) {
    return data.resources.flatMap((resource) => {
      const unusedRow = resource.capacityReservationStatus === 'Unused';
      if (resource.unusedCapacityReservationCost <= 0 && !unusedRow) return [];
      const reservation = resource.capacityReservationId || resource.resourceId;
      const days = coveredDays(resource);
      const savings = money(perMonth(resource.unusedCapacityReservationCost, days));
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resource.resourceType || 'capacity-reservation',
          severity: this.severity,
          title: this.title,
          description: `Capacity reservation ${reservation} was billed ${money(resource.unusedCapacityReservationCost)} ${currency} for unused capacity over ${spanText(resource)}.`,
          recommendation: `Cancel or shrink ${reservation}: ${savings} ${currency} a month.`,
          estimatedMonthlySavings: savings,
          projectedFromDays: projectedDays(days),
          currency,
        },
      ];
    });
  },
});
