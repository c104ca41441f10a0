/**
 * An exact sum of checked decimal texts (`values.ts` decimalProblem: sign, digits, a point, an
 * exponent), the way Postgres sums `numeric`: no rounding at all, and the result's scale is the largest
 * scale of the values added (`1.50` has scale 2, `1.5e-3` scale 4, `15e1` scale 0), so the text is
 * the one `sum(numeric)` prints. Never floats: a value of up to 15 significant digits is added to a
 * number of its scale, which stays an exact integer (flushed into a bigint long before 2^53); longer
 * values and exponents go to the bigint directly.
 */
export class DecimalSum {
  /** The flushed sum, in units of 10^-scale. */
  private total = 0n;
  private scale = 0;
  /** Per scale, a sum of small mantissas, an exact integer below `flushAbove`. */
  private readonly pending: number[] = [];

  /** Adds a checked decimal text (decimalProblem answered undefined for it). */
  add(value: string): void {
    let start = 0;
    let negative = false;
    const first = value.charCodeAt(0);
    if (first === 43 /* + */ || first === 45 /* - */) {
      negative = first === 45;
      start = 1;
    }
    let end = value.length;
    let exponent = 0;
    const e = value.search(/[eE]/);
    if (e >= 0) {
      exponent = Number(value.slice(e + 1));
      end = e;
    }
    const point = value.indexOf('.', start);
    const whole = point >= 0 && point < end ? value.slice(start, point) : value.slice(start, end);
    const fraction = point >= 0 && point < end ? value.slice(point + 1, end) : '';
    const digits = whole + fraction;
    if (exponent === 0 && digits.length <= 15) {
      const mantissa = Number(digits);
      if (mantissa === 0) {
        this.widen(fraction.length);
        return;
      }
      const scale = fraction.length;
      const sum = (this.pending[scale] ?? 0) + (negative ? -mantissa : mantissa);
      if (Math.abs(sum) >= flushAbove) {
        this.pending[scale] = 0;
        this.addScaled(BigInt(sum), scale);
      } else {
        this.pending[scale] = sum;
      }
      if (scale > this.scale) this.widen(scale);
      return;
    }
    // 1.5e-3 is 15 at scale 4; 1.5e3 is 1500 at scale 0.
    const scale = Math.max(0, fraction.length - exponent);
    const zeros = Math.max(0, exponent - fraction.length);
    let mantissa = BigInt(digits === '' ? '0' : digits) * 10n ** BigInt(zeros);
    if (negative) mantissa = -mantissa;
    this.addScaled(mantissa, scale);
  }

  /** The sum as Postgres prints `sum(numeric)`: `-12.3400`, `0.000`, `7`. */
  toString(): string {
    this.flush();
    const negative = this.total < 0n;
    const digits = (negative ? -this.total : this.total).toString().padStart(this.scale + 1, '0');
    const whole = digits.slice(0, digits.length - this.scale);
    const fraction = digits.slice(digits.length - this.scale);
    return `${negative ? '-' : ''}${whole}${this.scale > 0 ? `.${fraction}` : ''}`;
  }

  private flush(): void {
    for (let scale = 0; scale < this.pending.length; scale++) {
      const sum = this.pending[scale];
      if (sum) this.addScaled(BigInt(sum), scale);
      this.pending[scale] = 0;
    }
  }

  private widen(scale: number): void {
    if (scale <= this.scale) return;
    this.total *= 10n ** BigInt(scale - this.scale);
    this.scale = scale;
  }

  private addScaled(mantissa: bigint, scale: number): void {
    this.widen(scale);
    this.total += mantissa * 10n ** BigInt(this.scale - scale);
  }
}

/** Small mantissas are below 10^15; their sum is flushed before it could pass 2^53. */
const flushAbove = 2 ** 53 - 10 ** 15;
