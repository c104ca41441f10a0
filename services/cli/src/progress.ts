import { SingleBar } from 'cli-progress';
import type { Writer } from './output';

/** Bytes of one file sent so far; told of every chunk, and once at the end. */
export interface Progress {
  advance(bytes: number): void;
  finish(): void;
}

const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** 1536 → `1.5 KiB`. */
export function bytesText(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

const rateText = (bytes: number, ms: number) => `${bytesText(ms > 0 ? (bytes * 1000) / ms : 0)}/s`;

/**
 * The progress of one upload on stderr. On a terminal, a bar redrawn in place (cli-progress: bytes sent
 * of the total, percentage, rate); elsewhere (a pipe, a CI log) one plain line per tenth sent, which a
 * log keeps readable where a redrawn bar would be a wall of carriage returns.
 */
export function progressOf(
  stderr: Writer & { isTTY?: boolean },
  file: string,
  totalBytes: number,
  now: () => number = Date.now,
): Progress {
  const started = now();
  let sent = 0;
  if (stderr.isTTY === true) {
    const bar = new SingleBar({
      stream: stderr as NodeJS.WritableStream,
      format: `${file} [{bar}] {percentage}% | {sentText} of {totalText} | {rate}`,
      hideCursor: true,
      clearOnComplete: false,
      barsize: 30,
      etaBuffer: 50,
    });
    const payload = () => ({
      sentText: bytesText(sent),
      totalText: bytesText(totalBytes),
      rate: rateText(sent, now() - started),
    });
    bar.start(Math.max(totalBytes, 1), 0, payload());
    return {
      advance(bytes) {
        sent += bytes;
        bar.update(Math.min(sent, Math.max(totalBytes, 1)), payload());
      },
      finish() {
        bar.update(Math.max(totalBytes, 1), payload());
        bar.stop();
      },
    };
  }
  let tenths = 0;
  stderr.write(`${file}: sending ${bytesText(totalBytes)}\n`);
  return {
    advance(bytes) {
      sent += bytes;
      const reached = totalBytes > 0 ? Math.floor((sent * 10) / totalBytes) : 10;
      if (reached > tenths && reached < 10) {
        tenths = reached;
        stderr.write(
          `${file}: ${tenths * 10}% sent (${bytesText(sent)} of ${bytesText(totalBytes)}, ${rateText(sent, now() - started)})\n`,
        );
      }
    },
    finish() {
      stderr.write(
        `${file}: sent ${bytesText(sent)} in ${((now() - started) / 1000).toFixed(1)} s (${rateText(sent, now() - started)}); waiting for the summary\n`,
      );
    },
  };
}
