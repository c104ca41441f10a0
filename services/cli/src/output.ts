/** Where a run writes: process.stdout and process.stderr, or buffers in a test. */
export interface Writer {
  write(text: string): unknown;
}

export interface Io {
  stdout: Writer;
  stderr: Writer;
  env: Record<string, string | undefined>;
}

/**
 * human: `label: value` lines and aligned tables; json: the resource's view as JSON; quiet: only the
 * value a script wants (an id, a secret), one per line.
 */
export type OutputMode = 'human' | 'json' | 'quiet';

/** One labelled value of a resource, as a person reads it. */
export type Field<T> = readonly [label: string, value: (item: T) => string];

/** An ISO timestamp to the second, or `absent` when there is none. */
export const time = (iso: string | null, absent = '-'): string =>
  iso === null ? absent : iso.replace(/\.\d{3}Z$/, 'Z');

export function keyValueLines(pairs: readonly (readonly [string, string])[]): string {
  const width = Math.max(...pairs.map(([label]) => label.length)) + 2;
  return pairs.map(([label, value]) => `${`${label}:`.padEnd(width)}${value}\n`).join('');
}

export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) =>
    `${cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')}\n`;
  return [header, ...rows].map(line).join('');
}

export function createOutput(io: Io, mode: OutputMode) {
  const json = (value: unknown) => io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

  /** One resource. */
  function show<T>(item: T, fields: readonly Field<T>[], quiet: (item: T) => string): void {
    if (mode === 'json') json(item);
    else if (mode === 'quiet') io.stdout.write(`${quiet(item)}\n`);
    else io.stdout.write(keyValueLines(fields.map(([label, value]) => [label, value(item)])));
  }

  /** Several resources: a table for people, `empty` when there are none. */
  function list<T>(
    items: readonly T[],
    columns: readonly Field<T>[],
    quiet: (item: T) => string,
    empty: string,
  ): void {
    if (mode === 'json') json(items);
    else if (mode === 'quiet') io.stdout.write(items.map((item) => `${quiet(item)}\n`).join(''));
    else if (items.length === 0) io.stdout.write(`${empty}\n`);
    else
      io.stdout.write(
        table(
          columns.map(([label]) => label.toUpperCase()),
          items.map((item) => columns.map(([, value]) => value(item))),
        ),
      );
  }

  /**
   * A credential just created, with its secret. The secret goes to stdout (alone when quiet, so
   * `KEY=$(costgov keys create … --quiet)` captures it); the warning that it is shown only now goes
   * to stderr in every mode.
   */
  function secret<T>(
    item: T,
    fields: readonly Field<T>[],
    value: string,
    { noun, asJson }: { noun: string; asJson: unknown },
  ): void {
    if (mode === 'json') json(asJson);
    else if (mode === 'quiet') io.stdout.write(`${value}\n`);
    else
      io.stdout.write(
        keyValueLines([...fields.map(([label, get]) => [label, get(item)] as const), ['secret', value]]),
      );
    io.stderr.write(`Store this ${noun} now: it will not be shown again.\n`);
  }

  /** An action with nothing to show (a deletion): a sentence for people, `quiet` alone, or `asJson`. */
  function done(sentence: string, quiet: string, asJson: unknown): void {
    if (mode === 'json') json(asJson);
    else if (mode === 'quiet') io.stdout.write(`${quiet}\n`);
    else io.stdout.write(`${sentence}\n`);
  }

  /** A hint for people (e.g. that more pages exist), on stderr so it never mixes with the data. */
  function note(text: string): void {
    if (mode === 'human') io.stderr.write(`${text}\n`);
  }

  return { show, list, secret, done, note };
}

export type Output = ReturnType<typeof createOutput>;
